// Where the API server is and how to prove who we are: the server address and TLS trust, and
// per-request credentials (headers, a client certificate) that may rotate. The transport asks for
// them on every request; a source caches them. This one adapts the KubeConfig of
// @kubernetes/client-node (kubeconfig files, in-cluster, exec plugins).
import { existsSync } from 'node:fs';
import type { RequestOptions as HttpsRequestOptions } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';

/** PEM text or bytes. */
export type Pem = string | Buffer;

/** How to verify the API server; the client certificate, which may rotate, is in `Credentials`. */
export interface ServerTls {
  /** Undefined means the system's roots. */
  readonly ca?: Pem | undefined;
  readonly rejectUnauthorized: boolean;
  readonly servername?: string | undefined;
}

export interface ClientCertificate {
  readonly cert: Pem;
  readonly key: Pem;
}

export interface Credentials {
  /** `authorization` when the user has a token or basic auth; empty otherwise. */
  readonly headers: Readonly<Record<string, string>>;
  readonly clientCertificate?: ClientCertificate | undefined;
  /** Changes whenever credentials are obtained anew: passed to `invalidate()` after a 401. */
  readonly generation: number;
  /** Changes only when the client certificate changes: the transport then opens a new pool. */
  readonly certificateGeneration: number;
}

/** The cluster to talk to and how. */
export interface ClusterConnection {
  /** Base URL without a trailing slash. */
  readonly server: string;
  readonly tls: ServerTls;
  /** Cheap when cached. */
  credentials(): Promise<Credentials>;
  /**
   * The API server refused the credentials (401): the next call obtains them anew. With the
   * generation the refused request used, a refusal of already replaced credentials is ignored.
   */
  invalidate(generation?: number): void;
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';
// Re-read now and then: in-cluster tokens rotate, and the KubeConfig re-runs an exec plugin
// whose credential expired (status.expirationTimestamp) only when asked.
const CREDENTIALS_CACHE_MS = 10_000;

const PemSchema = z.union([z.string(), z.instanceof(Buffer)]);
const HeaderValueSchema = z.string();

/**
 * A kubeconfig file; without a path, the in-cluster service account when running in a Pod, else
 * the default kubeconfig ($KUBECONFIG, ~/.kube/config).
 */
export async function loadKubeconfigConnection(path: string | undefined): Promise<ClusterConnection> {
  const config = new KubeConfig();
  if (path !== undefined) config.loadFromFile(path);
  else if (process.env.KUBERNETES_SERVICE_HOST && existsSync(IN_CLUSTER_TOKEN)) config.loadFromCluster();
  else config.loadFromDefault();
  return kubeConfigConnection(config);
}

/** The current context of an already loaded KubeConfig. */
export async function kubeConfigConnection(
  config: KubeConfig,
  options: { readonly cacheMs?: number; readonly now?: () => number } = {},
): Promise<ClusterConnection> {
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new Error('kubeconfig has no current cluster');
  const cacheMs = options.cacheMs ?? CREDENTIALS_CACHE_MS;
  const now = options.now ?? Date.now;
  const first = await httpsOptions(config);
  const tls: ServerTls = {
    ca: pem(first.ca),
    rejectUnauthorized: first.rejectUnauthorized ?? true,
    servername: first.servername ?? undefined,
  };
  let cached: { credentials: Credentials; at: number } | undefined;
  let generation = 0;
  let certificateGeneration = 0;
  let lastCertificate: ClientCertificate | undefined;
  const read = (options: HttpsRequestOptions): Credentials => {
    const certificate = certificateOf(options);
    if (!sameCertificate(certificate, lastCertificate)) certificateGeneration++;
    lastCertificate = certificate;
    generation++;
    return { headers: headersOf(options), clientCertificate: certificate, generation, certificateGeneration };
  };
  cached = { credentials: read(first), at: now() };
  return {
    server: cluster.server.replace(/\/+$/, ''),
    tls,
    async credentials() {
      if (cached === undefined || now() - cached.at > cacheMs) {
        cached = { credentials: read(await httpsOptions(config)), at: now() };
      }
      return cached.credentials;
    },
    invalidate(refused) {
      if (refused === undefined || refused === cached?.credentials.generation) cached = undefined;
    },
  };
}

async function httpsOptions(config: KubeConfig): Promise<HttpsRequestOptions> {
  const options: HttpsRequestOptions = {};
  await config.applyToHTTPSOptions(options);
  return options;
}

function headersOf(options: HttpsRequestOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.headers ?? {})) {
    const text = HeaderValueSchema.safeParse(value);
    if (text.success) headers[key.toLowerCase()] = text.data;
  }
  if (typeof options.auth === 'string') {
    headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
  }
  return headers;
}

function certificateOf(options: HttpsRequestOptions): ClientCertificate | undefined {
  const cert = pem(options.cert);
  const key = pem(options.key);
  return cert === undefined || key === undefined ? undefined : { cert, key };
}

/** One PEM value; a list (which a kubeconfig never yields) counts as none. */
function pem(value: unknown): Pem | undefined {
  const parsed = PemSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

function sameCertificate(a: ClientCertificate | undefined, b: ClientCertificate | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Buffer.from(a.cert).equals(Buffer.from(b.cert)) && Buffer.from(a.key).equals(Buffer.from(b.key));
}
