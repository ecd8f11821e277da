// The namespaces a listener's deployments are managed in: never the agent's own.
import { describe, expect, it } from 'vitest';
import { managedNamespaces } from '../../../../src/reconcile/policy/managedNamespaces.ts';

describe("the agent's own namespace", () => {
  it('is never managed, whatever the listener lists and the allow-list says', () => {
    const listener = {
      id: '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11',
      compute_type: 'k8s',
      compute_id: 'c',
      compute_config: { k8s_namespaces: ['apps', 'k8s-listener', 'team'] },
      created_at: '2026-11-25T00:00:00Z',
      updated_at: '2026-11-25T00:00:00Z',
      version: null,
    };
    expect(managedNamespaces(listener, undefined, 'k8s-listener')).toEqual(['apps', 'team']);
    expect(managedNamespaces(listener, ['apps', 'k8s-listener'], 'k8s-listener')).toEqual(['apps']);
  });
});
