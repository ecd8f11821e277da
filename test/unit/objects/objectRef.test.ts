// The text that names an object in messages, logs and Events.
import { describe, expect, it } from 'vitest';
import { formatLocalRef, formatObjectRef, formatRef } from '../../../src/objects/objectRef.ts';

describe('object reference text', () => {
  it.each([
    [{ kind: 'Deployment', namespace: 'apps', name: 'web' }, 'Deployment/apps/web'],
    [{ kind: 'Namespace', name: 'apps' }, 'Namespace/apps'],
    [{ kind: 'ConfigMap', namespace: 'apps' }, 'ConfigMap/apps'],
    [{ kind: 'Secret', namespace: '', name: 'creds' }, 'Secret/creds'],
  ])('formatRef(%j) is %s', (ref, text) => {
    expect(formatRef(ref)).toBe(text);
  });

  it('names an object by its metadata, and within its namespace by kind and name alone', () => {
    const object = { kind: 'Service', metadata: { namespace: 'apps', name: 'web' } };
    expect(formatObjectRef(object)).toBe('Service/apps/web');
    expect(formatLocalRef(object)).toBe('Service/web');
    expect(formatLocalRef({ kind: 'Secret', name: 'creds' })).toBe('Secret/creds');
  });
});
