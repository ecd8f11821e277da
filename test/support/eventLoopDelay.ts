// How long the event loop was held while some work ran: the longest delay of a 1 ms timer, from
// perf_hooks.monitorEventLoopDelay, in milliseconds. A synchronous stretch of work shows as a
// delay of its own length, whatever awaits surround it.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** The work's result and the longest the event loop was held while it ran, in ms. */
export async function eventLoopHeld<T>(work: () => T | Promise<T>): Promise<{ value: T; maxMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  try {
    // The timer runs first, so that a block from the first line of the work is measured.
    await sleep(5);
    const value = await work();
    // And once after, to see a block at the work's last line end.
    await sleep(5);
    return { value, maxMs: histogram.max / 1e6 };
  } finally {
    histogram.disable();
  }
}
