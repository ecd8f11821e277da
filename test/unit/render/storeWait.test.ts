// A new deployment's server starts once its stores answer, and its pod is ready within a second of
// the server: every application pod first waits, in an init container of the server's own image,
// for the PostgreSQL and Redis the agent provisions (a LangGraph server started before them exits
// and backs off), and a startup probe looks every second until the server first answers.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Secret } from '../../../src/controlplane/schemas/index.ts';
import { LABEL_COMPONENT } from '../../../src/objects/ownership.ts';
import {
  type KubeObject,
  RenderConfig,
  type RenderInput,
  renderDeployment,
} from '../../../src/render/index.ts';
import type { RenderConfigInput } from '../../../src/render/renderConfig.ts';
import { withSpec } from '../../support/renderFixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Json = Record<string, any>;

const ALWAYS: RenderConfigInput = { database: { provision: 'always' }, kvstore: { provision: 'always' } };
const EVERY_ROLE = { queue_min_scale: 1, orchestrator_min_scale: 1, executor_cpu: 0.1 };
const DB = 'hello-db.apps.svc:5432';
const KV = 'hello-kvstore.apps.svc:6379';

function render(input: RenderInput, overrides: RenderConfigInput = ALWAYS): KubeObject[] {
  const result = renderDeployment(input, RenderConfig.parse(overrides));
  if (!result.ok) throw result.error;
  return result.value.objects;
}

/** The pod spec of each application workload, by role. */
function podSpecs(objects: readonly KubeObject[]): Record<string, Json> {
  const found: Record<string, Json> = {};
  for (const object of objects as unknown as Json[]) {
    const template = object.kind === 'PodTemplate' ? object.template : object.spec?.template;
    const role = template?.metadata?.labels?.[LABEL_COMPONENT];
    if (['main', 'queue', 'orchestrator', 'executor'].includes(role)) found[role] = template.spec;
  }
  return found;
}

/** What each role's store wait waits for (`host:port`), or undefined for none. */
function waits(objects: readonly KubeObject[]): Record<string, string[] | undefined> {
  return Object.fromEntries(
    Object.entries(podSpecs(objects)).map(([role, spec]) => {
      const wait = (spec.initContainers as Json[] | undefined)?.find((c) => c.name === 'wait-for-stores');
      return [role, wait ? (wait.command as string[]).slice(3) : undefined];
    }),
  );
}

describe('the wait for the stores', () => {
  it('comes first in every application pod but the executors, of the server image, with its resources and hardening, before the deployment own init containers', () => {
    const objects = render(
      withSpec({ ...EVERY_ROLE, init_containers: [{ name: 'migrate', image: 'migrate:1' }] }),
    );
    const { executor, ...specs } = podSpecs(objects);
    expect(Object.keys(specs).sort()).toEqual(['main', 'orchestrator', 'queue']);
    // Executors' pods are made for runs, once the stores answer.
    expect(executor?.initContainers.map((c: Json) => c.name)).toEqual(['migrate']);
    for (const spec of Object.values(specs)) {
      const [wait, own] = spec.initContainers as Json[];
      const app = spec.containers[0];
      expect(wait?.name).toBe('wait-for-stores');
      expect(wait?.image).toBe(app.image);
      expect(wait?.command.slice(0, 2)).toEqual(['python3', '-c']);
      expect(wait?.command.slice(3)).toEqual([KV, DB]);
      expect(wait?.resources).toEqual(app.resources);
      expect(wait?.securityContext).toEqual(app.securityContext);
      // No secret reaches it: it needs none.
      expect(JSON.stringify(wait)).not.toContain('secretKeyRef');
      expect(own?.name).toBe('migrate');
    }
  });

  it('finds the database by name as soon as its pod has an address, so that no early look-up is cached as absent', () => {
    const service = render(withSpec({})).find(
      (o) => o.kind === 'Service' && o.metadata.name === 'hello-db',
    ) as unknown as Json;
    expect(service.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
  });

  it('waits only for the stores the agent provisions, and is absent without them or when turned off', () => {
    const ownDatabase: Secret = {
      name: 'POSTGRES_URI_CUSTOM',
      value: 'postgresql://u:p@db.example.test/agent',
    };
    expect(waits(render(withSpec({ queue_min_scale: 1 }, { secrets: [ownDatabase] })))).toEqual({
      main: [KV],
      queue: [KV],
    });
    expect(waits(render(withSpec({ db_storage_gi: 2 }), {})).main).toEqual([DB]);
    expect(waits(render(withSpec({}), {})).main).toBeUndefined();
    expect(waits(render(withSpec({}), { ...ALWAYS, app: { waitForStores: false } })).main).toBeUndefined();
  });

  it('keeps its name the agent own: a deployment init container of that name is refused while the wait is on', () => {
    const input = withSpec({ init_containers: [{ name: 'wait-for-stores', image: 'mine:1' }] });
    const refused = renderDeployment(input, RenderConfig.parse(ALWAYS));
    expect(refused.ok).toBe(false);
    if (!refused.ok)
      expect(refused.error.problems).toContainEqual(
        expect.objectContaining({ message: 'duplicate container name wait-for-stores' }),
      );
    expect(renderDeployment(input, RenderConfig.parse({ ...ALWAYS, app: { waitForStores: false } })).ok).toBe(
      true,
    );
  });

  it('is a script that exits once every store accepts a connection, not before', async () => {
    const wait = (podSpecs(render(withSpec({}))).main?.initContainers as Json[] | undefined)?.[0];
    const script = wait?.command[2] as string;
    const late = createServer((socket) => socket.end());
    const early = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => early.listen(0, '127.0.0.1', resolve));
    // A free port for the late one: taken, then given back until it opens.
    await new Promise<void>((resolve) => late.listen(0, '127.0.0.1', resolve));
    const latePort = (late.address() as { port: number }).port;
    await new Promise<void>((resolve) => late.close(() => resolve()));
    const earlyPort = (early.address() as { port: number }).port;
    const started = Date.now();
    const child = spawn('python3', ['-c', script, `127.0.0.1:${earlyPort}`, `localhost:${latePort}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(child.exitCode).toBeNull();
    await new Promise<void>((resolve) => late.listen(latePort, '127.0.0.1', resolve));
    const opened = Date.now();
    expect(await exited).toBe(0);
    expect(Date.now() - opened).toBeLessThan(1_000);
    expect(opened - started).toBeGreaterThanOrEqual(1_500);
    expect(output).toContain(`waiting for localhost:${latePort}`);
    await Promise.all([late, early].map((s) => new Promise((resolve) => s.close(resolve))));
  });
});

describe('the startup probe of the LangGraph containers', () => {
  it('asks the server every second until it first answers, on the API server and the queue workers, and leaves the readiness probe as it was', () => {
    const specs = podSpecs(render(withSpec({ queue_min_scale: 1 })));
    for (const role of ['main', 'queue']) {
      const app = specs[role]?.containers[0];
      expect(app.startupProbe).toEqual({
        httpGet: { path: '/ok', port: 'http' },
        periodSeconds: 1,
        timeoutSeconds: 1,
        failureThreshold: 300,
      });
      expect(app.readinessProbe.periodSeconds).toBe(10);
    }
    const none = podSpecs(render(withSpec({}), { app: { startupProbe: null } }));
    expect(none.main?.containers[0].startupProbe).toBeUndefined();
  });
});
