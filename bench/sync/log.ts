// How a run speaks while it runs: a line on stderr with the time of day (stdout holds the report),
// and times in seconds to the hundredth.

export const log = (line: string) =>
  console.error(`[bench:sync ${new Date().toISOString().slice(11, 19)}] ${line}`);

export const seconds = (ms: number) => Number((ms / 1000).toFixed(2));
