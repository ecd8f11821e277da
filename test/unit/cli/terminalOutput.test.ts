// Every control character and several ANSI/OSC sequences, in the strings a tenant sets (names,
// label keys, annotations) and in what the servers answer, through each command's printers: the
// status table and detail, diff (text, JSON, YAML, its problems), check (text, JSON), render (YAML
// and its problems). Nothing prints raw but the layout's own newlines, and no row is added or lost.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { formatChecklist, runCheckCommand } from '../../../src/cli/check.ts';
import { formatDiffOutput, problemsText } from '../../../src/cli/diff.ts';
import type { DeploymentPreview, Preview } from '../../../src/cli/diffPreview.ts';
import { runRenderCommand } from '../../../src/cli/render.ts';
import { formatStatusSnapshot, type StatusSnapshot } from '../../../src/cli/status.ts';
import type { ChangeSetEntry } from '../../../src/kube/serverDiff.ts';
import { RenderConfig, renderFromJson } from '../../../src/render/index.ts';
import {
  type DeploymentDetail,
  deriveStatusRow,
  type StatusRow,
} from '../../../src/report/deploymentStatusRow.ts';
import { HOSTILE_STRINGS, rawControls } from '../../support/terminalControls.ts';
import { textSink } from '../../support/textSink.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const LISTENER_ID = '7c0e2a4e-4d7b-4c37-9a53-0f1f6a3e8b11';
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;
const minimal = fixture('deployment-minimal.json');
const listener = fixture('listener.json');

/** Stands for a hostile string where the layout of the output is the same without it. */
const BENIGN = 'x';
const idOf = (i: number) => `9a1b2c3d-4e5f-4a6b-8c7d-${String(i).padStart(12, '0')}`;

/** A deployment named by the hostile string, carrying it as an annotation value too. */
function deploymentWith(hostile: string, i: number, extra: Record<string, unknown> = {}) {
  const sourceConfig = minimal.source_config as Record<string, unknown>;
  return {
    ...minimal,
    id: idOf(i),
    name: `web${hostile}`,
    source_config: {
      ...sourceConfig,
      resource_spec: { annotations: { note: hostile }, ...extra },
    },
  };
}

/** The render-problem path: a label key carrying the hostile string is refused, naming the key. */
function renderProblems(hostile: string, i: number) {
  const result = renderFromJson(
    { deployment: deploymentWith(hostile, i, { labels: { [`k${hostile}`]: 'v' } }), listener },
    RenderConfig.parse({}),
  );
  if (result.ok) throw new Error(`a label key ${JSON.stringify(hostile)} was accepted`);
  return result.error;
}

function renderedObjects(hostile: string, i: number) {
  const result = renderFromJson({ deployment: deploymentWith(hostile, i), listener }, RenderConfig.parse({}));
  if (!result.ok) throw new Error(`${JSON.stringify(hostile)}: ${result.error.message}`);
  return result.value.objects;
}

const lineCount = (text: string) => text.replace(/\n$/, '').split('\n').length;

describe('status prints a tenant’s strings escaped', () => {
  const row = (hostile: string, i: number, invalid = renderProblems(hostile, i).message): StatusRow =>
    deriveStatusRow({
      id: idOf(i),
      name: `web${hostile}`,
      namespace: `apps${hostile}`,
      revisionId: `rev${hostile}`,
      revisionStatus: `DEPLOYED${hostile}`,
      revisionUpdatedAt: '2026-11-22T11:00:00Z',
      settled: undefined,
      deleting: undefined,
      // As the status collector: the message of the render error, which names the label key.
      invalid,
      annotation: undefined,
      objects: [],
      claims: [],
      now: NOW,
      failureGraceMs: 60_000,
    });
  const rows = HOSTILE_STRINGS.map((h, i) => row(h, i));
  const list: StatusSnapshot = {
    kind: 'list',
    value: { listenerId: LISTENER_ID, observedAt: '2026-11-22T12:00:00Z', deployments: rows },
  };

  it('the table: one line per deployment, none raw, the OSC label key shown escaped', () => {
    expect(rows.map((r) => r.message).join('')).toContain('\x1b]8;;http://evil.example/');
    const table = formatStatusSnapshot(list, 'table', NOW);
    expect(rawControls(table)).toEqual([]);
    const lines = table.replace(/\n$/, '').split('\n');
    expect(lines).toHaveLength(rows.length + 1);
    expect(lines.slice(1).every((line) => line.startsWith('web'))).toBe(true);
    expect(table).toContain('\\x1b]8;;http://evil.example/\\x07');
    expect(table).toContain('web\\x1b[1A\\x1b[2K');
    expect(table).toContain('webevil\\u202eelif.yaml');
    // Invisible characters too: `billing-api\u200b` never reads as `billing-api`.
    expect(table).toContain('webbilling-api\\u200b ');
    expect(table).toContain('webbilling-api\\u2060 ');
    // The MESSAGE column starts at the same place on every line: no cell moved it.
    const at = lines[0]?.indexOf('MESSAGE');
    expect(lines.slice(1).every((line) => line.slice(at).startsWith('deployment '))).toBe(true);
  });

  it.each(HOSTILE_STRINGS.map((h, i) => [JSON.stringify(h), h, i] as const))(
    'the detail of %s: as many lines as with plain text, none raw',
    (_name, hostile, i) => {
      const detail = (s: string): DeploymentDetail => ({
        listenerId: LISTENER_ID,
        observedAt: '2026-11-22T12:00:00Z',
        deployment: {
          ...row(s, i, renderProblems(hostile, i).message.replaceAll(hostile, s)),
          id: `id${s}`,
        },
        objects: [
          {
            apiVersion: 'apps/v1',
            kind: `Deployment${s}`,
            namespace: `apps${s}`,
            name: `web${s}`,
            component: `main${s}`,
            status: `Current${s}`,
            reason: `Current${s}`,
            message: `ready${s}`,
            drift: null,
          },
          {
            apiVersion: 'v1',
            kind: 'Service',
            namespace: 'apps',
            name: `web${s}`,
            component: 'main',
            status: 'Current',
            reason: 'Current',
            message: 'ok',
            drift: `metadata.annotations.k${s}`,
          },
        ],
        events: [
          {
            time: '2026-11-22T11:59:00Z',
            type: `Warning${s}`,
            reason: `BackOff${s}`,
            object: `Pod/web${s}`,
            message: `Back-off pulling image "img${s}"`,
            count: 2,
          },
        ],
      });
      const printed = formatStatusSnapshot({ kind: 'detail', value: detail(hostile) }, 'table', NOW);
      expect(rawControls(printed)).toEqual([]);
      expect(lineCount(printed)).toBe(
        lineCount(formatStatusSnapshot({ kind: 'detail', value: detail(BENIGN) }, 'table', NOW)),
      );
    },
  );

  it.each(['json', 'yaml'] as const)('--output %s: none raw, and the same values when parsed', (output) => {
    const printed = formatStatusSnapshot(list, output, NOW);
    expect(rawControls(printed)).toEqual([]);
    expect(output === 'json' ? JSON.parse(printed) : parse(printed)).toEqual(list.value);
  });
});

describe('diff prints a tenant’s strings escaped', () => {
  const objects = HOSTILE_STRINGS.map(renderedObjects);
  const benignObjects = renderedObjects(BENIGN, 0);
  const byKind = (list: typeof benignObjects, kind: string) => {
    const found = list.find((o) => o.kind === kind);
    if (!found) throw new Error(`no ${kind}`);
    return found as unknown as Record<string, unknown> & { metadata: { name: string; namespace: string } };
  };
  const entries = (list: typeof benignObjects): ChangeSetEntry[] => {
    const deployment = byKind(list, 'Deployment');
    const service = byKind(list, 'Service');
    const ref = (o: typeof deployment) => ({
      apiVersion: String(o.apiVersion),
      kind: String(o.kind),
      namespace: o.metadata.namespace,
      name: o.metadata.name,
    });
    return [
      {
        ref: ref(deployment),
        action: 'configure',
        before: byKind(benignObjects, 'Deployment'),
        after: deployment,
      },
      { ref: ref(service), action: 'create', before: undefined, after: service },
      {
        ref: { ...ref(service), name: `old${String(deployment.metadata.name)}` },
        action: 'prune',
        before: service,
        after: undefined,
      },
    ];
  };
  const preview: Preview = {
    warnings: HOSTILE_STRINGS.map((h) => `prune of deployment web${h} refused`),
    deployments: HOSTILE_STRINGS.flatMap((h, i): DeploymentPreview[] => [
      {
        id: idOf(i),
        name: `web${h}`,
        state: 'present',
        agentChange: false,
        namespace: `apps${h}`,
        revisionId: `rev${h}`,
        changes: entries(objects[i] ?? []),
      },
      {
        id: `gone${h}`,
        name: `gone${h}`,
        state: 'deleted',
        reason: 'gone',
        changes: entries(objects[i] ?? []).slice(2),
      },
      { id: idOf(i), name: `bad${h}`, state: 'invalid', problems: renderProblems(h, i).problems },
      { id: idOf(i), name: undefined, state: 'failed', message: `refused: ${h}` },
    ]),
  };

  it('the diff: none raw, every line a header, hunk or total line, hunks counted right', () => {
    const text = formatDiffOutput(preview, 'diff');
    expect(rawControls(text)).toEqual([]);
    expect(text).toContain('k8s-listener.io/deployment-name: "web\\e[1A\\e[2K"');
    expect(text).toContain('# deployment web\\x1b[1A\\x1b[2K (');
    expectWellFormedDiff(text);
  });

  it.each(['json', 'yaml'] as const)(
    '--output %s: none raw, and the tenant’s strings intact when parsed',
    (output) => {
      const printed = formatDiffOutput(preview, output);
      expect(rawControls(printed)).toEqual([]);
      const document = (output === 'json' ? JSON.parse(printed) : parse(printed)) as {
        deployments: { name?: string }[];
        warnings: string[];
      };
      expect(document.deployments.map((d) => d.name)).toEqual(preview.deployments.map((d) => d.name));
      expect(document.warnings).toEqual(preview.warnings);
    },
  );

  it('the problems on stderr: one line per deployment and per problem, none raw', () => {
    const text = problemsText(preview);
    expect(rawControls(text)).toEqual([]);
    const expected = preview.deployments.reduce(
      (sum, d) => sum + (d.state === 'invalid' ? 1 + d.problems.length : d.state === 'failed' ? 1 : 0),
      0,
    );
    expect(lineCount(text)).toBe(expected);
    expect(text).toContain('labels.k\\x1b]8;;http://evil.example/\\x07');
  });
});

/** Each line is a comment, a total, a file header or a hunk line, and each hunk has the lines its header counts. */
function expectWellFormedDiff(text: string): void {
  const lines = text.replace(/\n$/, '').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    if (line.startsWith('# ') || /^(no changes|\d+ to \w+(, \d+ to \w+)*)$/.test(line)) {
      i++;
      continue;
    }
    expect(line).toMatch(/^--- /);
    expect(lines[i + 1]).toMatch(/^\+\+\+ /);
    i += 2;
    while ((lines[i] ?? '').startsWith('@@ ')) {
      const header = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@$/.exec(lines[i] ?? '');
      expect(header).not.toBeNull();
      let before = header?.[1] === undefined ? 1 : Number(header[1]);
      let after = header?.[2] === undefined ? 1 : Number(header[2]);
      i++;
      while (before > 0 || after > 0) {
        const mark = (lines[i++] ?? '')[0];
        expect([' ', '-', '+']).toContain(mark);
        if (mark !== '+') before--;
        if (mark !== '-') after--;
      }
      expect([before, after]).toEqual([0, 0]);
    }
  }
}

describe('check prints what the servers answer escaped', () => {
  let server: Server;
  let body = '';
  let url = '';
  beforeAll(async () => {
    // A control plane that refuses the API key, its error message the hostile string.
    server = createServer((_request, response) => {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'forbidden', message: body } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const check = async (hostile: string, output: 'text' | 'json') => {
    body = `no access for ${hostile}`;
    const out = textSink();
    const code = await runCheckCommand(
      [
        ...['--listener-id', LISTENER_ID, '--control-plane', url, '--namespaces', 'apps'],
        ...['--kubeconfig', join(tmpdir(), 'no-such-kubeconfig'), '--output', output],
      ],
      { stdout: out.stream, stderr: textSink().stream },
    );
    expect(code).toBe(1);
    return out.text();
  };

  it.each(HOSTILE_STRINGS.map((h) => [JSON.stringify(h), h] as const))(
    'a control plane answering %s: the same lines as for plain text, none raw',
    async (_name, hostile) => {
      const text = await check(hostile, 'text');
      expect(rawControls(text)).toEqual([]);
      expect(text).toContain('    reason: GET /v2/listeners/');
      expect(lineCount(text)).toBe(lineCount(await check(BENIGN, 'text')));
      const json = await check(hostile, 'json');
      expect(rawControls(json)).toEqual([]);
      expect(JSON.stringify(JSON.parse(json))).toContain(JSON.stringify(hostile).slice(1, -1));
    },
  );

  it('a checklist whose titles, reasons and fixes all carry them: three lines a check and the total', () => {
    const checks = HOSTILE_STRINGS.map((h, i) => ({
      id: `namespace/${i}`,
      ok: false,
      title: `namespace apps${h} could not be checked`,
      reason: `the API server said ${h}`,
      fix: `kubectl create namespace apps${h}`,
    }));
    const text = formatChecklist({ ok: false, version: '0.0.0', checks });
    expect(rawControls(text)).toEqual([]);
    expect(lineCount(text)).toBe(3 * checks.length + 1);
  });
});

describe('render prints a tenant’s strings escaped, and kubectl reads the same values', () => {
  const dir = mkdtempSync(join(tmpdir(), 'render-terminal-'));

  async function render(deployment: unknown): Promise<{ code: number; stdout: string; stderr: string }> {
    const file = join(dir, 'deployment.json');
    writeFileSync(file, JSON.stringify(deployment));
    let stdout = '';
    let stderr = '';
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      stdout += String(chunk);
      return true;
    });
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr += String(chunk);
      return true;
    });
    try {
      return { code: await runRenderCommand(['--file', file]), stdout, stderr };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  }

  it.each(HOSTILE_STRINGS.map((h, i) => [JSON.stringify(h), h, i] as const))(
    '%s in the name and an annotation: YAML with none raw, the values intact',
    async (_name, hostile, i) => {
      const { code, stdout } = await render(deploymentWith(hostile, i));
      expect(code).toBe(0);
      expect(rawControls(stdout)).toEqual([]);
      const documents = parseAllDocuments(stdout, { version: '1.1' }).map(
        (d) => d.toJSON() as { metadata: { annotations: Record<string, string> } },
      );
      expect(documents.length).toBe(stdout.match(/^# Source: /gm)?.length);
      for (const object of documents) {
        expect(object.metadata.annotations['k8s-listener.io/deployment-name']).toBe(`web${hostile}`);
      }
      const workload = documents.find(
        (d) => (d as unknown as { kind: string }).kind === 'Deployment',
      ) as unknown as {
        spec: { template: { metadata: { annotations: Record<string, string> } } };
      };
      expect(workload.spec.template.metadata.annotations.note).toBe(hostile);
    },
  );

  it.each(HOSTILE_STRINGS.map((h, i) => [JSON.stringify(h), h, i] as const))(
    'a label key with %s: the problems on stderr, a line each, none raw',
    async (_name, hostile, i) => {
      const { code, stdout, stderr } = await render(
        deploymentWith(hostile, i, { labels: { [`k${hostile}`]: 'v' } }),
      );
      expect([code, stdout]).toEqual([1, '']);
      expect(rawControls(stderr)).toEqual([]);
      expect(lineCount(stderr)).toBe(1 + renderProblems(hostile, i).problems.length);
    },
  );
});
