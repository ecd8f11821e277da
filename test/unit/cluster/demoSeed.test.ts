import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { EmulatorState } from '../../../src/emulator/state.ts';
import { seedImages, seedWithImage } from '../../cluster/demoSeed.ts';

const seedPath = new URL('../../../src/emulator/fixtures/seed.json', import.meta.url).pathname;
const seed = EmulatorState.parse(JSON.parse(await readFile(seedPath, 'utf8')));
const LOCAL = '127.0.0.1:5000/k8s-listener-test/probe-app@sha256:0123';

describe('the demo seed on a real node', () => {
  it('names public images, in revisions, init containers and sidecars', () => {
    expect(seedImages(seed)).toEqual(['busybox:1.35', 'busybox:1.36', 'nginx:1.27']);
  });

  it('runs every container of it from the one local image, and stays a valid seed', () => {
    const local = seedWithImage(seed, LOCAL);
    expect(seedImages(local)).toEqual([LOCAL]);
    expect(EmulatorState.parse(local)).toEqual(local);
    // Nothing else changes: the same deployments, revisions, listeners.
    const withoutImages = (state: EmulatorState) =>
      JSON.parse(JSON.stringify(state).replaceAll(/"image(_uri)?":"[^"]*"/g, '"image$1":""'));
    expect(withoutImages(local)).toEqual(withoutImages(seed));
  });
});
