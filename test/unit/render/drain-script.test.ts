// The drain a pod that runs jobs runs as its preStop, run here by python3 against a stand-in for
// the server's `GET /metrics?format=json`: it ends when the process holds no run, and otherwise at
// the run grace, also where the process does not report its runs. The real server's drain is
// proven on the real node (test/integration/node/runs-survive.test.ts).
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RUN_DRAIN_SCRIPT } from '../../../src/render/drain.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server whose n-th answer is `answers[n]` (the last one repeated): a worker count, or an HTTP error. */
async function metrics(
  answers: readonly (number | 'error')[],
): Promise<{ port: number; asked: () => number }> {
  let asked = 0;
  server = createServer((request, response) => {
    const answer = answers[Math.min(asked, answers.length - 1)] ?? 'error';
    asked += 1;
    if (request.url !== '/metrics?format=json' || answer === 'error') {
      response.writeHead(500).end('Internal Server Error');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ workers: { max: 10, active: answer, available: 10 - answer } }));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, asked: () => asked };
}

/** Runs the drain (no database in its environment): exit code and seconds taken. */
function drain(
  serve: number,
  grace: number,
  port: number,
): Promise<{ code: number | null; seconds: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-c', RUN_DRAIN_SCRIPT, String(serve), String(grace), String(port)], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: 'ignore',
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, seconds: (Date.now() - started) / 1000 }));
  });
}

describe('the run drain', () => {
  it('ends once the process holds no run, asking once a second', async () => {
    const server = await metrics([2, 1, 0]);
    const ran = await drain(0, 30, server.port);
    expect(ran.code).toBe(0);
    expect(server.asked()).toBe(3);
    expect(ran.seconds).toBeGreaterThanOrEqual(2);
    expect(ran.seconds).toBeLessThan(10);
  }, 20_000);

  it('ends at the run grace while the process still holds a run', async () => {
    const server = await metrics([1]);
    const ran = await drain(0, 3, server.port);
    expect(ran.code).toBe(0);
    expect(ran.seconds).toBeGreaterThanOrEqual(3);
    expect(ran.seconds).toBeLessThan(6);
  }, 20_000);

  it('waits out the run grace where neither the process nor a database says what runs', async () => {
    const server = await metrics(['error']);
    const ran = await drain(0, 3, server.port);
    expect(ran.seconds).toBeGreaterThanOrEqual(3);
    expect(server.asked()).toBeGreaterThanOrEqual(3);
  }, 20_000);

  it('ends after 10 s in which neither the process nor a database answers, within a longer grace', async () => {
    const server = await metrics(['error']);
    const ran = await drain(0, 60, server.port);
    expect(ran.code).toBe(0);
    expect(ran.seconds).toBeGreaterThanOrEqual(9);
    expect(ran.seconds).toBeLessThan(30);
  }, 40_000);

  it('keeps serving its first seconds before it asks', async () => {
    const server = await metrics([0]);
    const ran = await drain(2, 30, server.port);
    expect(ran.seconds).toBeGreaterThanOrEqual(2);
    expect(server.asked()).toBe(1);
  }, 20_000);
});
