// What a failed reconcile is, by its error (classify): one table over the signal, the typed
// failures and the API server's answers; and namespaceWaiting, which turns a write refused for
// its namespace into a wait where the write is made (the applier, the inventory record).
import { describe, expect, it } from 'vitest';
import { KubeApiError, type KubeApiErrorDetails } from '../../../src/kube/index.ts';
import {
  classify,
  type FailureClass,
  namespaceWaiting,
  TerminalError,
  WaitingError,
} from '../../../src/reconcile/outcome.ts';
import { ReconcileReason } from '../../../src/report/reconcileReason.ts';

const DEPLOYMENT = 'd1';

const apiError = (details: Partial<KubeApiErrorDetails>) =>
  new KubeApiError({ verb: 'apply', kind: 'Deployment', namespace: 'apps', name: 'web', ...details });

/** The answer of NamespaceLifecycle admission to a write into a namespace that is not there. */
const namespaceMissing = () =>
  apiError({ status: 404, reason: 'NotFound', subject: { kind: 'namespaces', name: 'apps' } });
/** Its answer to a write into a namespace being deleted. */
const namespaceTerminating = () =>
  apiError({
    status: 403,
    reason: 'Forbidden',
    causes: [{ field: undefined, reason: 'NamespaceTerminating' }],
  });
const waiting = () =>
  new WaitingError(ReconcileReason.ReferenceMissing, DEPLOYMENT, 'Secret/db does not exist yet');
const terminal = () =>
  new TerminalError(ReconcileReason.ForeignReference, 'Secret/db belongs to another deployment');

describe('classify', () => {
  it.each<[string, () => unknown, boolean, FailureClass['kind']]>([
    ['any error once the signal fired', () => new Error('socket hang up'), true, 'aborted'],
    ['a terminal error once the signal fired', terminal, true, 'aborted'],
    ['a waiting error once the signal fired', waiting, true, 'aborted'],
    ['a request cut off by its signal (isAborted)', () => apiError({ reason: 'Aborted' }), false, 'aborted'],
    ['a WaitingError', waiting, false, 'waiting'],
    ['a TerminalError', terminal, false, 'terminal'],
    ['400 BadRequest', () => apiError({ status: 400, reason: 'BadRequest' }), false, 'terminal'],
    ['403 Forbidden', () => apiError({ status: 403, reason: 'Forbidden' }), false, 'terminal'],
    ['404 NotFound of the object', () => apiError({ status: 404, reason: 'NotFound' }), false, 'terminal'],
    ['422 Invalid', () => apiError({ status: 422, reason: 'Invalid' }), false, 'terminal'],
    [
      '500 Invalid (an apply that does not fit the schema)',
      () => apiError({ status: 500, reason: 'Invalid' }),
      false,
      'terminal',
    ],
    ['a namespace missing, by itself (the applier makes it a wait)', namespaceMissing, false, 'terminal'],
    // A uid precondition or a resourceVersion race (the agent's applies are forced: no field
    // ownership conflict): the next attempt reads again.
    ['409 Conflict', () => apiError({ status: 409, reason: 'Conflict' }), false, 'transient'],
    ['429 TooManyRequests', () => apiError({ status: 429, reason: 'TooManyRequests' }), false, 'transient'],
    ['500 InternalError', () => apiError({ status: 500, reason: 'InternalError' }), false, 'transient'],
    [
      '503 ServiceUnavailable',
      () => apiError({ status: 503, reason: 'ServiceUnavailable' }),
      false,
      'transient',
    ],
    ['no response (NetworkError)', () => apiError({ reason: 'NetworkError' }), false, 'transient'],
    ['a plain Error', () => new Error('socket hang up'), false, 'transient'],
  ])('%s is %s → %s', (_what, error, aborted, kind) => {
    expect(classify(error(), aborted).kind).toBe(kind);
  });

  it('hands a WaitingError on as its failure', () => {
    const error = waiting();
    expect(classify(error, false)).toEqual({ kind: 'waiting', failure: error });
  });

  it('hands a TerminalError on as its failure', () => {
    const error = terminal();
    expect(classify(error, false)).toEqual({ kind: 'terminal', failure: error });
  });

  it("makes the API server's refusal an ApplyRejected failure carrying it as its cause", () => {
    const error = apiError({ status: 422, reason: 'Invalid' });
    const classified = classify(error, false);
    const failure = classified.kind === 'terminal' ? classified.failure : undefined;
    expect([failure?.reason, failure?.message, failure?.cause]).toEqual([
      ReconcileReason.ApplyRejected,
      error.message,
      error,
    ]);
  });
});

describe('namespaceWaiting', () => {
  it('turns a write into a missing namespace into a NamespaceMissing wait of the deployment', () => {
    const waited = namespaceWaiting(namespaceMissing(), DEPLOYMENT);
    expect(waited).toBeInstanceOf(WaitingError);
    expect(waited).toMatchObject({ reason: ReconcileReason.NamespaceMissing, deploymentId: DEPLOYMENT });
  });

  it('turns a write into a terminating namespace into a NamespaceMissing wait', () => {
    expect(namespaceWaiting(namespaceTerminating(), DEPLOYMENT)).toMatchObject({
      reason: ReconcileReason.NamespaceMissing,
    });
  });

  it('names the namespace in its message', () => {
    expect((namespaceWaiting(namespaceMissing(), DEPLOYMENT) as Error).message).toContain(
      'namespace apps does not exist or is terminating',
    );
  });

  it("keeps the API server's error as its cause", () => {
    const error = namespaceMissing();
    expect((namespaceWaiting(error, DEPLOYMENT) as Error).cause).toBe(error);
  });

  it('is classified as waiting', () => {
    expect(classify(namespaceWaiting(namespaceMissing(), DEPLOYMENT), false).kind).toBe('waiting');
  });

  it.each<[string, () => unknown]>([
    ['a 404 of the object itself', () => apiError({ status: 404, reason: 'NotFound' })],
    ['a 403 without the terminating cause', () => apiError({ status: 403, reason: 'Forbidden' })],
    ['a 503', () => apiError({ status: 503, reason: 'ServiceUnavailable' })],
    ['a plain Error', () => new Error('socket hang up')],
  ])('passes %s on as it is', (_what, make) => {
    const error = make();
    expect(namespaceWaiting(error, DEPLOYMENT)).toBe(error);
  });
});
