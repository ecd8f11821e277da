// Flux's phase: source-controller and kustomize-controller applying the agent's objects, in
// namespaces of their own, one Kustomization per deployment (prune, wait, its own path in one OCI
// artifact served on 127.0.0.1); timed from the controllers' start until every Kustomization has
// applied the artifact's revision (its log) and until every one is Ready (its health checks
// passed); then the steady state, change → applied and a resync, as the agent's phase measures
// them.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KUBE_API_DEFAULTS } from '../../src/config/agentConfig.ts';
import { sleep } from '../../src/sleep.ts';
import { ArtifactTree, pathOf } from '../flux/artifact.ts';
import {
  FLUX_DEFAULTS,
  FLUX_NAMESPACE,
  FluxControllers,
  type FluxSettings,
  type RequestsByMethod,
} from '../flux/controllers.ts';
import { startArtifactRegistry } from '../flux/registry.ts';
import { quantile } from '../statistics.ts';
import type { BenchCluster } from './cluster.ts';
import { type Fleet, NAMESPACES, renderFleet, type SeededDeployment } from './fleet.ts';
import { ImageWatch } from './imageWatch.ts';
import { log, seconds } from './log.ts';
import type { SyncOptions } from './options.ts';
import { until } from './until.ts';

const execFileAsync = promisify(execFile);

export const fluxNamespaceOf = (namespace: string) => `flux-${namespace}`;
export const FLUX_NAMESPACES = [FLUX_NAMESPACE, ...NAMESPACES.map(fluxNamespaceOf)];

const SOURCE_NAME = 'fleet';
const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';
const WRITE_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];

export interface FluxRun {
  readonly version: string;
  /** `agent`: the agent's concurrency and client rate limit; `defaults`: Flux's own. */
  readonly settingsFrom: 'agent' | 'defaults';
  readonly settings: FluxSettings;
  readonly source: string;
  readonly appliedS: number;
  readonly healthyS: number;
  readonly cpuAtAppliedS: number;
  readonly cpuAtHealthyS: number;
  /** API requests per deployment until every Kustomization is Ready, by HTTP method. */
  readonly coldRequestsPerDeployment: RequestsByMethod;
  /** Requests of a writing method (POST, PUT, PATCH, DELETE) while nothing changes. */
  readonly steady: { readonly seconds: number; readonly writes: number };
  readonly changeToApplied: {
    readonly patches: number;
    readonly p50Ms: number;
    readonly p99Ms: number;
    readonly maxMs: number;
    readonly spanS: number;
  };
  /** `requestsPerDeployment` by HTTP method: PATCH counts server-side dry runs too, which write nothing. */
  readonly resync: {
    readonly cpuMsPerDeployment: number;
    readonly seconds: number;
    readonly requestsPerDeployment: RequestsByMethod;
  };
  readonly peakRssMiB: {
    readonly sourceController: number;
    readonly kustomizeController: number;
    readonly both: number;
  };
}

const perDeployment = (requests: RequestsByMethod, n: number): RequestsByMethod =>
  Object.fromEntries(
    Object.entries(requests).map(([method, count]) => [method, Number((count / n).toFixed(2))]),
  );

const difference = (after: RequestsByMethod, before: RequestsByMethod): RequestsByMethod =>
  Object.fromEntries(Object.entries(after).map(([method, count]) => [method, count - (before[method] ?? 0)]));

const writesOf = (requests: RequestsByMethod) =>
  WRITE_METHODS.reduce((sum, m) => sum + (requests[m] ?? 0), 0);

/** A deployment's objects as Flux applies them: in Flux's namespaces, with `image` if given. */
function fluxObjects(fleet: Fleet, seeded: SeededDeployment, image?: string) {
  let input = seeded;
  if (image !== undefined) {
    input = structuredClone(seeded);
    input.deployment.source_revision_config.image_uri = image;
    if (input.revision) input.revision.source_revision_config.image_uri = image;
  }
  return renderFleet([input], fleet.listener, fluxNamespaceOf, fleet.renderConfig);
}

export async function runFlux(
  world: BenchCluster,
  fleet: Fleet,
  options: SyncOptions,
  build: { readonly dir: string; readonly version: string },
): Promise<FluxRun> {
  const buildDir = build.dir;
  const n = options.deployments;
  const kubectl = async (args: readonly string[]) =>
    (
      await execFileAsync(world.kubectl, ['--kubeconfig', world.cluster.kubeconfigPath, ...args], {
        maxBuffer: 256 * 2 ** 20,
      })
    ).stdout;
  const settings: FluxSettings = options.fluxDefaults
    ? FLUX_DEFAULTS
    : // The agent's: its --concurrency and its default client rate limit (the bench sets no other).
      {
        concurrent: options.concurrency,
        kubeApiQps: KUBE_API_DEFAULTS.qps,
        kubeApiBurst: KUBE_API_DEFAULTS.burst,
      };

  // Flux's CRDs, then its source: every deployment's directory in one artifact.
  await kubectl(['apply', '--server-side', '-f', join(buildDir, 'crds')]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
  const registry = await startArtifactRegistry();
  const tree = new ArtifactTree(world.workDir);
  for (const seeded of fleet.seeded) await tree.write(seeded.deployment.name, fluxObjects(fleet, seeded));
  const publish = async (label: string) => `${registry.tag}@${registry.publish(await tree.pack(), label)}`;
  let revision = await publish('cold');

  // The OCIRepository and one Kustomization per deployment, in place before the controllers start
  // (as the agent's deployments are in the control plane before it starts).
  const interval = `${Math.ceil(options.phaseTimeoutMs / 60_000) * 4}m`;
  const manifests = [
    {
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'OCIRepository',
      metadata: { name: SOURCE_NAME, namespace: FLUX_NAMESPACE },
      spec: { interval, url: registry.url, ref: { tag: registry.tag }, insecure: true },
    },
    ...fleet.seeded.map(({ deployment }) => ({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: deployment.name, namespace: FLUX_NAMESPACE },
      spec: {
        // Longer than the run: the resync below asks for one, not the clock.
        interval,
        timeout: `${Math.ceil(options.phaseTimeoutMs / 60_000)}m`,
        path: pathOf(deployment.name),
        prune: true,
        wait: true,
        sourceRef: { kind: 'OCIRepository', name: SOURCE_NAME },
      },
    })),
  ];
  const manifestPath = join(world.workDir, 'flux-objects.json');
  await writeFile(manifestPath, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifests }));
  await kubectl(['apply', '--server-side', '-f', manifestPath]);

  const readyCount = async (
    wanted: (status: { ready: string; revision: string; handled: string }) => boolean,
  ) => {
    const out = await kubectl([
      'get',
      'kustomizations',
      '-n',
      FLUX_NAMESPACE,
      '-o',
      'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{.status.lastAppliedRevision}{" "}{.status.lastHandledReconcileAt}{"\\n"}{end}',
    ]);
    return out
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [ready = '', rev = '', handled = ''] = line.split(' ');
        return { ready, revision: rev, handled };
      })
      .filter(wanted).length;
  };

  const started = performance.now();
  const flux = await FluxControllers.start(buildDir, world.cluster.kubeconfigPath, world.workDir, settings);
  const progress = setInterval(() => {
    void flux
      .cpuS()
      .then((cpu) =>
        log(
          `flux progress: ${Math.round(seconds(performance.now() - started))} s, ${flux.appliedAt(revision)} of ${n} Kustomizations applied; controllers' CPU ${cpu.toFixed(1)} s`,
        ),
      );
  }, 60_000);
  progress.unref();
  try {
    await until(
      'every Kustomization applied',
      async () => (flux.appliedAt(revision) >= n ? true : undefined),
      options.phaseTimeoutMs,
      500,
    );
    const appliedMs = performance.now() - started;
    const cpuAtAppliedS = await flux.cpuS();
    log(
      `flux: every Kustomization applied after ${seconds(appliedMs)} s (controllers' CPU ${cpuAtAppliedS.toFixed(1)} s)`,
    );
    await until(
      'every Kustomization Ready',
      async () =>
        (await readyCount((s) => s.ready === 'True' && s.revision === revision)) >= n ? true : undefined,
      options.phaseTimeoutMs * (options.order.indexOf('flux') + 1),
      2_000,
    );
    const healthyMs = performance.now() - started;
    clearInterval(progress);
    const cpuAtHealthyS = await flux.cpuS();
    const afterCold = await flux.requests();
    log(
      `flux: every Kustomization Ready after ${seconds(healthyMs)} s (controllers' CPU ${cpuAtHealthyS.toFixed(1)} s)`,
    );

    // The steady state: as long as the agent's five polls.
    const steadyMs = options.pollMs * 5;
    await sleep(steadyMs);
    const steady = {
      seconds: seconds(steadyMs),
      writes: writesOf(await flux.requests()) - writesOf(afterCold),
    };
    log(`flux steady state: ${JSON.stringify(steady)}`);

    // Change → applied: a new image in one deployment's directory, a new artifact, and a reconcile
    // request on the OCIRepository (so that its interval is not what is timed); timed from the
    // artifact served until the cluster's Deployment carries the image. The changes are spread over
    // three poll intervals, as the agent's are; each new revision queues every Kustomization of the
    // source (one artifact for the fleet), the changed ones among them.
    const latencies: number[] = [];
    const watch = await ImageWatch.start(world.admin, NAMESPACES.map(fluxNamespaceOf));
    const patchesStarted = performance.now();
    const pending: Promise<void>[] = [];
    const requests: Promise<string>[] = [];
    for (let p = 0; p < options.patches; p++) {
      const target = fleet.seeded[(p * 7) % fleet.seeded.length];
      if (!target) break;
      const image = `registry.example.test/bench/app:2.${p}.0`;
      const objects = fluxObjects(fleet, target, image);
      const main = objects.find(
        (o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'main',
      );
      if (!main) throw new Error(`no main Deployment rendered for ${target.deployment.name}`);
      await tree.write(target.deployment.name, objects);
      revision = await publish(`change ${p}`);
      pending.push(
        watch.expect(main.metadata.namespace ?? '', main.metadata.name, image).then((ms) => {
          latencies.push(ms);
        }),
      );
      // Not awaited: kubectl's own start would space the changes wider than the agent's.
      requests.push(
        kubectl([
          'annotate',
          '--overwrite',
          '-n',
          FLUX_NAMESPACE,
          `ocirepository/${SOURCE_NAME}`,
          `${REQUESTED_AT}=${Date.now()}`,
        ]),
      );
      await sleep((options.pollMs * 3) / options.patches);
    }
    await Promise.all(requests);
    await Promise.race([
      Promise.all(pending),
      sleep(options.phaseTimeoutMs).then(() => {
        throw new Error(
          `flux change → applied: ${watch.waiting} of ${options.patches} changes not applied in time`,
        );
      }),
    ]);
    await watch.stop();
    latencies.sort((a, b) => a - b);
    const changeToApplied = {
      patches: latencies.length,
      p50Ms: Math.round(quantile(latencies, 0.5)),
      p99Ms: Math.round(quantile(latencies, 0.99)),
      maxMs: Math.round(latencies.at(-1) ?? Number.NaN),
      spanS: seconds(performance.now() - patchesStarted),
    };
    log(`flux change → applied: ${JSON.stringify(changeToApplied)}`);

    // Let the last revision's wave finish: every Kustomization Ready at it.
    await until(
      'every Kustomization Ready at the last change',
      async () =>
        (await readyCount((s) => s.ready === 'True' && s.revision === revision)) >= n ? true : undefined,
      options.phaseTimeoutMs,
      2_000,
    );

    // A resync: every Kustomization asked to reconcile once (Flux's interval run, on request), nothing changed.
    const token = String(Date.now());
    const resyncCpu = await flux.cpuS();
    const resyncRequests = await flux.requests();
    const resyncStarted = performance.now();
    await kubectl([
      'annotate',
      '--overwrite',
      '-n',
      FLUX_NAMESPACE,
      'kustomizations',
      '--all',
      `${REQUESTED_AT}=${token}`,
    ]);
    await until(
      'every Kustomization resynced',
      async () =>
        (await readyCount((s) => s.handled === token && s.ready === 'True')) >= n ? true : undefined,
      options.phaseTimeoutMs,
      1_000,
    );
    const resync = {
      cpuMsPerDeployment: Number(((((await flux.cpuS()) - resyncCpu) * 1000) / n).toFixed(2)),
      seconds: seconds(performance.now() - resyncStarted),
      requestsPerDeployment: perDeployment(difference(await flux.requests(), resyncRequests), n),
    };
    log(`flux resync: ${JSON.stringify(resync)}`);

    const peak = await flux.peakRssMiB();
    return {
      version: build.version,
      settingsFrom: options.fluxDefaults ? 'defaults' : 'agent',
      settings,
      source: 'OCIRepository: one artifact served by the bench on 127.0.0.1 (bench/flux/registry.ts)',
      appliedS: seconds(appliedMs),
      healthyS: seconds(healthyMs),
      cpuAtAppliedS: Number(cpuAtAppliedS.toFixed(2)),
      cpuAtHealthyS: Number(cpuAtHealthyS.toFixed(2)),
      coldRequestsPerDeployment: perDeployment(afterCold, n),
      steady,
      changeToApplied,
      resync,
      peakRssMiB: {
        sourceController: Number(peak.source.toFixed(1)),
        kustomizeController: Number(peak.kustomize.toFixed(1)),
        both: Number((peak.source + peak.kustomize).toFixed(1)),
      },
    };
  } finally {
    clearInterval(progress);
    await flux.stop();
    await registry.close();
  }
}
