// How long a deployment has waited, and for what, on a clock the test moves: failed only past the
// grace, a wait for another reason starting anew, a forgotten wait starting anew.
import { describe, expect, it } from 'vitest';
import { WaitingSince } from '../../../../src/reconcile/loop/waitingSince.ts';

const GRACE_MS = 1_000;

function waits() {
  const clock = { nowMs: 0 };
  return { clock, since: new WaitingSince(GRACE_MS, () => clock.nowMs) };
}

describe('WaitingSince', () => {
  it('is not past the grace when a wait begins', () => {
    const { since } = waits();
    expect(since.pastGrace('d1', 'NamespaceMissing')).toBe(false);
  });

  it('is not past the grace just short of it', () => {
    const { clock, since } = waits();
    since.pastGrace('d1', 'NamespaceMissing');
    clock.nowMs = GRACE_MS - 1;
    expect(since.pastGrace('d1', 'NamespaceMissing')).toBe(false);
  });

  it('is past the grace once it has waited that long for the same reason', () => {
    const { clock, since } = waits();
    since.pastGrace('d1', 'NamespaceMissing');
    clock.nowMs = GRACE_MS;
    expect(since.pastGrace('d1', 'NamespaceMissing')).toBe(true);
  });

  it('starts anew when the deployment waits for another reason', () => {
    const { clock, since } = waits();
    since.pastGrace('d1', 'NamespaceMissing');
    clock.nowMs = GRACE_MS;
    expect(since.pastGrace('d1', 'ReferenceMissing')).toBe(false);
  });

  it('starts anew once forgotten', () => {
    const { clock, since } = waits();
    since.pastGrace('d1', 'NamespaceMissing');
    clock.nowMs = GRACE_MS;
    since.forget('d1');
    expect(since.pastGrace('d1', 'NamespaceMissing')).toBe(false);
  });

  it('counts each deployment from its own first wait', () => {
    const { clock, since } = waits();
    since.pastGrace('d1', 'NamespaceMissing');
    clock.nowMs = GRACE_MS;
    since.pastGrace('d2', 'NamespaceMissing');
    expect([since.pastGrace('d1', 'NamespaceMissing'), since.pastGrace('d2', 'NamespaceMissing')]).toEqual([
      true,
      false,
    ]);
  });
});
