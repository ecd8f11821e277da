// Every kind the agent writes is watched: an autoscaler, a disruption budget, a pod template and
// an ingress deleted by hand come back within seconds, with the resync at its default 10 minutes
// (so only a watch event can wake the deployment in time); so does an ingress controller's
// annotation the agent writes, removed or changed by hand (no generation moves: the watch cache
// keeps the annotation and the status path's spec view covers it).
import { describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { kubectl } from '../../support/adminKube.ts';
import { app, useAgentWorld, waitForRevision } from '../../support/agentHarness.ts';
import { eventually } from '../../support/eventually.ts';

const TEN_MINUTES = 600_000;
const AUTH_URL = 'nginx.ingress.kubernetes.io/auth-url';
const WHITELIST = 'nginx.ingress.kubernetes.io/whitelist-source-range';
const ROUTE_ANNOTATIONS = { [AUTH_URL]: 'https://auth.example.test/check', [WHITELIST]: '10.0.0.0/8' };
const setup = useAgentWorld({
  render: {
    ingress: { className: 'nginx', allowedHostSuffixes: ['example.test'], annotations: ROUTE_ANNOTATIONS },
  },
  reconcile: { resyncIntervalMs: TEN_MINUTES },
});

interface Ref {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
}

/** The object's uid, or undefined while it does not exist. */
async function uidOf(ref: Ref): Promise<string | undefined> {
  try {
    const object = await setup.world.kube.objects.read({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.name, namespace: setup.ns },
    });
    return object.metadata?.deletionTimestamp ? undefined : object.metadata?.uid;
  } catch {
    return undefined;
  }
}

describe('watched kinds', () => {
  let web: Deployment;

  it('restores an HPA, a PDB, a PodTemplate and an Ingress deleted by hand within seconds', async () => {
    web = await setup.world.client.createDeployment(
      app(setup.world, 'web', setup.ns, {
        source_config: {
          listener_id: setup.world.listenerId,
          listener_config: { k8s_namespace: setup.ns },
          // prod: a PodDisruptionBudget; min < max: an HPA; executor: a PodTemplate; custom_url
          // with an ingress class: an Ingress.
          deployment_type: 'prod',
          custom_url: 'web.example.test',
          resource_spec: { min_scale: 1, max_scale: 3, cpu: 0.1, memory_mb: 64, executor_cpu: 0.1 },
        },
      }),
    );
    await waitForRevision(setup.world, web, 'DEPLOYED');

    const refs: Ref[] = [
      { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', name: 'web' },
      { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', name: 'web' },
      { apiVersion: 'v1', kind: 'PodTemplate', name: 'web-executor' },
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web' },
      { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', name: 'web' },
    ];
    const before = await Promise.all(refs.map(uidOf));
    expect(before.every((uid) => uid !== undefined)).toBe(true);

    const started = Date.now();
    for (const ref of refs)
      await setup.world.kube.objects.delete({
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: { name: ref.name, namespace: setup.ns },
      });
    // A new uid for each: recreated by the agent, not a delete that did not happen.
    const after = await eventually(
      'every deleted object recreated',
      async () => {
        const uids = await Promise.all(refs.map(uidOf));
        return uids.every((uid, i) => uid !== undefined && uid !== before[i]) ? uids : undefined;
      },
      30_000,
    );
    expect(after).toHaveLength(refs.length);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it.each([
    ['removed', [`${AUTH_URL}-`]],
    ['changed', ['--overwrite', `${WHITELIST}=0.0.0.0/0`]],
  ])("writes back an ingress controller's annotation %s by hand within seconds", async (_how, args) => {
    const ingress = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', namespace: setup.ns },
    };
    const read = () => setup.world.kube.objects.read(ingress);
    const before = await read();
    expect(before.metadata?.annotations).toMatchObject(ROUTE_ANNOTATIONS);
    await kubectl(inject('clusterBinDir'), setup.world.kubeconfigPath, [
      '-n',
      setup.ns,
      'annotate',
      'ingress',
      'web',
      ...args,
    ]);
    const edited = await read();
    expect(edited.metadata?.annotations).not.toMatchObject(ROUTE_ANNOTATIONS);
    // An edit of metadata: the Ingress's generation, which its spec view keys on, is unmoved.
    expect(edited.metadata?.generation).toBe(before.metadata?.generation);
    const started = Date.now();
    await eventually(
      'the annotation written back',
      async () => {
        const annotations = (await read()).metadata?.annotations ?? {};
        return annotations[AUTH_URL] === ROUTE_ANNOTATIONS[AUTH_URL] &&
          annotations[WHITELIST] === ROUTE_ANNOTATIONS[WHITELIST]
          ? true
          : undefined;
      },
      30_000,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
