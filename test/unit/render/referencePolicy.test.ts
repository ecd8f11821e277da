// One reference policy over every route by which a deployment's pods can name a Secret, a
// ConfigMap or a volume claim. The tables below have a row for each field of the deployment schema
// — and, under its free-form fields, of the Kubernetes types they hold — whose name says Secret,
// ConfigMap or claim; the schema is walked, so a field added later without a row (and so without
// the check) fails here.
import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type Container,
  Deployment,
  type ResourceSpec,
  type Volume,
} from '../../../src/controlplane/schemas/index.ts';
import { DIGEST_KEY_SECRET } from '../../../src/objects/ownership.ts';
import { type RenderConfigInput, type RenderInput, renderDeployment } from '../../../src/render/index.ts';
import { config, minimalDeployment, withSpec } from '../../support/renderFixtures.ts';

// --- The walk --------------------------------------------------------------------------------

/**
 * The Kubernetes type each free-form object of the deployment schema holds (null: a map of
 * strings or quantities, which names nothing). A free-form field missing here fails the walk.
 */
const FREE_FORM_TYPES: Record<string, string | null> = {
  'source_config.resource_spec.labels': null,
  'source_config.resource_spec.annotations': null,
  'source_config.resource_spec.volumes[].configMap': 'V1ConfigMapVolumeSource',
  'source_config.resource_spec.volumes[].secret': 'V1SecretVolumeSource',
  'source_config.resource_spec.volumes[].emptyDir': 'V1EmptyDirVolumeSource',
  'source_config.resource_spec.volumes[].persistentVolumeClaim': 'V1PersistentVolumeClaimVolumeSource',
  'source_config.resource_spec.volumes[].nfs': 'V1NFSVolumeSource',
  'source_config.resource_spec.volumes[].projected': 'V1ProjectedVolumeSource',
  'source_config.resource_spec.volumes[].downwardAPI': 'V1DownwardAPIVolumeSource',
  'source_config.resource_spec.volumes[].csi': 'V1CSIVolumeSource',
  ...Object.fromEntries(
    ['init_containers', 'sidecars'].flatMap((group) => {
      const at = `source_config.resource_spec.${group}[]`;
      return [
        [`${at}.env[].valueFrom`, 'V1EnvVarSource'],
        [`${at}.envFrom[]`, 'V1EnvFromSource'],
        [`${at}.resources.limits`, null],
        [`${at}.resources.requests`, null],
        [`${at}.securityContext`, 'V1SecurityContext'],
      ];
    }),
  ),
};

type AttributeTypeMap = { name: string; type: string }[];
const kubernetesTypes = k8s as unknown as Record<string, { getAttributeTypeMap?: () => AttributeTypeMap }>;

/** Every field path whose key says `what`, under the zod schema and the Kubernetes types it holds. */
function fieldsNaming(what: RegExp, schema: z.ZodType): string[] {
  const found: string[] = [];
  const visitKubernetes = (type: string, path: string, depth: number) => {
    const element = /^Array<(.+)>$/.exec(type)?.[1];
    if (element) return visitKubernetes(element, `${path}[]`, depth);
    const attributes = kubernetesTypes[type]?.getAttributeTypeMap?.();
    if (!attributes || depth > 8) return;
    for (const attribute of attributes) {
      const at = `${path}.${attribute.name}`;
      if (what.test(attribute.name)) found.push(at);
      else visitKubernetes(attribute.type, at, depth + 1);
    }
  };
  const visit = (node: z.ZodType, path: string) => {
    if (
      node instanceof z.ZodOptional ||
      node instanceof z.ZodNullable ||
      node instanceof z.ZodDefault ||
      node instanceof z.ZodPrefault
    )
      return visit(node.unwrap() as z.ZodType, path);
    // A capped list or map (schemas/inputCaps.ts): its count checked, then the schema itself.
    if (node instanceof z.ZodPipe) return visit(node.out as z.ZodType, path);
    if (node instanceof z.ZodArray) return visit(node.element as z.ZodType, `${path}[]`);
    if (node instanceof z.ZodRecord) {
      if (!(path in FREE_FORM_TYPES)) throw new Error(`free-form field ${path} has no Kubernetes type here`);
      const type = FREE_FORM_TYPES[path];
      if (type) visitKubernetes(type, path, 0);
      return;
    }
    if (!(node instanceof z.ZodObject)) return;
    for (const [key, child] of Object.entries(node.shape)) {
      const at = path ? `${path}.${key}` : key;
      if (what.test(key)) found.push(at);
      else visit(child as z.ZodType, at);
    }
  };
  visit(schema, '');
  return found.sort();
}

// --- The routes ------------------------------------------------------------------------------

const PATTERNS: RenderConfigInput = { policy: { secretReferences: ['shared-*'] } };

const mounted = (volume: Volume): ResourceSpec => ({
  volumes: [volume],
  volume_mounts: [{ name: volume.name, mountPath: '/mnt' }],
});
/** A sidecar named `log`, or an init container (a native sidecar when `restartPolicy: Always`). */
const inContainer =
  (group: 'sidecars' | 'init_containers', fields: (secret: string) => Partial<Container>) =>
  (secret: string): RenderInput =>
    withSpec({ [group]: [{ name: 'log', image: 'busybox:1.36', ...fields(secret) }] });

interface Route {
  /** The deployment naming `secret` through this route. */
  readonly naming: (secret: string) => RenderInput;
  /** Where the refusal is reported. */
  readonly path: string;
}

const envFrom = (secret: string) => ({ envFrom: [{ secretRef: { name: secret } }] });
const env = (secret: string) => ({
  env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: secret, key: 'token' } } }],
});
const nativeSidecar = (fields: (secret: string) => Partial<Container>) => (secret: string) => ({
  restartPolicy: 'Always',
  ...fields(secret),
});

const ROUTES: Record<string, readonly Route[]> = {
  secret_references: [
    {
      naming: (secret) =>
        withSpec({}, { secret_references: [{ name: 'TOKEN', secret_name: secret, secret_key: 'token' }] }),
      path: 'secret_references[0].secret_name',
    },
  ],
  'source_config.resource_spec.image_pull_secrets': [
    {
      naming: (secret) => withSpec({ image_pull_secrets: [{ name: secret }] }),
      path: 'Deployment/hello spec.imagePullSecrets[0].name',
    },
  ],
  'source_config.resource_spec.volumes[].secret': [
    {
      naming: (secret) => withSpec(mounted({ name: 'v', secret: { secretName: secret } })),
      path: 'Deployment/hello spec.volumes[0].secret.secretName',
    },
  ],
  'source_config.resource_spec.volumes[].projected.sources[].secret': [
    {
      naming: (secret) =>
        withSpec(
          mounted({
            name: 'v',
            projected: { sources: [{ configMap: { name: 'settings' } }, { secret: { name: secret } }] },
          }),
        ),
      path: 'Deployment/hello spec.volumes[0].projected.sources[1].secret.name',
    },
  ],
  'source_config.resource_spec.volumes[].csi.nodePublishSecretRef': [
    {
      naming: (secret) =>
        withSpec(
          mounted({
            name: 'v',
            csi: { driver: 'secrets-store.csi.k8s.io', nodePublishSecretRef: { name: secret } },
          }),
        ),
      path: 'Deployment/hello spec.volumes[0].csi.nodePublishSecretRef.name',
    },
  ],
  'source_config.resource_spec.sidecars[].env[].valueFrom.secretKeyRef': [
    {
      naming: inContainer('sidecars', env),
      path: 'Deployment/hello spec.containers[1](log).env[0].valueFrom.secretKeyRef.name',
    },
  ],
  'source_config.resource_spec.sidecars[].envFrom[].secretRef': [
    {
      naming: inContainer('sidecars', envFrom),
      path: 'Deployment/hello spec.containers[1](log).envFrom[0].secretRef.name',
    },
  ],
  'source_config.resource_spec.init_containers[].env[].valueFrom.secretKeyRef': [
    {
      naming: inContainer('init_containers', env),
      path: 'Deployment/hello spec.initContainers[0](log).env[0].valueFrom.secretKeyRef.name',
    },
    {
      naming: inContainer('init_containers', nativeSidecar(env)),
      path: 'Deployment/hello spec.initContainers[0](log).env[0].valueFrom.secretKeyRef.name',
    },
  ],
  'source_config.resource_spec.init_containers[].envFrom[].secretRef': [
    {
      naming: inContainer('init_containers', envFrom),
      path: 'Deployment/hello spec.initContainers[0](log).envFrom[0].secretRef.name',
    },
    {
      naming: inContainer('init_containers', nativeSidecar(envFrom)),
      path: 'Deployment/hello spec.initContainers[0](log).envFrom[0].secretRef.name',
    },
  ],
};
/** Fields that say Secret but name none a pod reads from elsewhere: the deployment's own values. */
const NOT_A_ROUTE: Record<string, string> = {
  secrets: 'values the agent writes into the Secret it generates for the deployment',
};

const cfg = (overrides: RenderConfigInput = {}) =>
  config({
    ...overrides,
    policy: { csiDrivers: ['secrets-store.csi.k8s.io'], ...PATTERNS.policy, ...overrides.policy },
  });

function refusal(input: RenderInput, overrides: RenderConfigInput = {}): Record<string, string> {
  const result = renderDeployment(input, cfg(overrides));
  expect(result.ok).toBe(false);
  if (result.ok) return {};
  // The error names the deployment, and each problem its field.
  expect(result.error.message).toContain(`deployment ${minimalDeployment.id} cannot be rendered`);
  return Object.fromEntries(result.error.problems.map((p) => [p.path, p.message]));
}

const rows = Object.entries(ROUTES).flatMap(([field, routes]) =>
  routes.map((route, i) => [`${field}${routes.length > 1 ? ` (${i})` : ''}`, route] as const),
);

describe('every field of the deployment schema that names a Secret', () => {
  it('are found by the walk wherever they are (a control on the walk itself)', () => {
    const schema = z.object({
      spec: z.object({
        pullSecret: z.string().nullish(),
        envFrom: z.array(z.record(z.string(), z.unknown())),
      }),
    });
    expect(() => fieldsNaming(/secret/i, schema)).toThrow(
      'free-form field spec.envFrom[] has no Kubernetes type here',
    );
    expect(
      fieldsNaming(/secret/i, z.object({ spec: z.object({ pullSecret: z.string().nullish() }) })),
    ).toEqual(['spec.pullSecret']);
  });

  it('has a row in the table (walked from the schema and the Kubernetes types of its free-form fields)', () => {
    const fields = fieldsNaming(/secret/i, Deployment);
    expect(fields).toEqual([...Object.keys(ROUTES), ...Object.keys(NOT_A_ROUTE)].sort());
  });

  it.each(rows)('%s: a Secret the patterns refuse is refused, naming the field', (_field, route) => {
    expect(refusal(route.naming('payroll'))).toEqual({
      [route.path]: 'Secret payroll is not allowed by render.policy.secretReferences (shared-*)',
    });
  });

  it.each(rows)('%s: a Secret the patterns allow is used', (_field, route) => {
    const result = renderDeployment(route.naming('shared-config'), cfg());
    if (!result.ok) throw result.error;
    expect(JSON.stringify(result.value.objects)).toContain('"shared-config"');
  });

  it.each(rows)('%s: the Ingress TLS Secret is refused, whatever the patterns say', (_field, route) => {
    expect(
      refusal(route.naming('shared-wildcard-tls'), {
        ingress: { className: 'nginx', tlsSecretName: 'shared-wildcard-tls' },
      }),
    ).toEqual({
      [route.path]:
        "Secret shared-wildcard-tls is the Ingress TLS Secret (render.ingress.tlsSecretName), which no deployment's pods may read",
    });
  });

  it.each(rows)(
    "%s: the agent's digest-key Secret is refused, whatever the patterns say",
    (_field, route) => {
      expect(refusal(route.naming(DIGEST_KEY_SECRET), { policy: { secretReferences: ['*'] } })).toEqual({
        [route.path]: `Secret ${DIGEST_KEY_SECRET} holds the agent's digest key, which no deployment's pods may read`,
      });
    },
  );
});

describe("a deployment's own Secrets", () => {
  const own = (extra: ResourceSpec = {}): RenderInput =>
    withSpec(
      { db_storage_gi: 1, kvstore_memory_mb: 64, ...extra },
      { secrets: [{ name: 'API_TOKEN', value: 'v' }] },
    );

  it('are used whatever the patterns say: what render generates for it, by any route', () => {
    const sidecar = (name: string) => ({ name, image: 'busybox:1.36' });
    const result = renderDeployment(
      own({
        sidecars: [
          { ...sidecar('a'), envFrom: [{ secretRef: { name: 'hello-secrets' } }] },
          { ...sidecar('b'), envFrom: [{ secretRef: { name: 'hello-db-credentials' } }] },
          { ...sidecar('c'), envFrom: [{ secretRef: { name: 'hello-kvstore-credentials' } }] },
        ],
      }),
      cfg({ policy: { secretReferences: [] } }),
    );
    if (!result.ok) throw result.error;
    expect(result.value.objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)).toEqual([
      'hello-secrets',
      'hello-db-credentials',
      'hello-kvstore-credentials',
    ]);
  });

  it('are only those render generates: the name of one it does not generate is refused', () => {
    // No database here: its credentials' name would be whatever someone else made under it.
    expect(
      refusal(withSpec({ sidecars: [{ name: 'log', image: 'x', ...envFrom('hello-db-credentials') }] }), {
        policy: { secretReferences: [] },
      }),
    ).toEqual({
      'Deployment/hello spec.containers[1](log).envFrom[0].secretRef.name':
        'Secret hello-db-credentials is not allowed by render.policy.secretReferences (none)',
    });
  });
});

// --- ConfigMaps and claims -------------------------------------------------------------------

const envFromConfigMap = (name: string) => ({ envFrom: [{ configMapRef: { name } }] });
const envConfigMap = (name: string) => ({
  env: [{ name: 'SETTING', valueFrom: { configMapKeyRef: { name, key: 'setting' } } }],
});

const CONFIG_MAP_ROUTES: Record<string, readonly Route[]> = {
  'source_config.resource_spec.volumes[].configMap': [
    {
      naming: (name) => withSpec(mounted({ name: 'v', configMap: { name } })),
      path: 'Deployment/hello spec.volumes[0].configMap.name',
    },
  ],
  'source_config.resource_spec.volumes[].projected.sources[].configMap': [
    {
      naming: (name) =>
        withSpec(
          mounted({ name: 'v', projected: { sources: [{ downwardAPI: {} }, { configMap: { name } }] } }),
        ),
      path: 'Deployment/hello spec.volumes[0].projected.sources[1].configMap.name',
    },
  ],
  'source_config.resource_spec.sidecars[].env[].valueFrom.configMapKeyRef': [
    {
      naming: inContainer('sidecars', envConfigMap),
      path: 'Deployment/hello spec.containers[1](log).env[0].valueFrom.configMapKeyRef.name',
    },
  ],
  'source_config.resource_spec.sidecars[].envFrom[].configMapRef': [
    {
      naming: inContainer('sidecars', envFromConfigMap),
      path: 'Deployment/hello spec.containers[1](log).envFrom[0].configMapRef.name',
    },
  ],
  'source_config.resource_spec.init_containers[].env[].valueFrom.configMapKeyRef': [
    {
      naming: inContainer('init_containers', envConfigMap),
      path: 'Deployment/hello spec.initContainers[0](log).env[0].valueFrom.configMapKeyRef.name',
    },
    {
      naming: inContainer('init_containers', nativeSidecar(envConfigMap)),
      path: 'Deployment/hello spec.initContainers[0](log).env[0].valueFrom.configMapKeyRef.name',
    },
  ],
  'source_config.resource_spec.init_containers[].envFrom[].configMapRef': [
    {
      naming: inContainer('init_containers', envFromConfigMap),
      path: 'Deployment/hello spec.initContainers[0](log).envFrom[0].configMapRef.name',
    },
    {
      naming: inContainer('init_containers', nativeSidecar(envFromConfigMap)),
      path: 'Deployment/hello spec.initContainers[0](log).envFrom[0].configMapRef.name',
    },
  ],
};

const CLAIM_ROUTES: Record<string, readonly Route[]> = {
  'source_config.resource_spec.volumes[].persistentVolumeClaim': [
    {
      naming: (name) => withSpec(mounted({ name: 'v', persistentVolumeClaim: { claimName: name } })),
      path: 'Deployment/hello spec.volumes[0].persistentVolumeClaim.claimName',
    },
  ],
};

const OTHER_KINDS = [
  { kind: 'ConfigMap', says: /config_?map/i, routes: CONFIG_MAP_ROUTES, key: 'configMapReferences' },
  { kind: 'PersistentVolumeClaim', says: /claim/i, routes: CLAIM_ROUTES, key: 'claimReferences' },
] as const;

describe.each(OTHER_KINDS)(
  'every field of the deployment schema that names a $kind',
  ({ kind, says, routes, key }) => {
    const kindRows = Object.entries(routes).flatMap(([field, list]) =>
      list.map((route, i) => [`${field}${list.length > 1 ? ` (${i})` : ''}`, route] as const),
    );
    const listing = (patterns: string[]): RenderConfigInput => ({ policy: { [key]: patterns } });

    it('has a row in the table (walked from the schema and the Kubernetes types of its free-form fields)', () => {
      expect(fieldsNaming(says, Deployment)).toEqual(Object.keys(routes).sort());
    });

    it.each(kindRows)('%s: one the list refuses is refused, naming the field', (_field, route) => {
      expect(refusal(route.naming('payroll'), listing(['shared-*']))).toEqual({
        [route.path]: `${kind} payroll is not allowed by render.policy.${key} (shared-*)`,
      });
      expect(refusal(route.naming('payroll'), listing([]))).toEqual({
        [route.path]: `${kind} payroll is not allowed by render.policy.${key} (none)`,
      });
    });

    it.each(kindRows)('%s: one the list allows is used, and any by default', (_field, route) => {
      for (const overrides of [listing(['shared-*']), {}]) {
        const result = renderDeployment(route.naming('shared-config'), cfg(overrides));
        if (!result.ok) throw result.error;
        expect(JSON.stringify(result.value.objects)).toContain('"shared-config"');
      }
    });
  },
);

describe("a deployment's own claims", () => {
  const naming = (claimName: string, extra: ResourceSpec = {}): RenderInput =>
    withSpec({ ...mounted({ name: 'v', persistentVolumeClaim: { claimName } }), ...extra });

  it('are those its StatefulSets bind, used whatever the list says', () => {
    const result = renderDeployment(
      naming('data-hello-db-0', { db_storage_gi: 1 }),
      cfg({ policy: { claimReferences: [] } }),
    );
    if (!result.ok) throw result.error;
    expect(JSON.stringify(result.value.objects)).toContain('"claimName":"data-hello-db-0"');
  });

  it('are only those: the name its StatefulSets would bind, without them, is refused', () => {
    expect(refusal(naming('data-hello-db-0'), { policy: { claimReferences: [] } })).toEqual({
      'Deployment/hello spec.volumes[0].persistentVolumeClaim.claimName':
        'PersistentVolumeClaim data-hello-db-0 is not allowed by render.policy.claimReferences (none)',
    });
  });
});
