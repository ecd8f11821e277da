#!/usr/bin/env node
// Entry point: `k8s-listener <command>`. Each command lives in its own module, loaded on demand.
import { terminalLine } from '../report/terminalText.ts';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './exitCodes.ts';

const USAGE = `Usage: k8s-listener <command> [options]

Commands:
  run        run the agent (registers, polls, applies, prunes, reports)
  status     where each deployment stands (exit 0 deployed, 1 failed, 3 rolling out)
  check      preflight: configuration, control plane, listener, namespaces, permissions, version
  diff       what run would change: a unified diff per object (dry-run apply), and the prunes
  render     print the Kubernetes objects of one deployment as YAML
  suspend    take a deployment (or --all) out of the agent's hands: neither applied nor pruned
  resume     give a suspended deployment (or --all) back to the agent
  emulator   run the control-plane emulator
  version    print the version

Run \`k8s-listener <command> --help\` for a command's options.
`;

type Command = (argv: readonly string[]) => Promise<number>;

const commands: Record<string, () => Promise<Command>> = {
  run: async () => (await import('./run.ts')).runAgentCommand,
  status: async () => (await import('./status.ts')).runStatusCommand,
  check: async () => (await import('./check.ts')).runCheckCommand,
  diff: async () => (await import('./diff.ts')).runDiffCommand,
  render: async () => (await import('./render.ts')).runRenderCommand,
  suspend: async () => (await import('./suspend.ts')).runSuspendCommand,
  resume: async () => (await import('./suspend.ts')).runResumeCommand,
  emulator: async () => (await import('./emulator.ts')).runEmulatorCommand,
  version: async () => async () => {
    process.stdout.write(`${(await import('../version.ts')).AGENT_VERSION}\n`);
    return 0;
  },
};

const [name, ...rest] = process.argv.slice(2);
const load = name === undefined ? undefined : commands[name];
if (!load) {
  process.stderr.write(USAGE);
  process.exit(name === undefined || name === '--help' || name === '-h' ? EXIT_OK : EXIT_USAGE);
}
try {
  process.exitCode = await (await load())(rest);
} catch (error) {
  // Typed errors carry their own context and never a secret; print the message, not a stack. It may
  // quote a tenant's string: escaped, as every command prints one.
  process.stderr.write(
    terminalLine(`k8s-listener ${name}: ${error instanceof Error ? error.message : String(error)}`),
  );
  process.exitCode = EXIT_FAILED;
}
