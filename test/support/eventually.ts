// The one way tests wait for something outside them to happen: poll a check until it gives a
// value, fail with what was awaited and the last error once the timeout passes.

/** Thrown by a check to end the wait at once: what it waits for can no longer happen. */
export class GiveUp extends Error {
  override readonly name = 'GiveUp';
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than undefined, and returns it.
 * A check that throws is tried again (its last error becomes the timeout's cause), unless it threw
 * `GiveUp`. `what` names what is awaited in the timeout's message; a function is read only then,
 * so the message can carry the latest output. The last error's message is in the timeout's own
 * message too, since a test report may print an error's cause or not (vitest's did not).
 */
export async function eventually<T>(
  what: string | (() => string),
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 60_000,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof GiveUp) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      const awaited = typeof what === 'string' ? what : what();
      const last = lastError === undefined ? '' : ` (last error: ${errorMessage(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${awaited}${last}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // AggregateError (a connection tried on several addresses) carries its reasons in `errors`.
  const inner = error instanceof AggregateError ? error.errors.map(errorMessage).join('; ') : '';
  return error.message || inner || error.name;
}
