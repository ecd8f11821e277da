// The settled-attempt memo: an attempt counts only under the served namespaces it settled under.
import { describe, expect, it } from 'vitest';
import { SettledAttempts } from '../../../../src/reconcile/loop/settledAttempts.ts';

const attempt = { fingerprint: 'f1', applied: true } as const;

describe('SettledAttempts', () => {
  it('holds no attempt for a deployment never settled', () => {
    expect(new SettledAttempts().get('d1')).toBeUndefined();
  });

  it('returns the attempt settled under the namespaces served now', () => {
    const attempts = new SettledAttempts();
    attempts.settle('d1', attempt, attempts.served);
    expect(attempts.get('d1')).toMatchObject(attempt);
  });

  it('moves to a new generation when the served namespaces change', () => {
    const attempts = new SettledAttempts();
    const before = attempts.served;
    attempts.namespacesChanged();
    expect(attempts.served).not.toBe(before);
  });

  it('counts an attempt for nothing once the served namespaces changed', () => {
    const attempts = new SettledAttempts();
    attempts.settle('d1', attempt, attempts.served);
    attempts.namespacesChanged();
    expect(attempts.get('d1')).toBeUndefined();
  });

  it('counts for nothing an attempt begun before a change and recorded after it', () => {
    const attempts = new SettledAttempts();
    const begun = attempts.served;
    attempts.namespacesChanged();
    attempts.settle('d1', attempt, begun);
    expect(attempts.get('d1')).toBeUndefined();
  });

  it('forgets a deployment', () => {
    const attempts = new SettledAttempts();
    attempts.settle('d1', attempt, attempts.served);
    attempts.forget('d1');
    expect(attempts.get('d1')).toBeUndefined();
  });

  it('keeps the other deployments when one is forgotten', () => {
    const attempts = new SettledAttempts();
    attempts.settle('d1', attempt, attempts.served);
    attempts.settle('d2', { fingerprint: 'f2', applied: false }, attempts.served);
    attempts.forget('d1');
    expect(attempts.get('d2')?.fingerprint).toBe('f2');
  });
});
