// How an object is named in messages, logs and Events: `Kind/namespace/name`, or `Kind/name` where
// the namespace goes without saying (one deployment's objects, all in its namespace).

/** What the text of a reference reads. */
export interface RefParts {
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
}

/** `Kind/namespace/name` (or `Kind/name` for cluster-scoped objects): how errors and logs name an object. */
export function formatRef(ref: RefParts): string {
  const parts = [ref.kind];
  if (ref.namespace !== undefined && ref.namespace !== '') parts.push(ref.namespace);
  if (ref.name !== undefined) parts.push(ref.name);
  return parts.join('/');
}

/** `formatRef` of an object, read off its metadata. */
export function formatObjectRef(object: {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string | undefined };
}): string {
  return formatRef({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name });
}

/** `Kind/name`: one of a deployment's objects, named within its namespace (a reference or an object). */
export function formatLocalRef(
  ref:
    | { readonly kind: string; readonly name: string }
    | { readonly kind: string; readonly metadata: { readonly name: string } },
): string {
  return `${ref.kind}/${'metadata' in ref ? ref.metadata.name : ref.name}`;
}
