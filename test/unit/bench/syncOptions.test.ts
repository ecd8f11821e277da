// bench/sync/options.ts: which clients a bench:sync run times, and at whose settings Flux runs.
import { describe, expect, it } from 'vitest';
import { readOptions } from '../../../bench/sync/options.ts';
import { rotatedOrder } from '../../../bench/syncRuns.ts';

describe('bench:sync --order', () => {
  it('times Flux after the agent, the floor and kubectl unless told otherwise', () => {
    const { options } = readOptions([]);
    expect(options.order).toEqual(['agent', 'floor', 'kubectl', 'flux']);
    expect(options.fluxDefaults).toBe(false);
  });

  it('leaves Flux out when the order does not name it (no Go build), and keeps it where named', () => {
    expect(readOptions(['--order', 'kubectl,agent,floor']).options.order).toEqual([
      'kubectl',
      'agent',
      'floor',
    ]);
    expect(readOptions(['--order', 'flux,agent,floor,kubectl']).options.order[0]).toBe('flux');
  });

  it('runs Flux at its own defaults with --flux-defaults, and only the agent with --agent-only', () => {
    expect(readOptions(['--flux-defaults']).options.fluxDefaults).toBe(true);
    expect(readOptions(['--agent-only']).options.order).toEqual(['agent']);
  });
});

describe('bench:sync --runs', () => {
  it('rotates the clients asked for, each first once a round, Flux only when named', () => {
    const clients = readOptions(['--order', 'agent,floor,kubectl']).options.order;
    expect([0, 1, 2, 3].map((i) => rotatedOrder(clients, i))).toEqual([
      'agent,floor,kubectl',
      'floor,kubectl,agent',
      'kubectl,agent,floor',
      'agent,floor,kubectl',
    ]);
    expect(rotatedOrder(readOptions([]).options.order, 3)).toBe('flux,agent,floor,kubectl');
  });
});
