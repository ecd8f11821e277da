// Change → applied: a new image on a deployment in the control plane, timed until the cluster's
// Deployment carries it (seen by a watch, imageWatch.ts), over changes spread across a few poll intervals; with
// the agent's own means over the same span, which split the latency into its parts: a change
// waits for the next listing (half an interval plus a poll's duration, on average), then in the
// work queue, then for its reconcile.
import type { KubeClient } from '../../src/kube/kubeClient.ts';
import { sleep } from '../../src/sleep.ts';
import type { ControlPlaneTestClient } from '../../test/support/controlPlaneTestClient.ts';
import type { Sample } from '../../test/support/metricSamples.ts';
import { quantile } from '../statistics.ts';
import { type AgentMeter, total } from './agentMetrics.ts';
import { type Fleet, NAMESPACES, renderFleet } from './fleet.ts';
import { ImageWatch } from './imageWatch.ts';
import { log, seconds } from './log.ts';

export interface ChangeLatency {
  readonly patches: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly spanS: number;
  /** The agent's means over the span (ms), from its histograms. */
  readonly parts: {
    readonly polls: number;
    readonly pollMs: number;
    readonly queueWaitMs: number;
    readonly reconcileMs: number;
  };
}

/** The mean of a histogram's observations between two readings, in ms. */
function meanMs(before: readonly Sample[], after: readonly Sample[], name: string): number {
  const sum = total(after, `${name}_sum`) - total(before, `${name}_sum`);
  const count = total(after, `${name}_count`) - total(before, `${name}_count`);
  return count > 0 ? Math.round((sum / count) * 1000) : Number.NaN;
}

export async function measureChangeToApplied(
  { admin, client }: { readonly admin: KubeClient; readonly client: ControlPlaneTestClient },
  fleet: Fleet,
  meter: AgentMeter,
  options: { readonly patches: number; readonly pollMs: number; readonly phaseTimeoutMs: number },
): Promise<ChangeLatency> {
  const { patches, pollMs, phaseTimeoutMs } = options;
  const latencies: number[] = [];
  const watch = await ImageWatch.start(admin, NAMESPACES);
  const before = await meter.read();
  const patchesStarted = performance.now();
  const pending: Promise<void>[] = [];
  for (let p = 0; p < patches; p++) {
    const target = fleet.seeded[(p * 7) % fleet.seeded.length];
    if (!target) break;
    const namespace = target.deployment.source_config.listener_config?.k8s_namespace ?? '';
    const rendered = renderFleet([target], fleet.listener, (n) => n, fleet.renderConfig);
    const main = rendered.find(
      (o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'main',
    );
    if (!main) throw new Error(`no main Deployment rendered for ${target.deployment.name}`);
    const image = `registry.example.test/bench/app:2.${p}.0`;
    const done = watch.expect(namespace, main.metadata.name, image).then((ms) => {
      latencies.push(ms);
    });
    await client.patchDeployment(target.deployment.id, { source_revision_config: { image_uri: image } });
    pending.push(done);
    // Spread over a few poll intervals, as edits arrive in life, not all in one poll.
    await sleep((pollMs * 3) / patches);
  }
  await Promise.race([
    Promise.all(pending),
    sleep(phaseTimeoutMs).then(() => {
      throw new Error(`change → applied: ${watch.waiting} of ${patches} changes not applied in time`);
    }),
  ]);
  const after = await meter.read();
  await watch.stop();
  latencies.sort((a, b) => a - b);
  const latency = {
    patches: latencies.length,
    p50Ms: Math.round(quantile(latencies, 0.5)),
    p99Ms: Math.round(quantile(latencies, 0.99)),
    maxMs: Math.round(latencies.at(-1) ?? Number.NaN),
    spanS: seconds(performance.now() - patchesStarted),
    parts: {
      polls:
        total(after, 'k8s_listener_poll_duration_seconds_count') -
        total(before, 'k8s_listener_poll_duration_seconds_count'),
      pollMs: meanMs(before, after, 'k8s_listener_poll_duration_seconds'),
      queueWaitMs: meanMs(before, after, 'workqueue_queue_duration_seconds'),
      reconcileMs: meanMs(before, after, 'k8s_listener_reconcile_duration_seconds'),
    },
  };
  log(`change → applied: ${JSON.stringify(latency)}`);
  return latency;
}
