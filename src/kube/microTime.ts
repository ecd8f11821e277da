// Kubernetes MicroTime: RFC 3339 with exactly six fractional digits, as Lease and Event fields require.

/** `2025-01-02T03:04:05.678000Z` for the given epoch milliseconds. */
export function formatMicroTime(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  // toISOString always gives milliseconds; microseconds add three zero digits.
  return `${iso.slice(0, -1)}000Z`;
}

/** Epoch milliseconds of a MicroTime or Time string; undefined when unparseable. */
export function parseMicroTime(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}
