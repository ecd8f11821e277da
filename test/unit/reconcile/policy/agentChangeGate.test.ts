// The agent-change rate, on a clock the test turns: at most `rate` starts in any window, in the
// order first held, each held deployment told when its turn should come; stale places given up.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentChangeGate } from '../../../../src/reconcile/policy/agentChangeGate.ts';

const WINDOW = 60_000;

function gate(rate: number, windowMs = WINDOW) {
  const clock = { now: 1_000_000 };
  const g = new AgentChangeGate({ rate, windowMs, now: () => clock.now });
  return { g, clock };
}

describe('AgentChangeGate', () => {
  it('admits the rate at once, then holds the rest in the order first held', () => {
    const { g } = gate(2);
    expect(g.ask('a')).toEqual({ admitted: true, heldMs: 0 });
    expect(g.ask('b')).toEqual({ admitted: true, heldMs: 0 });
    const c = g.ask('c');
    const d = g.ask('d');
    expect(c).toMatchObject({ admitted: false, ahead: 0, retryAfterMs: WINDOW });
    expect(d).toMatchObject({ admitted: false, ahead: 1, retryAfterMs: WINDOW });
    const e = g.ask('e');
    // Two slots a window: the fifth waits two windows.
    expect(e).toMatchObject({ admitted: false, ahead: 2, retryAfterMs: 2 * WINDOW });
    expect(g.waiting).toBe(3);
    // Asking again keeps its place.
    expect(g.ask('d')).toMatchObject({ admitted: false, ahead: 1 });
  });

  it('opens a slot when a start leaves the window, for the first in line only', () => {
    const { g, clock } = gate(1);
    expect(g.ask('a').admitted).toBe(true);
    clock.now += 1_000;
    expect(g.ask('b').admitted).toBe(false);
    clock.now += 1_000;
    expect(g.ask('c').admitted).toBe(false);
    clock.now += WINDOW - 2_000 - 1;
    expect(g.ask('b').admitted).toBe(false);
    clock.now += 1;
    // c asks first, yet b was held first: c waits for b.
    expect(g.ask('c')).toMatchObject({ admitted: false, ahead: 1 });
    expect(g.ask('b')).toEqual({ admitted: true, heldMs: WINDOW - 1_000 });
    expect(g.ask('c')).toMatchObject({ admitted: false, ahead: 0, retryAfterMs: WINDOW });
    expect(g.waiting).toBe(1);
  });

  it('0 is unlimited', () => {
    const { g } = gate(0);
    for (let i = 0; i < 100; i++) expect(g.ask(`d${i}`).admitted).toBe(true);
    expect(g.waiting).toBe(0);
  });

  it('a forgotten deployment holds up no one', () => {
    const { g } = gate(1);
    g.ask('a');
    g.ask('b');
    g.ask('c');
    g.forget('b');
    expect(g.isWaiting('b')).toBe(false);
    expect(g.ask('c')).toMatchObject({ admitted: false, ahead: 0 });
  });

  it('one that does not come back a window after its turn gives up its place', () => {
    const { g, clock } = gate(1);
    g.ask('a');
    const b = g.ask('b');
    g.ask('c');
    if (b.admitted) throw new Error('b should wait');
    // b never asks again (suspended, say); c does, past b's turn and a window more.
    clock.now += b.retryAfterMs + WINDOW + 1;
    expect(g.ask('c')).toMatchObject({ admitted: true });
    expect(g.isWaiting('b')).toBe(false);
  });

  it('refuses a rate that is not a whole number ≥ 0', () => {
    expect(() => new AgentChangeGate({ rate: -1 })).toThrow(RangeError);
    expect(() => new AgentChangeGate({ rate: 1.5 })).toThrow(RangeError);
  });

  it('whoever asks when, no window ever holds more than the rate, and everyone who keeps asking gets in', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 20_000 })), {
          minLength: 1,
          maxLength: 60,
        }),
        (rate, asks) => {
          const windowMs = 10_000;
          const { g, clock } = gate(rate, windowMs);
          const starts: number[] = [];
          const pending = new Set<string>();
          const ask = (id: string) => {
            const turn = g.ask(id);
            if (turn.admitted) {
              starts.push(clock.now);
              pending.delete(id);
            } else {
              expect(turn.retryAfterMs).toBeGreaterThan(0);
              pending.add(id);
            }
          };
          for (const [id, gap] of asks) {
            clock.now += gap;
            ask(`d${id}`);
          }
          // Those still held keep asking when told: all get in.
          for (let round = 0; pending.size > 0 && round < 200; round++) {
            clock.now += 1_000;
            for (const id of [...pending]) ask(id);
          }
          expect(pending.size).toBe(0);
          for (const [i, start] of starts.entries()) {
            const inWindow = starts.filter((s) => s >= start && s < start + windowMs).length;
            expect(inWindow, `starts from ${i}`).toBeLessThanOrEqual(rate);
          }
        },
      ),
    );
  });
});
