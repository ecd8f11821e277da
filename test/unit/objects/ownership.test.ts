// Whose an object is, read off its labels: every ownership rule of objects/ownership.ts.
import { describe, expect, it } from 'vitest';
import {
  AGENT_NAME,
  ANNOTATION_CREATE_ONLY,
  ANNOTATION_GENERATED_KEYS,
  agentHolder,
  DATABASE_COMPONENT,
  isBoundTo,
  isCreateOnly,
  isPruned,
  isThisDeployments,
  LABEL_COMPONENT,
  LABEL_DEPLOYMENT_ID,
  LABEL_LISTENER_ID,
  LABEL_MANAGED_BY,
  referenceOwner,
  sameListener,
} from '../../../src/objects/ownership.ts';

function labelled(labels: Record<string, string>, annotations: Record<string, string> = {}) {
  return { kind: 'Secret', metadata: { name: 'x', namespace: 'apps', labels, annotations } };
}

const mine = labelled({ [LABEL_LISTENER_ID]: 'L', [LABEL_DEPLOYMENT_ID]: 'D' });

describe('ownership rules', () => {
  it.each([
    ['this deployment of this listener', mine, true],
    ['another deployment', labelled({ [LABEL_LISTENER_ID]: 'L', [LABEL_DEPLOYMENT_ID]: 'E' }), false],
    ['another listener', labelled({ [LABEL_LISTENER_ID]: 'M', [LABEL_DEPLOYMENT_ID]: 'D' }), false],
    ['no labels', labelled({}), false],
  ])('isThisDeployments: %s', (_, live, expected) => {
    expect(isThisDeployments(live, 'L', 'D')).toBe(expected);
  });

  it.each([
    ['a deployment id and a listener id', { [LABEL_DEPLOYMENT_ID]: 'E', [LABEL_LISTENER_ID]: 'M' }, 'E', 'M'],
    [
      'a deployment id and the managed-by label',
      { [LABEL_DEPLOYMENT_ID]: 'E', [LABEL_MANAGED_BY]: AGENT_NAME },
      'E',
      undefined,
    ],
    ['a deployment id alone (a copy)', { [LABEL_DEPLOYMENT_ID]: 'E' }, undefined, undefined],
    ['the agent marks without a deployment', { [LABEL_MANAGED_BY]: AGENT_NAME }, undefined, undefined],
  ])('agentHolder: %s', (_, labels, deploymentId, listenerId) => {
    const holder = agentHolder(labelled(labels));
    expect(holder?.deploymentId).toBe(deploymentId);
    expect(holder?.listenerId).toBe(listenerId);
  });

  it('referenceOwner: the platform’s only without any of the agent’s marks', () => {
    expect(referenceOwner(labelled({}), 'D')).toEqual({ owner: 'platform' });
    expect(referenceOwner(mine, 'D')).toEqual({ owner: 'this' });
    expect(referenceOwner(labelled({ [LABEL_LISTENER_ID]: 'M' }), 'D').owner).toBe('other');
    expect(referenceOwner(labelled({ [LABEL_MANAGED_BY]: AGENT_NAME }), 'D').owner).toBe('other');
  });

  it('isPruned: this deployment’s, but not kept database credentials while volumes are kept', () => {
    const credentials = labelled(
      { [LABEL_LISTENER_ID]: 'L', [LABEL_DEPLOYMENT_ID]: 'D', [LABEL_COMPONENT]: DATABASE_COMPONENT },
      { [ANNOTATION_GENERATED_KEYS]: 'password' },
    );
    expect(isPruned(credentials, 'L', 'D', true)).toBe(false);
    expect(isPruned(credentials, 'L', 'D', false)).toBe(true);
    expect(
      isPruned(labelled({ [LABEL_LISTENER_ID]: 'L', [LABEL_DEPLOYMENT_ID]: 'E' }), 'L', 'D', false),
    ).toBe(false);
  });

  it('sameListener, isBoundTo and isCreateOnly', () => {
    expect(sameListener(mine, labelled({ [LABEL_LISTENER_ID]: 'L' }))).toBe(true);
    expect(sameListener(mine, labelled({}))).toBe(false);
    expect(isBoundTo({ source_config: { listener_id: 'L' } }, 'L')).toBe(true);
    expect(isBoundTo({ source_config: { listener_id: null } }, 'L')).toBe(false);
    expect(isCreateOnly(labelled({}, { [ANNOTATION_CREATE_ONLY]: 'true' }))).toBe(true);
    expect(isCreateOnly(labelled({}))).toBe(false);
  });
});
