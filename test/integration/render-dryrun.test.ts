import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../src/controlplane/schemas/index.ts';
import { KubeClient } from '../../src/kube/index.ts';
import { type KubeObject, renderDeployment } from '../../src/render/index.ts';
import { adminKube } from '../support/adminKube.ts';
import { goldenConfig, listener, maximalDeployment, minimalDeployment } from '../support/renderFixtures.ts';
import { validDeployment } from '../support/specArbitraries.ts';

let kube: KubeClient;
beforeAll(async () => {
  kube = await KubeClient.fromKubeconfig(inject('kubeconfigPath'), { logger: pino({ level: 'silent' }) });
  // Dry runs write nothing, but the target namespaces must exist for the server to admit them.
  const admin = adminKube(inject('kubeconfigPath'));
  for (const name of listener.compute_config?.k8s_namespaces ?? []) {
    await admin.core.createNamespace({ body: { metadata: { name } } }).catch(() => undefined);
  }
});
afterAll(() => kube.close());

function rendered(deployment: Deployment): KubeObject[] {
  const result = renderDeployment(
    { deployment, revision: undefined, listener, allowedNamespaces: undefined },
    goldenConfig,
  );
  if (!result.ok) throw result.error;
  return result.value.objects;
}

/** Server-side apply with dryRun=All and fieldValidation=Strict: the server's full admission. */
async function acceptedByServer(objects: KubeObject[]): Promise<string[]> {
  const accepted: string[] = [];
  for (const object of objects) {
    const live = await kube.apply(object, { force: true, dryRun: true });
    expect(live.metadata.name).toBe(object.metadata.name);
    accepted.push(`${object.kind}/${object.metadata.name}`);
  }
  return accepted;
}

describe('rendered objects against the real API server', () => {
  it.each([
    ['minimal', minimalDeployment, 3],
    ['maximal', maximalDeployment, 19],
  ])('accepts every object of the %s golden render', async (_name, deployment, count) => {
    const objects = rendered(deployment);
    expect(await acceptedByServer(objects)).toHaveLength(count);
  });

  it('accepts the objects of random valid deployments', async () => {
    await fc.assert(
      fc.asyncProperty(validDeployment, async (deployment) => {
        const objects = rendered(deployment);
        expect(await acceptedByServer(objects)).toHaveLength(objects.length);
      }),
      { numRuns: 25 },
    );
  });
});
