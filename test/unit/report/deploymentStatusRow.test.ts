import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  ageSince,
  DeploymentDetail,
  deriveStatusRow,
  formatAge,
  formatColumns,
  formatDeploymentDetail,
  formatReplicas,
  formatStatusTable,
  type ObservedObject,
  type RowInput,
  STATUS_TABLE_HEADER,
  StatusList,
  type StatusRow,
  type StatusState,
} from '../../../src/report/deploymentStatusRow.ts';
import type { LiveObject } from '../../../src/report/rolloutHealth.ts';
import {
  nextStatusAnnotation,
  parseStatusAnnotation,
  type StatusAnnotation,
} from '../../../src/report/statusAnnotation.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const REV = 'aaaaaaaa-1111-4000-8000-000000000001';
const obj = (yaml: string) => parse(yaml) as LiveObject;

const readyDeployment = (name: string, replicas: number) =>
  obj(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: ${name}, generation: 1 }
spec: { replicas: ${replicas} }
status: { observedGeneration: 1, replicas: ${replicas}, updatedReplicas: ${replicas}, availableReplicas: ${replicas}, readyReplicas: ${replicas} }`);

const observed = (
  kind: string,
  name: string,
  live: LiveObject | undefined,
  extra: Partial<ObservedObject> = {},
): ObservedObject => ({
  ref: { apiVersion: kind === 'Service' ? 'v1' : 'apps/v1', kind, namespace: 'apps', name },
  component: 'main',
  live,
  desired: true,
  recorded: true,
  applied: live !== undefined,
  drift: undefined,
  ...extra,
});

const input = (extra: Partial<RowInput> = {}): RowInput => ({
  id: 'dep-1',
  name: 'web',
  namespace: 'apps',
  revisionId: REV,
  revisionStatus: 'DEPLOYED',
  revisionUpdatedAt: '2026-11-22T11:00:00Z',
  settled: undefined,
  deleting: undefined,
  invalid: undefined,
  annotation: undefined,
  objects: [
    observed('Deployment', 'web', readyDeployment('web', 2)),
    observed('Service', 'web', obj('{apiVersion: v1, kind: Service, metadata: {name: web}}')),
  ],
  claims: [],
  now: NOW,
  failureGraceMs: 60_000,
  ...extra,
});

const annotation = (status: StatusAnnotation['status'], extra: Partial<StatusAnnotation> = {}) => ({
  revisionId: REV,
  status,
  reason: 'Current',
  message: 'from the agent',
  since: '2026-11-22T11:55:00Z',
  ...extra,
});

describe('deriveStatusRow', () => {
  it.each<[string, Partial<RowInput>, StatusState, string, string]>([
    ['every object applied and available', {}, 'DEPLOYED', 'Current', 'all workloads are available'],
    [
      'an invalid deployment, even with its objects live',
      { invalid: 'deployment dep-1 cannot be rendered: min_scale: too big' },
      'DEPLOY_FAILED',
      'RenderInvalid',
      'deployment dep-1 cannot be rendered: min_scale: too big',
    ],
    [
      'the agent reported this revision failed',
      {
        annotation: annotation('DEPLOY_FAILED', {
          reason: 'ApplyRejected',
          message: 'Service/apps/web exists',
        }),
      },
      'DEPLOY_FAILED',
      'ApplyRejected',
      'Service/apps/web exists',
    ],
    [
      'a failure the agent reported for an older revision does not count',
      { annotation: annotation('DEPLOY_FAILED', { revisionId: 'older' }) },
      'DEPLOYED',
      'Current',
      'all workloads are available',
    ],
    [
      'a settled revision',
      { settled: 'DEPLOY_FAILED', revisionStatus: 'DEPLOY_FAILED' },
      'DEPLOY_FAILED',
      'RevisionSettled',
      'revision aaaaaaaa is DEPLOY_FAILED in the control plane; a new revision or a redeploy is needed',
    ],
    [
      'a workload past its progress deadline',
      {
        objects: [
          observed(
            'Deployment',
            'web',
            obj(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 2 }
status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 0, conditions: [{ type: Progressing, status: "False", reason: ProgressDeadlineExceeded }] }`),
          ),
        ],
      },
      'DEPLOY_FAILED',
      'ProgressDeadlineExceeded',
      'Deployment web exceeded its progress deadline',
    ],
    [
      'an object the agent has not created yet',
      { objects: [observed('Deployment', 'web', undefined, { recorded: false })] },
      'DEPLOYING',
      'NotApplied',
      'waiting for the agent to apply Deployment/web',
    ],
    [
      'an object whose spec hash is not the desired one',
      { objects: [observed('Deployment', 'web', readyDeployment('web', 2), { applied: false })] },
      'DEPLOYING',
      'NotApplied',
      'waiting for the agent to apply Deployment/web (changed)',
    ],
    [
      'a recorded object deleted by hand',
      {
        objects: [
          observed('Deployment', 'web', readyDeployment('web', 2)),
          observed('Service', 'web', undefined),
        ],
      },
      'DRIFTED',
      'Drifted',
      'Service/web was deleted by hand',
    ],
    [
      'a field edited by hand',
      {
        objects: [
          observed('Deployment', 'web', readyDeployment('web', 2), {
            drift: 'spec.template.spec.containers[0].image',
          }),
        ],
      },
      'DRIFTED',
      'Drifted',
      'Deployment/web: spec.template.spec.containers[0].image changed by hand',
    ],
    [
      'a rollout in progress',
      {
        objects: [
          observed(
            'Deployment',
            'web',
            obj(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 2 }
status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }`),
          ),
        ],
      },
      'DEPLOYING',
      'WaitingForAvailable',
      'main: 1 of 2 updated replicas available',
    ],
    [
      'a pending database claim',
      {
        claims: [
          obj(`
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: data-web-db-0, labels: { app.kubernetes.io/component: database } }
status: { phase: Pending }`),
        ],
      },
      'DEPLOYING',
      'ClaimPending',
      'database: claim data-web-db-0 is Pending',
    ],
    [
      'being deleted',
      { deleting: 'AWAITING_DELETE: the agent removes its objects' },
      'DEPLOYING',
      'Deleting',
      'AWAITING_DELETE: the agent removes its objects',
    ],
    [
      'objects no longer desired are not judged',
      {
        objects: [
          observed('Deployment', 'web', readyDeployment('web', 1)),
          observed('Service', 'old', undefined, { desired: false }),
        ],
      },
      'DEPLOYED',
      'Current',
      'all workloads are available',
    ],
  ])('%s', (_, extra, state, reason, message) => {
    const row = deriveStatusRow(input(extra));
    expect([row.state, row.reason, row.message]).toEqual([state, reason, message]);
  });

  it('keeps DEPLOYED, as the agent reports it, while an autoscaler adds replicas', () => {
    const scaling = obj(`
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, generation: 1 }
spec: { replicas: 3 }
status: { observedGeneration: 1, replicas: 3, updatedReplicas: 3, availableReplicas: 2, readyReplicas: 2 }`);
    const objects = [observed('Deployment', 'web', scaling)];
    expect(deriveStatusRow(input({ objects })).state).toBe('DEPLOYING');
    expect(deriveStatusRow(input({ objects, annotation: annotation('DEPLOYED') })).state).toBe('DEPLOYED');
  });

  it('takes the transition time from the annotation of the same revision and state, else the revision; none for a hand edit', () => {
    expect(deriveStatusRow(input({ annotation: annotation('DEPLOYED') })).since).toBe('2026-11-22T11:55:00Z');
    expect(deriveStatusRow(input({ annotation: annotation('DEPLOYED', { revisionId: 'x' }) })).since).toBe(
      '2026-11-22T11:00:00Z',
    );
    expect(deriveStatusRow(input({ revisionUpdatedAt: undefined })).since).toBeNull();
    // The agent's time is for the state it reported, not for one the cluster shows since.
    expect(deriveStatusRow(input({ annotation: annotation('DEPLOYING') })).since).toBe(
      '2026-11-22T11:00:00Z',
    );
    const drifted = input({
      annotation: annotation('DEPLOYED'),
      objects: [observed('Deployment', 'web', readyDeployment('web', 2), { drift: 'spec.replicas' })],
    });
    expect(deriveStatusRow(drifted).since).toBeNull();
  });

  it('counts desired and ready replicas per workload; a missing workload is 0/0', () => {
    const row = deriveStatusRow(
      input({
        objects: [
          observed('Deployment', 'web', readyDeployment('web', 2)),
          observed('Deployment', 'web-queue', readyDeployment('web-queue', 1), { component: 'queue' }),
          observed(
            'StatefulSet',
            'web-db',
            obj(`
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: web-db }
spec: { replicas: 1 }
status: { readyReplicas: 0 }`),
            { component: 'database' },
          ),
          observed('Deployment', 'web-orchestrator', undefined, { component: 'orchestrator' }),
          observed('Service', 'web', obj('{apiVersion: v1, kind: Service, metadata: {name: web}}')),
        ],
      }),
    );
    expect(formatReplicas(row.workloads)).toBe('main 2/2 queue 1/1 orchestrator 0/0 db 0/1');
  });
});

describe('formatting', () => {
  it.each([
    [0, '0s'],
    [-5_000, '0s'],
    [5_400, '5s'],
    [59_999, '59s'],
    [60_000, '1m'],
    [3 * 60_000 + 59_000, '3m'],
    [2 * 3_600_000 + 5 * 60_000, '2h'],
    [47 * 3_600_000, '47h'],
    [49 * 3_600_000, '2d'],
  ])('formatAge(%i) = %s', (ms, text) => {
    expect(formatAge(ms)).toBe(text);
  });

  it('prints - for an unknown time', () => {
    expect(ageSince(null, NOW)).toBe('-');
    expect(ageSince('not a time', NOW)).toBe('-');
    expect(ageSince('2026-11-22T11:59:30Z', NOW)).toBe('30s');
  });

  it('aligns columns with two spaces and leaves the last unpadded', () => {
    expect(
      formatColumns(
        ['A', 'BBB', 'C'],
        [
          ['long-name', 'x', 'end'],
          ['s', 'yyyy', ''],
        ],
      ),
    ).toBe('A          BBB   C\nlong-name  x     end\ns          yyyy\n');
  });

  const row = (extra: Partial<StatusRow>): StatusRow => ({
    id: 'id',
    name: 'web',
    namespace: 'apps',
    revisionId: REV,
    revisionStatus: 'DEPLOYED',
    state: 'DEPLOYED',
    reason: 'Current',
    message: 'all workloads are available',
    since: '2026-11-22T11:57:00Z',
    workloads: [{ component: 'main', kind: 'Deployment', name: 'web', desired: 2, ready: 2 }],
    ...extra,
  });

  it('prints the table sorted by namespace and name, one line per message', () => {
    const table = formatStatusTable(
      [
        row({ name: 'zeta' }),
        row({
          name: 'bad',
          namespace: 'apps',
          revisionId: null,
          state: 'DEPLOY_FAILED',
          reason: 'RenderInvalid',
          message: 'cannot be rendered:\n  min_scale',
          since: null,
          workloads: [],
        }),
        row({ name: 'api', namespace: 'alpha', since: '2026-11-22T10:00:00Z' }),
      ],
      NOW,
    );
    expect(table).toBe(
      [
        'NAME  NAMESPACE  REVISION  REPLICAS  STATE          AGE  MESSAGE',
        'api   alpha      aaaaaaaa  main 2/2  DEPLOYED       2h   all workloads are available',
        'bad   apps       -         -         DEPLOY_FAILED  -    cannot be rendered: min_scale',
        'zeta  apps       aaaaaaaa  main 2/2  DEPLOYED       3m   all workloads are available',
        '',
      ].join('\n'),
    );
    expect(formatStatusTable([], NOW)).toBe('No deployments are bound to this listener.\n');
  });

  it('prints one deployment in depth', () => {
    const detail: DeploymentDetail = {
      listenerId: 'l',
      observedAt: '2026-11-22T12:00:00Z',
      deployment: row({
        state: 'DRIFTED',
        reason: 'Drifted',
        message: 'Deployment/web: spec.replicas changed by hand',
      }),
      objects: [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          namespace: 'apps',
          name: 'web',
          component: 'main',
          status: 'Current',
          reason: 'Current',
          message: '2 replicas available',
          drift: 'spec.replicas',
        },
        {
          apiVersion: 'v1',
          kind: 'Service',
          namespace: 'apps',
          name: 'web',
          component: 'main',
          status: 'Current',
          reason: 'Current',
          message: 'exists',
          drift: null,
        },
      ],
      events: [
        {
          time: '2026-11-22T11:59:50Z',
          type: 'Normal',
          reason: 'RolloutComplete',
          object: 'Deployment/web',
          message: 'revision x: done',
          count: 2,
        },
      ],
    };
    expect(DeploymentDetail.parse(detail)).toEqual(detail);
    expect(formatDeploymentDetail(detail, NOW)).toBe(
      [
        'Deployment: web (id)',
        'Namespace:  apps',
        `Revision:   ${REV} (DEPLOYED in the control plane)`,
        'State:      DRIFTED for 3m',
        'Reason:     Drifted',
        'Message:    Deployment/web: spec.replicas changed by hand',
        'Replicas:   main 2/2',
        '',
        'Objects:',
        'KIND        NAME  COMPONENT  STATUS             MESSAGE',
        'Deployment  web   main       Current (drifted)  spec.replicas changed by hand; 2 replicas available',
        'Service     web   main       Current            exists',
        '',
        'Events:',
        'AGE  TYPE    REASON           OBJECT          MESSAGE',
        '10s  Normal  RolloutComplete  Deployment/web  revision x: done (x2)',
        '',
      ].join('\n'),
    );
  });

  it('validates the list shape it documents', () => {
    const list = { listenerId: 'l', observedAt: '2026-11-22T12:00:00Z', deployments: [row({})] };
    expect(StatusList.parse(list)).toEqual(list);
    expect(() =>
      StatusList.parse({ ...list, deployments: [row({ state: 'UNKNOWN' as StatusState })] }),
    ).toThrow();
  });
});

describe('status annotation', () => {
  const at = new Date('2026-11-22T12:00:00Z');
  const next = {
    revisionId: REV,
    status: 'DEPLOYING' as const,
    reason: 'UpdatingReplicas',
    message: '1 of 2',
  };

  it('starts a transition at now', () => {
    expect(parseStatusAnnotation(nextStatusAnnotation(undefined, next, at))?.since).toBe(at.toISOString());
  });

  it('keeps since while the revision and status stay, whatever the message', () => {
    const first = nextStatusAnnotation(undefined, next, new Date('2026-11-22T11:00:00Z'));
    const second = nextStatusAnnotation(first, { ...next, message: '2 of 2' }, at);
    expect(parseStatusAnnotation(second)).toEqual({
      ...next,
      message: '2 of 2',
      since: '2026-11-22T11:00:00.000Z',
    });
  });

  it('moves since on a new status or a new revision', () => {
    const first = nextStatusAnnotation(undefined, next, new Date('2026-11-22T11:00:00Z'));
    expect(
      parseStatusAnnotation(nextStatusAnnotation(first, { ...next, status: 'DEPLOYED' }, at))?.since,
    ).toBe(at.toISOString());
    expect(
      parseStatusAnnotation(nextStatusAnnotation(first, { ...next, revisionId: 'other' }, at))?.since,
    ).toBe(at.toISOString());
  });

  it('reads an annotation written before since existed, and ignores garbage', () => {
    expect(parseStatusAnnotation('{"revisionId":"r","status":"DEPLOYED"}')).toEqual({
      revisionId: 'r',
      status: 'DEPLOYED',
    });
    expect(parseStatusAnnotation('not json')).toBeUndefined();
    expect(parseStatusAnnotation('{"status":"WHATEVER"}')).toBeUndefined();
    expect(parseStatusAnnotation(undefined)).toBeUndefined();
  });
});

describe('the status section of docs/operating.md', () => {
  it('shows the documented JSON shape and the table header the command prints', async () => {
    const { readFile } = await import('node:fs/promises');
    const page = await readFile(new URL('../../../docs/operating.md', import.meta.url), 'utf8');
    const section = page.slice(page.indexOf('## `k8s-listener status`'));
    const json = /```json\n([\s\S]*?)\n```/.exec(section)?.[1];
    expect(StatusList.parse(JSON.parse(json ?? 'null')).deployments[0]?.state).toBe('DEPLOYED');
    const table = /```\n(NAME[\s\S]*?)\n```/.exec(section)?.[1] ?? '';
    const [header, ...rows] = table.split('\n');
    expect(header?.split(/\s{2,}/)).toEqual([...STATUS_TABLE_HEADER]);
    expect(rows.map((row) => row.split(/\s{2,}/)[4])).toEqual(['DEPLOY_FAILED', 'DEPLOYING', 'DEPLOYED']);
  });
});
