// The evidence of a failing pod, extracted from its status, Events and log tails: one table row
// per failure a tenant meets (a crash at import, an OOMKill, a failing probe, a missing image, no
// node), and the bounds every line keeps (masked, escaped, cut).
import { describe, expect, it } from 'vitest';
import {
  boundedEvidence,
  logTailLines,
  MAX_EVIDENCE_LINE,
  podEvidence,
} from '../../../src/report/failureEvidence.ts';
import { secretMask } from '../../../src/report/secretMask.ts';

const none = (text: string) => text;
const MISSING = `127.0.0.1:5000/k8s-listener-test/langgraph-server@sha256:${'0'.repeat(64)}`;
const UNPACK = `failed to pull and unpack image "${MISSING}": failed to resolve reference "${MISSING}": ${MISSING}: not found`;

function pod(status: Record<string, unknown>, limits: Record<string, string> = {}): unknown {
  return {
    metadata: { name: 'web-1', uid: 'u1' },
    spec: { containers: [{ name: 'api', resources: { limits } }] },
    status,
  };
}

const warning = (reason: string, note: string, at: string) => ({
  type: 'Warning',
  reason,
  note,
  deprecatedLastTimestamp: at,
});

describe('podEvidence', () => {
  const rows: {
    name: string;
    pod: unknown;
    events?: unknown[];
    logs?: Record<string, string>;
    expected: string[];
  }[] = [
    {
      name: 'a graph that fails at import: the back-off, the exit and the traceback’s last lines',
      pod: pod({
        containerStatuses: [
          {
            name: 'api',
            ready: false,
            restartCount: 3,
            state: {
              waiting: {
                reason: 'CrashLoopBackOff',
                message: 'back-off 40s restarting failed container=api',
              },
            },
            lastState: { terminated: { reason: 'Error', exitCode: 1 } },
          },
        ],
      }),
      logs: {
        api: 'Traceback (most recent call last):\n  File "graph.py", line 1\nImportError: no module named nope\n',
      },
      expected: [
        'pod web-1 container api: last exit: Error, exit code 1; restarts: 3',
        'pod web-1 container api: waiting: CrashLoopBackOff: back-off 40s restarting failed container=api',
        'pod web-1 container api previous instance, last 3 lines:',
        '  | Traceback (most recent call last):',
        '  |   File "graph.py", line 1',
        '  | ImportError: no module named nope',
      ],
    },
    {
      name: 'an OOMKill names the memory limit it hit',
      pod: pod(
        {
          containerStatuses: [
            {
              name: 'api',
              restartCount: 1,
              state: { running: {} },
              ready: false,
              lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } },
            },
          ],
        },
        { memory: '128Mi' },
      ),
      expected: [
        'pod web-1 container api: last exit: OOMKilled, exit code 137, memory limit 128Mi; restarts: 1',
        'pod web-1 container api: running, not ready',
      ],
    },
    {
      name: 'a failing readiness probe: the kubelet’s Event, the latest of each kind, oldest first',
      pod: pod({
        containerStatuses: [{ name: 'api', ready: false, restartCount: 0, state: { running: {} } }],
      }),
      events: [
        warning(
          'Unhealthy',
          'Readiness probe failed: HTTP probe failed with statuscode: 503',
          '2026-01-01T00:00:05Z',
        ),
        warning(
          'Unhealthy',
          'Readiness probe failed: HTTP probe failed with statuscode: 503',
          '2026-01-01T00:00:09Z',
        ),
        warning('BackOff', 'older', '2026-01-01T00:00:01Z'),
        { type: 'Normal', reason: 'Pulled', note: 'not a warning' },
      ],
      expected: [
        'pod web-1 container api: running, not ready; restarts: 0',
        'pod web-1 event BackOff: older',
        'pod web-1 event Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 503',
      ],
    },
    {
      name: 'a missing image: the registry’s words from the pull',
      pod: pod({
        containerStatuses: [
          {
            name: 'api',
            restartCount: 0,
            state: { waiting: { reason: 'ErrImagePull', message: 'manifest unknown: manifest unknown' } },
          },
        ],
      }),
      events: [
        warning('Failed', 'Failed to pull image "r/app@sha256:00": manifest unknown', '2026-01-01T00:00:01Z'),
      ],
      expected: [
        'pod web-1 container api: waiting: ErrImagePull: manifest unknown: manifest unknown; restarts: 0',
        'pod web-1 event Failed: Failed to pull image "r/app@sha256:00": manifest unknown',
      ],
    },
    {
      name: 'a digest the registry does not have, as the real node says it: the words at the end of each long line, the bare repeats of the reason left out',
      pod: pod({
        initContainerStatuses: [
          {
            name: 'wait',
            restartCount: 0,
            state: {
              waiting: { reason: 'ErrImagePull', message: `rpc error: code = NotFound desc = ${UNPACK}` },
            },
          },
        ],
      }),
      events: [
        warning(
          'Failed',
          `Failed to pull image "${MISSING}": rpc error: code = NotFound desc = ${UNPACK}`,
          '2026-01-01T00:00:01Z',
        ),
        warning('Failed', 'Error: ErrImagePull', '2026-01-01T00:00:02Z'),
        warning('Failed', 'Error: ImagePullBackOff', '2026-01-01T00:00:03Z'),
      ],
      expected: [
        `pod web-1 container wait: waiting: ErrImagePull: rpc error: code = NotFound desc = failed to pul…7.0.0.1:5000/k8s-listener-test/langgraph-server@sha256:${'0'.repeat(64)}: not found; restarts: 0`,
        `pod web-1 event Failed: Failed to pull image "127.0.0.1:5000/k8s-listener-test/langgraph-server@…00000000": ${MISSING}: not found`,
      ],
    },
    {
      name: 'no node: the scheduler’s message',
      pod: pod({
        phase: 'Pending',
        conditions: [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: '0/1 nodes are available: 1 Insufficient cpu.',
          },
        ],
      }),
      expected: ['pod web-1: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.'],
    },
    {
      name: 'a container still being created (not ready yet) is no evidence',
      pod: pod({
        containerStatuses: [
          { name: 'api', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } },
        ],
      }),
      expected: [],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const logs = new Map(Object.entries(row.logs ?? {}));
      expect(podEvidence({ pod: row.pod, events: row.events ?? [], logs }, none, { logLines: 20 })).toEqual(
        row.expected,
      );
    });
  }

  const crashed = pod({
    containerStatuses: [
      { name: 'api', restartCount: 1, lastState: { terminated: { reason: 'Error', exitCode: 1 } } },
    ],
  });

  it('masks each secret value and the database URI’s password in every line, the log read whole', () => {
    const mask = secretMask(['s3cr3t-value', 'postgres://user:pa55word-x@db:5432/app']);
    const log =
      'token=s3cr3t-value\nDATABASE_URI=postgres://user:pa55word-x@db:5432/app\nb64 czNjcjN0LXZhbHVl\n';
    const lines = podEvidence({ pod: crashed, events: [], logs: new Map([['api', log]]) }, mask, {
      logLines: 20,
    });
    const text = lines.join('\n');
    expect(text).not.toContain('s3cr3t-value');
    expect(text).not.toContain('pa55word-x');
    expect(text).not.toContain('czNjcjN0LXZhbHVl');
    expect(lines).toContain('  | DATABASE_URI=[secret]');
    expect(lines).toContain('  | token=[secret]');
  });

  it('keeps only the last lines asked for, none at 0, and drops a line the byte budget cut', () => {
    const log = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n');
    const lines = podEvidence({ pod: crashed, events: [], logs: new Map([['api', log]]) }, none, {
      logLines: 5,
      logTruncated: () => true,
    });
    expect(lines.filter((l) => l.startsWith('  | '))).toEqual([
      '  | line 24',
      '  | line 25',
      '  | line 26',
      '  | line 27',
      '  | line 28',
    ]);
    expect(
      podEvidence({ pod: crashed, events: [], logs: new Map([['api', log]]) }, none, { logLines: 0 }).filter(
        (l) => l.startsWith('  | '),
      ),
    ).toEqual([]);
  });

  it('escapes what a terminal acts on and cuts a long line in its middle', () => {
    const log = `\u001b[31mred\u001b[0m\t${'x'.repeat(500)}\n`;
    const [, , line] = podEvidence({ pod: crashed, events: [], logs: new Map([['api', log]]) }, none, {
      logLines: 20,
    });
    expect(line).toMatch(/^ {2}\| \\x1b\[31mred\\x1b\[0m\\tx+…x+$/);
    expect(line?.length).toBe(MAX_EVIDENCE_LINE);
  });
});

describe('logTailLines', () => {
  it('keeps a complete last line, drops a cut one', () => {
    expect(logTailLines('a\nb\n', 10, true)).toEqual(['a', 'b']);
    expect(logTailLines('a\nb', 10, true)).toEqual(['a']);
    expect(logTailLines('a\r\nb', 10, false)).toEqual(['a', 'b']);
  });
});

describe('boundedEvidence', () => {
  it('keeps whole lines within the budget and says how many it left out', () => {
    const lines = Array.from({ length: 10 }, (_, i) => `${i}`.padEnd(20, '.'));
    const kept = boundedEvidence(lines, 100);
    expect(kept.at(-1)).toMatch(/^… \d+ more lines of evidence left out$/);
    expect(kept.join('\n').length).toBeLessThanOrEqual(100);
    expect(boundedEvidence(lines.slice(0, 2), 100)).toEqual(lines.slice(0, 2));
  });

  it('drops a log’s earliest lines first: its last lines, the exception’s, are kept', () => {
    const lines = [
      'pod web-1 container api: last exit: Error, exit code 3; restarts: 2',
      'pod web-1 container api previous instance, last 20 lines:',
      ...Array.from({ length: 18 }, (_, i) => `  |   File "/lib/frame${i}.py", line ${i}, in f`),
      "  | GraphLoadError: Failed to load graph 'counter' from my_agent.graph: No module named 'my_agent'",
      '  | Application startup failed. Exiting.',
      'pod web-1 event BackOff: Back-off restarting failed container api',
    ];
    const kept = boundedEvidence(lines, 600);
    expect(kept.join('\n').length).toBeLessThanOrEqual(600);
    expect(kept.slice(0, 2)).toEqual(lines.slice(0, 2));
    expect(kept[2]).toMatch(/^ {2}\| … \d+ earlier lines left out$/);
    expect(kept.slice(-3)).toEqual(lines.slice(-3));
  });
});
