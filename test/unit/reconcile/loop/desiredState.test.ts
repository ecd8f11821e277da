// The one desired-state rule: a listed deployment and its revision listing resolved (an unreadable
// revision makes it invalid, else its target revision), rendered, and what its reports and log
// lines say of it.
import { describe, expect, it } from 'vitest';
import type { InvalidItem } from '../../../../src/controlplane/client.ts';
import { SchemaValidationError } from '../../../../src/controlplane/parse.ts';
import type { Deployment, Revision } from '../../../../src/controlplane/schemas/index.ts';
import {
  type DesiredEntry,
  failedRevisionOf,
  isDeleted,
  logFieldsOf,
  type PresentEntry,
  renderEntry,
  resolveDesired,
  revisionOf,
} from '../../../../src/reconcile/loop/desiredState.ts';
import { chooseTarget, deploymentFingerprint } from '../../../../src/reconcile/loop/target.ts';
import { RenderConfig } from '../../../../src/render/index.ts';
import { listener, minimalDeployment } from '../../../support/renderFixtures.ts';

const revision = (id: string, created: string, image = `img:${id}`): Revision => ({
  id,
  created_at: created,
  updated_at: created,
  status: 'AWAITING_DEPLOY',
  source: 'external_container',
  source_revision_config: { image_uri: image },
});
const deployment: Deployment = { ...minimalDeployment, latest_revision_id: 'r1' };
const r1 = revision('r1', '2026-11-01T00:00:00Z');
const r2 = revision('r2', '2026-11-02T00:00:00Z');
const unreadable: InvalidItem = {
  id: 'r3',
  error: new SchemaValidationError('revision', 'r3', [{ path: 'status', message: 'unknown value' }]),
};
const present = (over: Partial<PresentEntry> = {}): PresentEntry => ({
  kind: 'present',
  deployment,
  target: { revision: r1, settled: undefined },
  fingerprint: 'f1',
  ...over,
});

describe('resolveDesired', () => {
  it('holds a deployment with an unreadable revision invalid, naming that revision', () => {
    const entry = resolveDesired(deployment, { items: [r1], invalid: [unreadable] });
    expect(entry).toMatchObject({ kind: 'invalid', message: unreadable.error.message });
  });

  it('reports an invalid deployment on the failing revision the caller names', () => {
    const entry = resolveDesired(
      deployment,
      { items: [r1], invalid: [unreadable] },
      { failingRevision: 'r1' },
    );
    expect(entry).toMatchObject({ kind: 'invalid', revisionId: 'r1' });
  });

  it('reports an invalid deployment on no revision when the caller names none', () => {
    const entry = resolveDesired(deployment, { items: [r1], invalid: [unreadable] });
    expect(entry.kind === 'invalid' && entry.revisionId).toBeUndefined();
  });

  it("is present with chooseTarget's target when every revision reads", () => {
    const entry = resolveDesired(deployment, { items: [r1, r2], invalid: [] });
    expect(entry.kind === 'present' && entry.target).toEqual(chooseTarget(deployment, [r1, r2]));
  });

  it("carries the deployment's fingerprint and the listed digest", () => {
    const entry = resolveDesired(deployment, { items: [r1], invalid: [] }, { listedDigest: 'digest-1' });
    expect(entry).toMatchObject({ fingerprint: deploymentFingerprint(deployment), listedDigest: 'digest-1' });
  });
});

describe('renderEntry', () => {
  it("renders the target revision's image", () => {
    const entry = present({
      target: { revision: revision('r1', '2026-11-01T00:00:00Z', 'example/web:2'), settled: undefined },
    });
    const result = renderEntry(entry, { listener, allowedNamespaces: undefined }, RenderConfig.parse({}));
    expect(result.ok && JSON.stringify(result.value.objects)).toContain('example/web:2');
  });

  it("renders into the deployment's namespace", () => {
    const result = renderEntry(present(), { listener, allowedNamespaces: undefined }, RenderConfig.parse({}));
    expect(result.ok && result.value.namespace).toBe('apps');
  });
});

describe('revisionOf', () => {
  it('is the target revision', () => {
    expect(revisionOf(present({ target: { revision: r2, settled: undefined } }))).toBe('r2');
  });

  it("is the deployment's latest without a target revision", () => {
    expect(revisionOf(present({ target: { revision: undefined, settled: undefined } }))).toBe('r1');
  });

  it('is none with neither', () => {
    const entry = present({
      deployment: { ...deployment, latest_revision_id: null },
      target: { revision: undefined, settled: undefined },
    });
    expect(revisionOf(entry)).toBeUndefined();
  });
});

describe('failedRevisionOf', () => {
  it.each<[string, DesiredEntry | undefined, string | undefined]>([
    ["a present entry: its target's", present({ target: { revision: r2, settled: undefined } }), 'r2'],
    ['an invalid entry: the one it names', { kind: 'invalid', message: 'x', revisionId: 'r3' }, 'r3'],
    ['a gone entry: none', { kind: 'gone' }, undefined],
    ['no entry: none', undefined, undefined],
  ])('is, for %s', (_what, entry, expected) => {
    expect(failedRevisionOf(entry)).toBe(expected);
  });
});

describe('isDeleted', () => {
  it.each<[string, DesiredEntry, boolean]>([
    ['gone from a complete listing', { kind: 'gone' }, true],
    ['listed AWAITING_DELETE', present({ deployment: { ...deployment, status: 'AWAITING_DELETE' } }), true],
    ['listed otherwise', present(), false],
    ['invalid', { kind: 'invalid', message: 'x' }, false],
  ])('is %s → %s', (_what, entry, expected) => {
    expect(isDeleted(entry)).toBe(expected);
  });
});

describe('logFieldsOf', () => {
  it('names the revision and namespace of a present entry', () => {
    expect(logFieldsOf(present(), [])).toEqual({ revisionId: 'r1', namespace: 'apps' });
  });

  it('names the one namespace its objects are in otherwise', () => {
    expect(logFieldsOf({ kind: 'gone' }, ['apps'])).toEqual({ namespace: 'apps' });
  });

  it('names no namespace when its objects are in several', () => {
    expect(logFieldsOf(undefined, ['apps', 'apps-staging'])).toEqual({});
  });
});
