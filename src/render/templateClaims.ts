// The volume claims a StatefulSet's controller will bind for it: `<template>-<set>-<ordinal>`
// for each claim template and each ordinal below its replicas. The controller binds whatever claim
// already has that name, so these are references like any volume a pod names — and the only ones
// a deployment may name before they exist. Pure.
import { fieldAt } from '../objects/fields.ts';
import type { KubeObject } from '../objects/kubeObject.ts';

export interface TemplateClaim {
  readonly namespace: string;
  readonly name: string;
  /** Where the claim comes from, e.g. `StatefulSet/shop-db spec.volumeClaimTemplates[0](data)`. */
  readonly path: string;
}

/** Every claim the StatefulSets among the objects will bind, at their rendered scale. */
export function templateClaims(objects: readonly KubeObject[]): TemplateClaim[] {
  const claims: TemplateClaim[] = [];
  for (const set of objects) {
    if (set.kind !== 'StatefulSet') continue;
    const replicas = fieldAt(set, 'spec', 'replicas');
    // Unset replicas default to 1 on the API server.
    const scale = typeof replicas === 'number' && Number.isSafeInteger(replicas) ? replicas : 1;
    const templates = fieldAt(set, 'spec', 'volumeClaimTemplates');
    for (const [i, template] of (Array.isArray(templates) ? templates : []).entries()) {
      const name = fieldAt(template, 'metadata', 'name');
      if (typeof name !== 'string' || name === '') continue;
      for (let ordinal = 0; ordinal < scale; ordinal++) {
        claims.push({
          namespace: set.metadata.namespace ?? '',
          name: `${name}-${set.metadata.name}-${ordinal}`,
          path: `StatefulSet/${set.metadata.name} spec.volumeClaimTemplates[${i}](${name})`,
        });
      }
    }
  }
  return claims;
}
