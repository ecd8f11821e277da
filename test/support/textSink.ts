// A writable stream that keeps what a command prints, for tests that call commands in-process.
import { Writable } from 'node:stream';

export type TextStream = Writable & { isTTY?: boolean; columns?: number };

/** What is written, as text; `isTTY` makes it look like a 200-column terminal. */
export function textSink(isTTY = false): { stream: TextStream; text: () => string } {
  let text = '';
  const stream: TextStream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  if (isTTY) {
    stream.isTTY = true;
    stream.columns = 200;
  }
  return { stream, text: () => text };
}
