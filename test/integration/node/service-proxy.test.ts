// On the real node, a Service answers as its endpoints say while kube-router syncs NetworkPolicies
// beside it. In iptables mode, kube-router's sync wrote the whole filter table back from a copy read
// at its start, bringing back a "no endpoints" REJECT kube-proxy had just removed (or dropping one it
// had just added), and kube-proxy left it so until its next change; the test cluster therefore runs
// kube-proxy in nftables mode. On the iptables mode this test fails (3 toggles of 20 went wrong).
import { createConnection } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type AdminKube, adminKube, uniqueNamespace } from '../../support/adminKube.ts';
import { eventually } from '../../support/eventually.ts';
import { realNodeFor } from '../../support/realNodeSuite.ts';

const node = realNodeFor('node/service-proxy');

const TOGGLES = 20;
const PORT = 53;
/** CoreDNS's own port behind the kube-dns Service's 53. */
const COREDNS_PORT = 1053;

type Outcome = 'connected' | 'refused' | 'no answer';

/** What a TCP connection from this machine to host:port meets. */
function connectOutcome(host: string, port: number, timeoutMs = 2_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('no answer');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      resolve(error.code === 'ECONNREFUSED' ? 'refused' : 'no answer');
    });
  });
}

describe.skipIf(!node)("a Service's answer follows its endpoints while NetworkPolicies churn", () => {
  let kube: AdminKube;
  let ns: string;
  let clusterIp: string;
  let backend: string;
  let churning = true;
  let churn: Promise<number> | undefined;

  beforeAll(async () => {
    kube = adminKube(inject('kubeconfigPath'));
    ns = uniqueNamespace('service-proxy');
    await kube.core.createNamespace({ body: { metadata: { name: ns } } });
    // A Service without a selector: its endpoints are whatever EndpointSlice this test writes. The
    // backend is CoreDNS's pod, which answers TCP and no NetworkPolicy covers.
    const service = await kube.core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: 'probe' }, spec: { ports: [{ name: 'dns', port: PORT, protocol: 'TCP' }] } },
    });
    clusterIp = service.spec?.clusterIP ?? '';
    const dns = await kube.core.listNamespacedPod({
      namespace: 'kube-system',
      labelSelector: 'k8s-app=kube-dns',
    });
    backend = dns.items[0]?.status?.podIP ?? '';
    expect(clusterIp).not.toBe('');
    expect(backend).not.toBe('');
    // Every NetworkPolicy event makes kube-router sync the filter table in full.
    churn = (async () => {
      let syncs = 0;
      while (churning) {
        const name = `churn-${syncs}`;
        await kube.objects.create({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name, namespace: ns },
          spec: { podSelector: {}, policyTypes: ['Ingress'] },
        });
        await kube.objects.delete({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name, namespace: ns },
        });
        syncs += 1;
      }
      return syncs;
    })();
  });
  afterAll(async () => {
    churning = false;
    await churn?.catch(() => undefined);
    await kube?.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  const slice = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    addressType: 'IPv4',
    ports: [{ name: 'dns', port: COREDNS_PORT, protocol: 'TCP' }],
  };

  it(`connects while it has a ready endpoint and is refused while it has none, over ${TOGGLES} toggles`, async () => {
    const wrong: string[] = [];
    for (let toggle = 1; toggle <= TOGGLES; toggle++) {
      const ready = toggle % 2 === 1;
      const metadata = { name: 'probe-1', namespace: ns, labels: { 'kubernetes.io/service-name': 'probe' } };
      if (ready) {
        await kube.objects.create({
          ...slice,
          metadata,
          endpoints: [{ addresses: [backend], conditions: { ready: true } }],
        });
      } else {
        await kube.objects.delete({ ...slice, metadata });
      }
      const expected: Outcome = ready ? 'connected' : 'refused';
      // kube-proxy applies a change within its 1 s minimum sync period; a rule another writer
      // brought back stays wrong until kube-proxy's next change, past this wait.
      let last: Outcome | undefined;
      const seen = await eventually(
        `toggle ${toggle}: the Service ${expected}`,
        async () => {
          last = await connectOutcome(clusterIp, PORT);
          return last === expected ? last : undefined;
        },
        10_000,
        200,
      ).catch(() => undefined);
      if (!seen) wrong.push(`toggle ${toggle}: endpoint ${ready ? 'ready' : 'gone'}, ${last} for 10 s`);
    }
    churning = false;
    const syncs = (await churn) ?? 0;
    console.log(
      `[service-proxy] ${TOGGLES} toggles, ${syncs} NetworkPolicies created and deleted beside them`,
    );
    // The churn must have run beside the toggles for the test to mean anything.
    expect(syncs).toBeGreaterThanOrEqual(TOGGLES);
    expect(wrong).toEqual([]);
  }, 300_000);
});
