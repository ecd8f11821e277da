// The Kubernetes kinds this agent touches as API resources (derived from the kind table,
// objects/kinds.ts), and how each maps to its API path.
import { KIND_ROWS, type TableKind } from '../objects/kinds.ts';
import type { KubeObject } from '../objects/kubeObject.ts';

export interface KindRef {
  readonly apiVersion: string;
  readonly kind: string;
}

export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
}

/** The reference of an object: what the API path and error messages need. */
export function refOf(object: KubeObject): ObjectRef {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    namespace: object.metadata.namespace,
    name: object.metadata.name,
  };
}

export interface ResourceType {
  readonly apiVersion: string;
  readonly kind: string;
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

/** The resource table: every kind of the kind table (objects/kinds.ts), with its API path's parts. */
const TYPES: readonly ResourceType[] = KIND_ROWS.map(({ kind, group, version, plural, namespaced }) => ({
  apiVersion: group === '' ? version : `${group}/${version}`,
  kind,
  group,
  version,
  plural,
  namespaced,
}));

/**
 * Kinds addressable by name alone. `Event` means `events.k8s.io/v1` (what EventRecorder writes);
 * core/v1 Events are reachable through a `KindRef`.
 */
export type ManagedKind = TableKind;

const BY_NAME: Readonly<Record<ManagedKind, ResourceType>> = (() => {
  const table: Partial<Record<string, ResourceType>> = {};
  for (const type of TYPES) {
    // The later entry wins: events.k8s.io/v1 Event over core/v1 Event.
    table[type.kind] = type;
  }
  return table as Record<ManagedKind, ResourceType>;
})();

/** The resource type of `apiVersion` + `kind`, or undefined when the agent does not manage it. */
export function findResourceType(apiVersion: string, kind: string): ResourceType | undefined {
  return TYPES.find((type) => type.apiVersion === apiVersion && type.kind === kind);
}

/** The resource type of a managed kind name or an explicit `apiVersion` + `kind`. */
export function resourceTypeOf(kind: ManagedKind | KindRef): ResourceType | undefined {
  return typeof kind === 'string' ? BY_NAME[kind] : findResourceType(kind.apiVersion, kind.kind);
}

export function isManagedKind(kind: string): kind is ManagedKind {
  return Object.hasOwn(BY_NAME, kind);
}

/**
 * The request path of a collection (no name) or of one object. A namespaced type without a
 * namespace gives the cluster-wide collection (list and watch across namespaces).
 */
export function resourcePath(type: ResourceType, namespace: string | undefined, name?: string): string {
  const root = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const scope =
    type.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const item = name === undefined ? '' : `/${encodeURIComponent(name)}`;
  return `${root}${scope}/${type.plural}${item}`;
}
