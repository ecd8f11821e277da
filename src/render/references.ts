// What a rendered pod template refers to by name in its own namespace: Secrets, ConfigMaps and
// volume claims (volumes, projected sources, a CSI volume's node-publish secret, env, envFrom,
// image pull secrets). Whether each is this deployment's to use is for the reconciler to decide
// against the cluster. Pure.
import type { KubeObject } from '../objects/kubeObject.ts';
import { formatLocalRef } from '../objects/objectRef.ts';
import { podTemplateOf } from './podSecurity.ts';

/** The kinds a pod template can name: the only ones whose change of owner a workload runs on. */
export const REFERENCE_KINDS: ReadonlySet<string> = new Set(['Secret', 'ConfigMap', 'PersistentVolumeClaim']);

export interface Reference {
  readonly kind: 'Secret' | 'ConfigMap' | 'PersistentVolumeClaim';
  readonly namespace: string;
  readonly name: string;
  /** Where in the rendered object, e.g. `Deployment/web spec.volumes[2].secret.secretName`. */
  readonly path: string;
}

type Json = Record<string, unknown>;
const record = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** Every reference of every pod template among the objects, in the objects' namespace. */
export function podReferences(objects: readonly KubeObject[]): Reference[] {
  const references: Reference[] = [];
  for (const object of objects) {
    const template = podTemplateOf(object);
    if (!template) continue;
    const namespace = object.metadata.namespace ?? '';
    const where = formatLocalRef(object);
    const add = (kind: Reference['kind'], name: unknown, path: string) => {
      const found = text(name);
      if (found) references.push({ kind, namespace, name: found, path: `${where} ${path}` });
    };
    const { spec } = template;
    for (const [i, secret] of list(spec.imagePullSecrets).entries())
      add('Secret', record(secret).name, `spec.imagePullSecrets[${i}].name`);
    for (const [i, value] of list(spec.volumes).entries()) {
      const volume = record(value);
      const at = `spec.volumes[${i}]`;
      add('Secret', record(volume.secret).secretName, `${at}.secret.secretName`);
      add('ConfigMap', record(volume.configMap).name, `${at}.configMap.name`);
      add(
        'PersistentVolumeClaim',
        record(volume.persistentVolumeClaim).claimName,
        `${at}.persistentVolumeClaim.claimName`,
      );
      // The driver is handed this Secret's data at mount time: a read of it like any other. The
      // other sources that name a Secret (azureFile, cephfs, rbd, iscsi, flexVolume, scaleIO,
      // storageos) never reach a pod: the deployment schema's volume is strict and lists none of
      // them (controlplane/schemas/deployment.ts VOLUME_SOURCES).
      add(
        'Secret',
        record(record(volume.csi).nodePublishSecretRef).name,
        `${at}.csi.nodePublishSecretRef.name`,
      );
      for (const [j, source] of list(record(volume.projected).sources).entries()) {
        add('Secret', record(record(source).secret).name, `${at}.projected.sources[${j}].secret.name`);
        add(
          'ConfigMap',
          record(record(source).configMap).name,
          `${at}.projected.sources[${j}].configMap.name`,
        );
      }
    }
    for (const kind of ['initContainers', 'containers'] as const) {
      for (const [i, value] of list(spec[kind]).entries()) {
        const container = record(value);
        const at = `spec.${kind}[${i}](${String(container.name ?? i)})`;
        for (const [j, variable] of list(container.env).entries()) {
          const from = record(record(variable).valueFrom);
          add('Secret', record(from.secretKeyRef).name, `${at}.env[${j}].valueFrom.secretKeyRef.name`);
          add(
            'ConfigMap',
            record(from.configMapKeyRef).name,
            `${at}.env[${j}].valueFrom.configMapKeyRef.name`,
          );
        }
        for (const [j, source] of list(container.envFrom).entries()) {
          add('Secret', record(record(source).secretRef).name, `${at}.envFrom[${j}].secretRef.name`);
          add('ConfigMap', record(record(source).configMapRef).name, `${at}.envFrom[${j}].configMapRef.name`);
        }
      }
    }
  }
  return references;
}
