import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient } from '../../../src/kube/index.ts';
import { type KubeObject, type RenderConfig, renderDeployment } from '../../../src/render/index.ts';
import { adminKube, createNamespace, uniqueNamespace } from '../../support/adminKube.ts';
import {
  goldenConfig,
  listener,
  maximalDeployment,
  minimalDeployment,
  scheduledConfig,
} from '../../support/renderFixtures.ts';
import { validDeployment } from '../../support/specArbitraries.ts';

let kube: KubeClient;
/**
 * The fixtures' namespaces (`apps`, `apps-staging`) stand for namespaces of this file's own: dry
 * runs write nothing, yet their namespace must exist, and the shared cluster's other tests (the
 * README's install of the example values) need those names free.
 */
const own = new Map(
  (listener.compute_config?.k8s_namespaces ?? []).map((name) => [name, uniqueNamespace('dry-run')]),
);
beforeAll(async () => {
  kube = await KubeClient.fromKubeconfig(inject('kubeconfigPath'), { logger: pino({ level: 'silent' }) });
  const admin = adminKube(inject('kubeconfigPath'));
  for (const name of own.values()) await createNamespace(admin, name);
});
afterAll(async () => {
  const admin = adminKube(inject('kubeconfigPath'));
  for (const name of own.values()) await admin.core.deleteNamespace({ name }).catch(() => undefined);
  await kube.close();
});

function rendered(deployment: Deployment, config: RenderConfig = goldenConfig): KubeObject[] {
  const result = renderDeployment(
    { deployment, revision: undefined, listener, allowedNamespaces: undefined },
    config,
  );
  if (!result.ok) throw result.error;
  return result.value.objects.map((object) => {
    const namespace = own.get(object.metadata.namespace ?? '');
    return namespace ? { ...object, metadata: { ...object.metadata, namespace } } : object;
  });
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
    ['maximal', maximalDeployment, 20],
  ])('accepts every object of the %s golden render', async (_name, deployment, count) => {
    const objects = rendered(deployment);
    expect(await acceptedByServer(objects)).toHaveLength(count);
  });

  it('accepts every object of the maximal render placed by the platform (render.scheduling), apps and stores', async () => {
    const objects = rendered(maximalDeployment, scheduledConfig);
    const podSpecs = objects.flatMap((object) => {
      const body = object as { spec?: { template?: { spec?: object } }; template?: { spec?: object } };
      const spec = body.spec?.template?.spec ?? body.template?.spec;
      return spec ? [spec] : [];
    });
    // Every pod spec carries the platform's placement: the server takes each field as rendered.
    expect(podSpecs).toHaveLength(6);
    for (const spec of podSpecs) expect(spec).toHaveProperty('priorityClassName');
    expect(await acceptedByServer(objects)).toHaveLength(20);
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
