import { defineConfig } from 'vitest/config';

// Three projects: `unit` (pure code and the emulator over loopback HTTP), `integration` (needs a
// real kube-apiserver, started once in the global setup), and `demo`: `npm run demo` on the real
// node, which `npm test` runs after the other two (its posttest), once their cluster has let the
// machine's one real node go.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/globalSetup.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'demo',
          include: ['test/demo/**/*.test.ts'],
          environment: 'node',
          testTimeout: 600_000,
        },
      },
    ],
  },
});
