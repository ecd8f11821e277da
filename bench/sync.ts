// Sync benchmark: the real agent process applying N deployments to a fresh local cluster, against
// the floor (a bare loop of server-side applies at the agent's concurrency on one keep-alive pool),
// against `kubectl apply --server-side` per namespace and against Flux (source-controller and
// kustomize-controller, one Kustomization per deployment); then a steady state, change → applied
// latency, request counts and memory. Each client starts on a settled cluster (the pods of the
// phases before it all up). The targets (bench/README.md, "Targets") are printed with pass/fail;
// --strict exits 1 when one is missed. Each phase is a module of bench/sync/.
// Run: npm run bench:sync -- --deployments 100 [--order agent,floor,kubectl,flux | --runs 3 | --agent-only] [--flux-defaults] [--until-applied] [--restart] [--keep-cluster] [--phase-timeout-min 180] [--concurrency 4] [--poll-interval-ms 2000] [--strict] [--cpu-prof] [--heap-snapshot]
//   [--from-source] [--memory-limit-mib 384] [--agent-node-options=...] [--agent-env=...] [--controller-qps 100]
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { writeAgentConfigFile } from '../test/support/agentProcess.ts';
import { ensureFluxBuild } from './flux/controllers.ts';
import { loadAverage } from './record.ts';
import { type AgentRun, runAgent } from './sync/agentRun.ts';
import { clusterVersions, createNamespaces, startBenchCluster, stopBenchCluster } from './sync/cluster.ts';
import { NAMESPACES, seedFleet } from './sync/fleet.ts';
import { floorNamespaceOf, runFloor } from './sync/floor.ts';
import { FLUX_NAMESPACES, type FluxRun, runFlux } from './sync/fluxRun.ts';
import { kubectlNamespaceOf, runKubectl } from './sync/kubectlRun.ts';
import { log } from './sync/log.ts';
import { makeMemoryCgroup, removeMemoryCgroup } from './sync/memoryCgroup.ts';
import { readOptions } from './sync/options.ts';
import { report } from './sync/report.ts';
import { runRestart } from './sync/restart.ts';
import { settle } from './sync/settle.ts';

const ROOT = new URL('..', import.meta.url).pathname;

async function main(argv: readonly string[]): Promise<number> {
  const { options, runs } = readOptions(argv);
  if (runs > 1) {
    const { runRotated } = await import('./syncRuns.ts');
    return runRotated(runs, argv, options.order);
  }
  const n = options.deployments;
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  log(
    `N=${n}, concurrency ${options.concurrency}, poll interval ${options.pollMs} ms; load average ${loadAtStart
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (!options.fromSource) {
    await promisify(execFile)('npm', ['run', '--silent', 'build'], { cwd: ROOT });
    log('built dist/ (the agent runs as the image runs it)');
  }
  // Built (minutes, the first time) before the cluster starts: no phase waits on the compiler.
  if (options.order.includes('flux')) log('Flux: bench/flux/build.sh (minutes the first time)');
  const fluxBuild = options.order.includes('flux') ? await ensureFluxBuild() : undefined;
  if (fluxBuild) log(`Flux ${fluxBuild.version} controllers in ${fluxBuild.dir}`);
  const memoryCgroup = await makeMemoryCgroup(options.memoryLimitMiB);
  if (memoryCgroup) log(`agent in a memory cgroup of ${options.memoryLimitMiB} MiB (the chart's limit)`);
  const world = await startBenchCluster(options);
  try {
    const namespaces = [
      ...NAMESPACES,
      ...NAMESPACES.map(floorNamespaceOf),
      ...NAMESPACES.map(kubectlNamespaceOf),
      ...(fluxBuild ? FLUX_NAMESPACES : []),
    ];
    await createNamespaces(world.admin, namespaces);
    const fleet = await seedFleet(world.client, world.emulator, n);
    log(`seeded ${n} deployments: ${fleet.agentObjects.length} objects (${fleet.expectedApplies} by apply)`);

    // The agent, as operators run it: a process with a configuration file.
    const configPath = join(world.workDir, 'config.yaml');
    await writeAgentConfigFile(configPath, {
      listenerId: fleet.listener.id,
      controlPlaneUrl: world.emulator.url,
      kubeconfigPath: world.cluster.kubeconfigPath,
      namespaces: NAMESPACES,
      logLevel: options.logLevel,
      reconcile: {
        pollIntervalMs: options.pollMs,
        concurrency: options.concurrency,
        resyncIntervalMs: options.resyncIntervalMs,
      },
    });
    const launch = {
      main: options.main,
      nodeOptions: options.agentNodeOptions,
      env: options.agentEnv,
      memoryCgroup,
    };
    const profileDir = options.cpuProfile ? join(world.workDir, 'cpu-prof') : undefined;
    const snapshotDir = options.heapSnapshot ? join(world.workDir, 'heap-snapshot') : undefined;

    let agentRun: AgentRun | undefined;
    let floorMs: number | undefined;
    let kubectlMs: number | undefined;
    let fluxRun: FluxRun | undefined;
    for (const [i, phase] of options.order.entries()) {
      // Each client on a settled cluster: the pods of the phases before it all up (settle.ts).
      if (i > 0) await settle(world.admin, namespaces, options.phaseTimeoutMs);
      log(`${phase} (order ${options.order.join(', ')})`);
      if (phase === 'agent')
        agentRun = await runAgent(world, fleet, options, { configPath, launch, profileDir, snapshotDir });
      else if (phase === 'floor') floorMs = await runFloor(world, fleet, options.concurrency);
      else if (phase === 'kubectl') kubectlMs = await runKubectl(world, fleet, options.phaseTimeoutMs);
      else if (fluxBuild) fluxRun = await runFlux(world, fleet, options, fluxBuild);
    }
    if (!agentRun) throw new Error('the agent did not run');
    const restart = options.restart
      ? await runRestart(world.workDir, configPath, launch, options)
      : undefined;
    const { missedTarget } = await report({
      options,
      startedAt,
      loadAtStart,
      objects: fleet.agentObjects.length,
      agentRun,
      floorMs,
      kubectlMs,
      fluxRun,
      restart,
      versions: await clusterVersions(world),
      inMemoryCgroup: memoryCgroup !== undefined,
      profileDir,
      snapshotDir,
    });
    return options.strict && missedTarget ? 1 : 0;
  } finally {
    // Every phase has stopped its agent: the cgroup is empty.
    await removeMemoryCgroup(memoryCgroup);
    await stopBenchCluster(world);
  }
}

// A handle still open after the teardown (one kept a run of a --runs series alive, idle, after
// its record was written and the cluster stopped) must not hold up the series that waits for it.
process.exit(await main(process.argv.slice(2)));
