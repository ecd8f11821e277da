// The control-plane emulator's HTTP server: the whole interface plus create, delete, listener
// writes and the status-report extension, over node:http with a small routing table.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import { z } from 'zod';
import { formatPath } from '../controlplane/parse.ts';
import {
  DeploymentCreate,
  DeploymentPatch,
  DeploymentStatus,
  DeploymentType,
  ListenerWrite,
  RevisionStatus,
  StatusReportBatch,
} from '../controlplane/schemas/index.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../jsonText.ts';
import { EmulatorState, type EmulatorStateInput } from './state.ts';
import { EmulatorError, EmulatorStore } from './store.ts';

export interface EmulatorOptions {
  readonly host?: string;
  readonly port?: number;
  /** When set, every request must carry it in X-Api-Key. */
  readonly apiKey?: string | undefined;
  readonly seedPath?: string | undefined;
  readonly seed?: EmulatorStateInput;
  /** Persist the state here (loaded at start when present, written after each change). */
  readonly statePath?: string | undefined;
  readonly logger?: Logger;
  readonly now?: () => Date;
}

export interface RunningEmulator {
  readonly url: string;
  state(): EmulatorState;
  /** Direct access to the rules, for tests and seeding (e.g. tags). */
  readonly store: EmulatorStore;
  /** Changes the key every request must carry from now on (undefined: none), as a key rotation does. */
  setApiKey(key: string | undefined): void;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_LIMIT = 20;

// Request bodies are strict: a read-only or unknown field (id, name in a PATCH, status…) is
// refused with 422 naming it, the same way on every endpoint.
// `tracked_packages` is the real control plane's (its CLI sends the packages a build tracks): accepted, not kept.
const PatchBody = z.strictObject({
  ...DeploymentPatch.shape,
  tracked_packages: z.array(z.string()).nullish(),
});
const CreateBody = z.strictObject(DeploymentCreate.shape);
const ListenerBody = z.strictObject(ListenerWrite.shape);
/** Body of the real control plane's deploy-log queries (what `langgraph deploy logs` sends). */
const DeployLogQuery = z.object({
  limit: z.number().int().min(1).max(1000).default(100),
  order: z.enum(['asc', 'desc']).default('desc'),
  level: z.string().optional(),
  query: z.string().optional(),
  start_time: z.string().optional(),
  end_time: z.string().optional(),
});

interface Request {
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  readonly tenantId: string | undefined;
  body(): Promise<unknown>;
}

interface Reply {
  readonly status: number;
  readonly body?: unknown;
}

type Handler = (request: Request) => Reply | Promise<Reply>;

interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  readonly handler: Handler;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const logger = (options.logger ?? pino({ level: 'silent' })).child({ component: 'emulator' });
  const store = new EmulatorStore(await loadState(options), options.now);
  const persist = persistence(options.statePath, store, logger);
  const routes = buildRoutes(store);
  let expectedKey = options.apiKey === undefined ? undefined : digest(options.apiKey);

  const server = createServer((req, res) => {
    const requestId = randomUUID();
    res.setHeader('x-request-id', requestId);
    handle(req, res).catch((error: unknown) => {
      logger.error({ err: error, requestId }, 'unhandled emulator error');
      // Never a request left without an answer: a reply begun is cut off.
      if (res.headersSent) res.destroy();
      else send(res, 500, errorBody('internal', 'internal error'));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const started = performance.now();
    if (expectedKey !== undefined) {
      const given = req.headers['x-api-key'];
      if (typeof given !== 'string' || !timingSafeEqual(digest(given), expectedKey)) {
        send(res, 401, errorBody('unauthorized', 'a valid X-Api-Key header is required'));
        return;
      }
    }
    const matching = routes.filter((route) => route.pattern.test(url.pathname));
    const route = matching.find((r) => r.method === req.method);
    if (!route) {
      if (matching.length > 0) {
        res.setHeader('allow', matching.map((r) => r.method).join(', '));
        send(res, 405, errorBody('method_not_allowed', `${req.method} is not allowed here`));
      } else {
        send(res, 404, errorBody('not_found', `no route for ${url.pathname}`));
      }
      return;
    }
    const params = (route.pattern.exec(url.pathname) ?? []).slice(1).map((p) => decodeURIComponent(p));
    const tenantHeader = req.headers['x-tenant-id'];
    try {
      const reply = await route.handler({
        params,
        query: url.searchParams,
        tenantId: typeof tenantHeader === 'string' && tenantHeader !== '' ? tenantHeader : undefined,
        body: () => readJson(req),
      });
      send(res, reply.status, reply.body);
      if (req.method !== 'GET' && reply.status < 300) persist.schedule();
    } catch (error) {
      if (!(error instanceof EmulatorError)) throw error;
      send(res, error.status, errorBody(error.code, error.message, error.field));
    }
    // Paths and statuses only: bodies may hold secret values.
    logger.debug(
      {
        method: req.method,
        path: url.pathname,
        status: res.statusCode,
        ms: Math.round(performance.now() - started),
      },
      'request',
    );
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    store,
    state: () => store.snapshot(),
    setApiKey: (key) => {
      expectedKey = key === undefined ? undefined : digest(key);
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await persist.flush();
    },
  };
}

function buildRoutes(store: EmulatorStore): Route[] {
  const id = '([^/]+)';
  const route = (method: string, path: string, handler: Handler): Route => ({
    method,
    pattern: new RegExp(`^${path}/?$`),
    handler,
  });
  const ok = (body: unknown): Reply => ({ status: 200, body });
  return [
    route('GET', '/v2/auth/providers', () => ok(store.snapshot().oauth_providers)),
    route('GET', `/v2/auth/providers/${id}`, ({ params: [providerId = ''] }) => {
      const provider = store.snapshot().oauth_providers.find((p) => p.id === providerId);
      if (!provider) throw new EmulatorError(404, 'not_found', `oauth provider ${providerId} not found`);
      return ok(provider);
    }),
    route('GET', `/v2/auth/agents/${id}/connections`, ({ params: [agentId = ''] }) =>
      ok({ data: store.snapshot().agent_connections[agentId] ?? [] }),
    ),
    route('GET', `/v1/integrations/repohost/${id}/repos`, ({ params: [integrationId = ''] }) =>
      ok(repositories(store.snapshot().repositories, integrationId)),
    ),
    route('GET', `/v1/integrations/hosted/repohost/${id}/repos`, ({ params: [integrationId = ''] }) =>
      ok(repositories(store.snapshot().hosted_repositories, integrationId)),
    ),

    route('GET', '/v2/deployments', ({ query, tenantId }) => {
      const status = enumParam(query, 'status', DeploymentStatus);
      const deploymentType = enumParam(query, 'deployment_type', DeploymentType);
      const all = store.listDeployments({
        tenantId,
        name: query.get('name') ?? undefined,
        nameContains: query.get('name_contains') ?? undefined,
        status,
        remoteReconciled: booleanParam(query, 'remote_reconciled'),
        tagValueIds: listParam(query, 'tag_value_ids'),
        imageVersion: query.get('image_version') ?? undefined,
        deploymentType,
        deploymentIds: listParam(query, 'deployment_ids'),
      });
      return ok(page(all, query));
    }),
    route('POST', '/v2/deployments', async ({ body, tenantId }) => ({
      status: 201,
      body: store.createDeployment(parseBody(CreateBody, await body()), tenantId),
    })),
    route('GET', `/v2/deployments/${id}`, ({ params: [deploymentId = ''], tenantId }) =>
      ok(store.getDeployment(deploymentId, tenantId)),
    ),
    route('PATCH', `/v2/deployments/${id}`, async ({ params: [deploymentId = ''], body, tenantId }) =>
      ok(store.patchDeployment(deploymentId, parseBody(PatchBody, await body()), tenantId)),
    ),
    route('DELETE', `/v2/deployments/${id}`, ({ params: [deploymentId = ''], tenantId }) =>
      ok(store.deleteDeployment(deploymentId, tenantId)),
    ),
    route('GET', `/v2/deployments/${id}/revisions`, ({ params: [deploymentId = ''], query, tenantId }) => {
      const statuses = listParam(query, 'status')?.map((value) => {
        const parsed = RevisionStatus.safeParse(value);
        if (!parsed.success)
          throw new EmulatorError(422, 'validation_error', `unknown revision status ${value}`, 'status');
        return parsed.data;
      });
      const revisions = store.listRevisions(
        deploymentId,
        { statuses, remoteReconciled: booleanParam(query, 'remote_reconciled') },
        tenantId,
      );
      return ok(page(revisions, query));
    }),
    route(
      'GET',
      `/v2/deployments/${id}/revisions/${id}`,
      ({ params: [deploymentId = '', revisionId = ''], tenantId }) =>
        ok(store.getRevision(deploymentId, revisionId, tenantId)),
    ),
    // The real control plane's log endpoints (`langgraph deploy logs`): here, what the listener reported.
    route('POST', `/v1/projects/${id}/deploy_logs`, async ({ params: [deploymentId = ''], body, tenantId }) =>
      ok({ logs: store.deployLogs(deploymentId, parseBody(DeployLogQuery, await body()), tenantId) }),
    ),
    route(
      'POST',
      `/v1/projects/${id}/revisions/${id}/deploy_logs`,
      async ({ params: [deploymentId = '', revisionId = ''], body, tenantId }) =>
        ok({
          logs: store.deployLogs(
            deploymentId,
            { ...parseBody(DeployLogQuery, await body()), revisionId },
            tenantId,
          ),
        }),
    ),
    route(
      'POST',
      `/v2/deployments/${id}/revisions/${id}/redeploy`,
      ({ params: [deploymentId = '', revisionId = ''], tenantId }) =>
        ok(store.redeploy(deploymentId, revisionId, tenantId)),
    ),

    route('GET', '/v2/listeners', ({ query }) => ok(page(store.listListeners(), query))),
    route('POST', '/v2/listeners', async ({ body }) => ({
      status: 201,
      body: store.createListener(parseBody(ListenerBody, await body())),
    })),
    route('GET', `/v2/listeners/${id}`, ({ params: [listenerId = ''] }) => ok(store.getListener(listenerId))),
    route('PUT', `/v2/listeners/${id}`, async ({ params: [listenerId = ''], body }) =>
      ok(store.putListener(listenerId, parseBody(ListenerBody, await body()))),
    ),
    route('POST', `/v2/listeners/${id}/status-reports`, async ({ params: [listenerId = ''], body }) => {
      const batch = parseBody(StatusReportBatch, await body());
      store.applyStatusReports(listenerId, batch.reports);
      return { status: 204 };
    }),
  ];
}

function repositories(source: Record<string, unknown[]>, integrationId: string): unknown[] {
  const repos = source[integrationId];
  if (!repos) throw new EmulatorError(404, 'not_found', `integration ${integrationId} not found`);
  return repos;
}

function page<T>(items: readonly T[], query: URLSearchParams): { resources: T[]; offset: number } {
  const limit = integerParam(query, 'limit', 1, 100) ?? DEFAULT_LIMIT;
  const offset = integerParam(query, 'offset', 0, Number.MAX_SAFE_INTEGER) ?? 0;
  const resources = items.slice(offset, offset + limit);
  return { resources, offset: offset + resources.length };
}

function integerParam(query: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
    throw new EmulatorError(422, 'validation_error', `${name} must be an integer ${range}`, name);
  }
  return value;
}

function booleanParam(query: URLSearchParams, name: string): boolean | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  if (raw !== 'true' && raw !== 'false') {
    throw new EmulatorError(422, 'validation_error', `${name} must be true or false`, name);
  }
  return raw === 'true';
}

function listParam(query: URLSearchParams, name: string): string[] | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

function enumParam<T extends string>(
  query: URLSearchParams,
  name: string,
  schema: z.ZodType<T>,
): T | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new EmulatorError(422, 'validation_error', `${name} has an unknown value`, name);
  return parsed.data;
}

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const first = parsed.error.issues[0];
  const keys = first && 'keys' in first && Array.isArray(first.keys) ? first.keys : [];
  const path = formatPath([...(first?.path ?? []), ...keys.slice(0, 1)]);
  const message = parsed.error.issues
    .map((issue) => `${formatPath(issue.path)}: ${issue.message}`)
    .join('; ');
  throw new EmulatorError(422, 'validation_error', message, path);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES)
      throw new EmulatorError(413, 'payload_too_large', 'request body exceeds 1 MiB');
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new EmulatorError(400, 'bad_request', 'request body is not valid JSON');
  }
  // Parsing does not recurse, but writing the body back does: one create nested 5,000 deep was
  // stored, and every later listing threw while writing it.
  if (nestsDeeperThan(body, MAX_JSON_DEPTH))
    throw new EmulatorError(
      400,
      'bad_request',
      `request body is nested deeper than ${MAX_JSON_DEPTH} levels`,
    );
  return body;
}

/**
 * Our error object, and FastAPI's `detail` beside it: the real control plane's clients (its CLI)
 * read a refusal's reason from `detail`.
 */
function errorBody(code: string, message: string, field?: string) {
  return { error: { code, message, ...(field ? { field } : {}) }, detail: message };
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined || status === 204) {
    res.writeHead(status).end();
    return;
  }
  // Written before the head: a body that cannot be written is a 500, not a reply begun and never ended.
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json' }).end(text);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

async function loadState(options: EmulatorOptions): Promise<EmulatorState> {
  if (options.statePath && existsSync(options.statePath)) {
    return EmulatorState.parse(
      bounded(JSON.parse(await readFile(options.statePath, 'utf8')), options.statePath),
    );
  }
  if (options.seed) return EmulatorState.parse(structuredClone(bounded(options.seed, 'the seed')));
  if (options.seedPath)
    return EmulatorState.parse(
      bounded(JSON.parse(await readFile(options.seedPath, 'utf8')), options.seedPath),
    );
  return EmulatorState.parse({});
}

/** A state or seed within the bound its requests are held to: what it holds is served back. */
function bounded<T>(state: T, source: string): T {
  // A request body's bound, and the few levels a state adds around a deployment (its list, its record).
  const limit = MAX_JSON_DEPTH + 3;
  if (nestsDeeperThan(state, limit)) throw new Error(`${source} is nested deeper than ${limit} levels`);
  return state;
}

/** Debounced, atomic (temp file + rename) writes of the state after changes. */
function persistence(path: string | undefined, store: EmulatorStore, logger: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();
  const write = () => {
    timer = undefined;
    if (!path) return writing;
    const temp = `${path}.${process.pid}.tmp`;
    writing = writing
      .then(async () => {
        await writeFile(temp, JSON.stringify(store.snapshot(), null, 2), { mode: 0o600 });
        await rename(temp, path);
      })
      .catch((error: unknown) => logger.error({ err: error }, 'could not persist emulator state'));
    return writing;
  };
  return {
    schedule() {
      if (!path || timer) return;
      timer = setTimeout(write, 50);
    },
    async flush() {
      if (timer) clearTimeout(timer);
      await write();
    },
  };
}
