import { describe, expect, it } from 'vitest';
import { eventually, GiveUp } from '../../support/eventually.ts';

describe('eventually', () => {
  it('returns the first value a check gives, trying again after a throw', async () => {
    let calls = 0;
    const value = await eventually(
      'the third call',
      () => {
        calls += 1;
        if (calls < 3) throw new Error('not yet');
        return calls;
      },
      1_000,
      1,
    );
    expect(value).toBe(3);
  });

  it("names what it awaited and the last error in the timeout's message", async () => {
    const refused = new Error('connect ECONNREFUSED 10.0.0.7:8000');
    const failure = eventually(
      'the stores answer',
      () => {
        throw refused;
      },
      20,
      5,
    );
    await expect(failure).rejects.toThrow(
      /^timed out after 20 ms waiting for the stores answer \(last error: connect ECONNREFUSED 10\.0\.0\.7:8000\)$/,
    );
    await expect(failure).rejects.toHaveProperty('cause', refused);
  });

  it("reads an AggregateError's reasons when it has no message of its own", async () => {
    const failure = eventually(
      'a connection',
      () => {
        throw new AggregateError([new Error('connect ECONNREFUSED ::1:80'), new Error('connect ETIMEDOUT')]);
      },
      10,
      5,
    );
    await expect(failure).rejects.toThrow('(last error: connect ECONNREFUSED ::1:80; connect ETIMEDOUT)');
  });

  it('says nothing of an error when the check only gave undefined', async () => {
    await expect(eventually('nothing', () => undefined, 10, 5)).rejects.toThrow(
      /^timed out after 10 ms waiting for nothing$/,
    );
  });

  it('ends at once on GiveUp', async () => {
    const started = Date.now();
    await expect(
      eventually(
        'what cannot happen',
        () => {
          throw new GiveUp('gone');
        },
        60_000,
      ),
    ).rejects.toBeInstanceOf(GiveUp);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
