// One watch response read as it arrives: newline-delimited JSON, one event a line. The Watcher
// (watch.ts) builds lists, restarts and caches on top of this.
import { decodeWatchEvent, type RawWatchEvent, type RequestTarget } from './decode.ts';
import { KubeApiError } from './errors.ts';
import type { ResourceType } from './resources.ts';

/**
 * The events of a watch body until the server ends it. A broken stream throws a `StreamBroken`
 * KubeApiError, unless `signal` aborted it (then the events simply stop).
 */
export async function* readWatchStream(
  body: AsyncIterable<unknown>,
  type: ResourceType,
  target: RequestTarget,
  signal: AbortSignal,
): AsyncGenerator<RawWatchEvent> {
  const decoder = new TextDecoder();
  const chunks = body[Symbol.asyncIterator]();
  let buffered = '';
  for (;;) {
    let next: IteratorResult<unknown>;
    try {
      next = await chunks.next();
    } catch (cause) {
      if (signal.aborted) return;
      throw new KubeApiError({ verb: 'watch', ...target, reason: 'StreamBroken', cause });
    }
    if (next.done) break;
    buffered += decoder.decode(toBytes(next.value), { stream: true });
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
      if (line !== '') yield decodeWatchEvent(line, type, target);
    }
  }
  const rest = buffered.trim();
  if (rest !== '') yield decodeWatchEvent(rest, type, target);
}

function toBytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  if (typeof chunk === 'string') return new TextEncoder().encode(chunk);
  throw new TypeError('a watch body chunk is neither bytes nor text');
}
