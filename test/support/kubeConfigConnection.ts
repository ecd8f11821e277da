// Tests build KubeConfigs in memory (a scripted loopback server, a proxy in front of the API
// server); this adapts one to the agent's ClusterConnection. The agent itself loads kubeconfigs
// with src/kube/kubeconfig.ts and never imports @kubernetes/client-node.
import type { RequestOptions as HttpsRequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import type {
  ClientCertificate,
  ClusterConnection,
  Credentials,
  ServerTls,
} from '../../src/kube/kubeconfig.ts';

const CREDENTIALS_CACHE_MS = 10_000;
const PemSchema = z.union([z.string(), z.instanceof(Buffer)]);
const HeaderValueSchema = z.string();

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
  const ca = pem(first.ca);
  const tls: ServerTls = {
    ...(ca === undefined ? {} : { ca }),
    rejectUnauthorized: first.rejectUnauthorized ?? true,
    ...(first.servername ? { servername: first.servername } : {}),
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
    return {
      headers: headersOf(options),
      ...(certificate === undefined ? {} : { clientCertificate: certificate }),
      generation,
      certificateGeneration,
    };
  };
  cached = { credentials: read(first), at: now() };
  return {
    source: 'file',
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
function pem(value: unknown): string | undefined {
  const parsed = PemSchema.safeParse(value);
  return parsed.success ? parsed.data.toString() : undefined;
}

function sameCertificate(a: ClientCertificate | undefined, b: ClientCertificate | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Buffer.from(a.cert).equals(Buffer.from(b.cert)) && Buffer.from(a.key).equals(Buffer.from(b.key));
}
