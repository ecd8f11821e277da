import { describe, expect, it } from 'vitest';
import { diffText, exitStatus } from '../../../src/cli/diff.ts';
import type { Preview } from '../../../src/cli/diffPreview.ts';
import type { ChangeSetEntry } from '../../../src/kube/serverDiff.ts';
import { describeCounts, formatChange, objectYaml } from '../../../src/report/changeSetText.ts';

const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm' };
const cm = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'cm' },
  data,
});

describe('objectYaml', () => {
  it('sorts keys at every level, quoting as YAML 1.1 (kubectl) reads it', () => {
    expect(objectYaml({ z: 1, a: { y: 'no', b: [{ d: 1, c: 2 }] } })).toBe(
      'a:\n  b:\n    - c: 2\n      d: 1\n  "y": "no"\nz: 1\n',
    );
  });
});

describe('formatChange', () => {
  it.each<[string, ChangeSetEntry, string]>([
    [
      'unchanged prints nothing',
      { ref, action: 'unchanged', before: cm({ a: '1' }), after: cm({ a: '1' }) },
      '',
    ],
    [
      'configure: live against after apply',
      { ref, action: 'configure', before: cm({ a: '1' }), after: cm({ a: '2' }) },
      '--- ConfigMap/ns/cm (live)\n+++ ConfigMap/ns/cm (after apply)\n@@ -1,6 +1,6 @@\n apiVersion: v1\n data:\n-  a: "1"\n+  a: "2"\n kind: ConfigMap\n metadata:\n   name: cm\n',
    ],
    [
      "configure, with why run writes it (a drifted field's path, escaped for the terminal)",
      { ref, action: 'configure', before: cm({ a: '1' }), after: cm({ a: '2' }), reason: 'data.a\u001b[2K' },
      '# ConfigMap/ns/cm: data.a\\x1b[2K\n--- ConfigMap/ns/cm (live)\n+++ ConfigMap/ns/cm (after apply)\n@@ -1,6 +1,6 @@\n apiVersion: v1\n data:\n-  a: "1"\n+  a: "2"\n kind: ConfigMap\n metadata:\n   name: cm\n',
    ],
    [
      'create: a whole addition from /dev/null',
      { ref, action: 'create', before: undefined, after: cm({ a: '1' }) },
      '--- /dev/null\n+++ ConfigMap/ns/cm (after apply)\n@@ -0,0 +1,6 @@\n+apiVersion: v1\n+data:\n+  a: "1"\n+kind: ConfigMap\n+metadata:\n+  name: cm\n',
    ],
    [
      'prune: a whole deletion to /dev/null',
      { ref, action: 'prune', before: cm({ a: '1' }), after: undefined },
      '--- ConfigMap/ns/cm (live)\n+++ /dev/null\n@@ -1,6 +0,0 @@\n-apiVersion: v1\n-data:\n-  a: "1"\n-kind: ConfigMap\n-metadata:\n-  name: cm\n',
    ],
  ])('%s', (_name, entry, expected) => {
    expect(formatChange(entry)).toBe(expected);
  });

  it('marks a changed Secret key on both sides although both read (changed)', () => {
    const secret = (data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Secret', data });
    const text = formatChange({
      ref: { ...ref, kind: 'Secret' },
      action: 'configure',
      before: secret({ a: '(changed)', b: '(unchanged)' }),
      after: secret({ a: '(changed)', b: '(unchanged)' }),
    });
    expect(text).toContain(
      '@@ -1,5 +1,5 @@\n apiVersion: v1\n data:\n-  a: (changed)\n+  a: (changed)\n   b: (unchanged)\n',
    );
    expect(text).not.toContain('k8s-listener-changed');
  });
});

describe('describeCounts', () => {
  it.each([
    [{ create: 0, configure: 0, unchanged: 4, prune: 0 }, 'no changes'],
    [{ create: 1, configure: 0, unchanged: 0, prune: 2 }, '1 to create, 2 to prune'],
    [{ create: 1, configure: 3, unchanged: 1, prune: 2 }, '1 to create, 3 to configure, 2 to prune'],
  ])('%j → %s', (counts, text) => {
    expect(describeCounts(counts)).toBe(text);
  });
});

describe('diff command output and exit status', () => {
  const present = (changes: ChangeSetEntry[]) => ({
    id: 'id-1',
    name: 'web',
    state: 'present' as const,
    agentChange: false,
    namespace: 'ns',
    revisionId: 'rev-1',
    changes,
  });
  const unchanged: ChangeSetEntry = { ref, action: 'unchanged', before: cm({}), after: cm({}) };
  const pruned: ChangeSetEntry = { ref, action: 'prune', before: cm({}), after: undefined };

  it.each<[string, Preview, number]>([
    ['nothing to do', { deployments: [present([unchanged])], warnings: [] }, 0],
    ['no deployments at all', { deployments: [], warnings: [] }, 0],
    ['a change', { deployments: [present([unchanged, pruned])], warnings: [] }, 1],
    [
      'an invalid deployment wins over changes',
      {
        deployments: [
          present([pruned]),
          { id: 'id-2', name: 'bad', state: 'invalid', problems: [{ path: 'x', message: 'y' }] },
        ],
        warnings: [],
      },
      2,
    ],
    [
      'a deployment that would fail',
      { deployments: [{ id: 'id-3', name: undefined, state: 'failed', message: 'm' }], warnings: [] },
      2,
    ],
  ])('%s → %i', (_name, preview, status) => {
    expect(exitStatus(preview)).toBe(status);
  });

  it('prints a line per deployment, the diffs, and the total', () => {
    const text = diffText({
      deployments: [
        present([unchanged]),
        { id: 'id-9', name: undefined, state: 'deleted', reason: 'gone', changes: [pruned] },
      ],
      warnings: [],
    });
    expect(text).toBe(
      '# deployment web (id-1), namespace ns, revision rev-1: no changes\n' +
        '# deployment id-9, gone from the control plane: 1 to prune\n' +
        '--- ConfigMap/ns/cm (live)\n+++ /dev/null\n@@ -1,5 +0,0 @@\n-apiVersion: v1\n-data: {}\n-kind: ConfigMap\n-metadata:\n-  name: cm\n' +
        '1 to prune\n',
    );
  });
});
