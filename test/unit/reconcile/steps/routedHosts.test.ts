// A host is one deployment's, whether an Ingress or an HTTPRoute routes it (the listing of both
// kinds: hostRegistry.test.ts).
import { describe, expect, it } from 'vitest';
import type { LiveKubeObject } from '../../../../src/kube/decode.ts';
import {
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
} from '../../../../src/objects/ownership.ts';
import {
  hostHolder,
  hostsOf,
  isRouteKind,
  routedHosts,
} from '../../../../src/reconcile/steps/routedHosts.ts';

const LISTENER = 'listener-1';

function live(
  kind: 'Ingress' | 'HTTPRoute',
  name: string,
  spec: Record<string, unknown>,
  created: string,
  owner?: string,
): LiveKubeObject {
  const labels: Record<string, string> = owner
    ? { [LABEL_MANAGED_BY]: 'k8s-listener', [LABEL_LISTENER_ID]: LISTENER, [LABEL_DEPLOYMENT_ID]: owner }
    : {};
  return {
    apiVersion: kind === 'Ingress' ? 'networking.k8s.io/v1' : 'gateway.networking.k8s.io/v1',
    kind,
    metadata: {
      name,
      namespace: 'apps',
      creationTimestamp: created,
      labels,
      annotations: {},
      uid: name,
      resourceVersion: '1',
    },
    spec,
  };
}

const ingress = (name: string, host: string, created: string, owner?: string) =>
  live('Ingress', name, { rules: [{ host }] }, created, owner);
const httpRoute = (name: string, hosts: string[], created: string, owner?: string) =>
  live('HTTPRoute', name, { hostnames: hosts, rules: [] }, created, owner);

describe('routed hosts', () => {
  it('reads the hosts of an HTTPRoute as of an Ingress, lower-cased and once each', () => {
    expect(
      hostsOf(httpRoute('a', ['Web.Example.test', 'web.example.test', 'api.example.test'], 't')),
    ).toEqual(['web.example.test', 'api.example.test']);
    expect(hostsOf(ingress('a', 'Web.Example.test', 't'))).toEqual(['web.example.test']);
    expect(
      routedHosts([httpRoute('a', ['web.example.test'], 't'), ingress('b', 'web.example.test', 't')]),
    ).toEqual(['web.example.test']);
    expect(isRouteKind('HTTPRoute')).toBe(true);
    expect(isRouteKind('Service')).toBe(false);
  });

  it('gives a host to its oldest route, whichever kind each is', () => {
    const older = ingress('old', 'web.example.test', '2026-01-01T00:00:00Z', 'deployment-a');
    const newer = httpRoute('new', ['web.example.test'], '2026-02-01T00:00:00Z', 'deployment-b');
    expect(hostHolder('web.example.test', [newer, older], 'deployment-b', LISTENER)).toBe(
      'deployment deployment-a',
    );
    expect(hostHolder('web.example.test', [newer, older], 'deployment-a', LISTENER)).toBeUndefined();
    // A route of another tool, older, holds the host against an HTTPRoute of the agent's.
    const foreign = httpRoute('platform', ['web.example.test'], '2025-01-01T00:00:00Z');
    expect(hostHolder('web.example.test', [newer, foreign], 'deployment-b', LISTENER)).toBe(
      'HTTPRoute apps/platform, which this agent does not manage',
    );
  });
});
