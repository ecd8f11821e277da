import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { RenderError, renderDeployment } from '../../../src/render/index.ts';
import { config } from '../../support/renderFixtures.ts';
import { breakage, listener, validDeployment } from '../../support/specArbitraries.ts';

const cfg = config({ ingress: { className: 'nginx' } });
// DNS-1035: Services need a leading letter, and every name shares the deployment's base name.
const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

describe('render properties', () => {
  it('renders every valid spec into well-formed, owned, deterministic objects', () => {
    fc.assert(
      fc.property(validDeployment, (deployment) => {
        const input = { deployment, revision: undefined, listener, allowedNamespaces: undefined };
        const result = renderDeployment(input, cfg);
        if (!result.ok) throw result.error;
        const names = new Set<string>();
        for (const object of result.value.objects) {
          expect(object.metadata.name).toMatch(DNS_LABEL);
          expect(object.metadata.name.length).toBeLessThanOrEqual(object.kind === 'StatefulSet' ? 52 : 63);
          expect(object.metadata.labels[LABEL_DEPLOYMENT_ID]).toBe(deployment.id);
          names.add(`${object.kind}/${object.metadata.name}`);
        }
        expect(names.size).toBe(result.value.objects.length);
        expect(renderDeployment(structuredClone(input), cfg)).toEqual(result);
        // Secret values only ever appear base64-encoded inside the Secret.
        expect(JSON.stringify(result.value.objects)).not.toMatch(/value-of-/);
      }),
      { numRuns: 200 },
    );
  });

  it('gives a typed error naming the broken field for every broken spec, and never throws', () => {
    fc.assert(
      fc.property(validDeployment, breakage, (deployment, broken) => {
        broken.apply(deployment);
        const result = renderDeployment(
          { deployment, revision: undefined, listener, allowedNamespaces: undefined },
          cfg,
        );
        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect(result.error).toBeInstanceOf(RenderError);
        expect(result.error.problems.map((p) => p.path)).toContain(broken.path);
        expect(result.error.message).not.toMatch(/value-of-/);
      }),
      { numRuns: 300 },
    );
  });
});
