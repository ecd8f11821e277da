// Finds the cluster the agent talks to as client-go does — an explicit kubeconfig, else the Pod's
// service account, else $KUBECONFIG merged, else ~/.kube/config — and turns it into the server, its
// TLS trust and per-request credentials. Ours rather than @kubernetes/client-node's KubeConfig,
// which loads the whole generated API with it (~78 MB of RSS).
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import {
  type ExecClusterInfo,
  ExecConfigSchema,
  type ExecPluginRun,
  runExecPlugin,
} from './execCredential.ts';
import { KubeconfigError, schemaError } from './kubeconfigError.ts';

export { KubeconfigError } from './kubeconfigError.ts';

/** Where a Pod's service-account token and cluster CA are mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Bound service-account tokens rotate: client-go re-reads token files every minute. */
export const TOKEN_FILE_REFRESH_MS = 60_000;
const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
// A failing plugin is not re-run on every request: its failure stands this long (or until invalidate()).
const EXEC_FAILURE_HOLD_MS = 5_000;

const text = z.string().nullish();

const ClusterSchema = z.looseObject({
  server: text,
  'certificate-authority': text,
  'certificate-authority-data': text,
  'insecure-skip-tls-verify': z.boolean().nullish(),
  'tls-server-name': text,
  'proxy-url': text,
  extensions: z.array(z.looseObject({ name: z.string(), extension: z.unknown() })).nullish(),
});

const UserSchema = z.looseObject({
  'client-certificate': text,
  'client-certificate-data': text,
  'client-key': text,
  'client-key-data': text,
  token: text,
  tokenFile: text,
  username: text,
  password: text,
  // Checked with ExecConfigSchema only when the user is the one in use, as client-go validates
  // only the current context: a broken entry elsewhere in a shared kubeconfig does not matter.
  exec: z.looseObject({}).nullish(),
  'auth-provider': z.looseObject({ name: z.string() }).nullish(),
  as: text,
  'as-uid': text,
  'as-groups': z.array(z.string()).nullish(),
  'as-user-extra': z.record(z.string(), z.array(z.string())).nullish(),
});

const ContextSchema = z.looseObject({ cluster: text, user: text, namespace: text });

/** A kubeconfig document (kind Config, v1); `null` lists, as kubectl writes them, are empty. */
export const KubeconfigSchema = z.looseObject({
  apiVersion: text,
  kind: text,
  clusters: z.array(z.object({ name: z.string().min(1), cluster: ClusterSchema })).nullish(),
  users: z.array(z.object({ name: z.string().min(1), user: UserSchema.nullish() })).nullish(),
  contexts: z.array(z.object({ name: z.string().min(1), context: ContextSchema })).nullish(),
  'current-context': text,
});
export type Kubeconfig = z.infer<typeof KubeconfigSchema>;
type KubeconfigCluster = z.infer<typeof ClusterSchema>;
type KubeconfigUser = z.infer<typeof UserSchema>;
type KubeconfigContext = z.infer<typeof ContextSchema>;

/** How to verify the API server; the client certificate, which may rotate, is in `Credentials`. */
export interface ServerTls {
  /** PEM; undefined means the system's roots. */
  readonly ca?: string;
  readonly rejectUnauthorized: boolean;
  readonly servername?: string;
}

export interface ClientCertificate {
  /** PEM. */
  readonly cert: string;
  /** PEM. */
  readonly key: string;
}

export interface Credentials {
  /** `authorization` when the user has a token or basic auth; empty otherwise. */
  readonly headers: Readonly<Record<string, string>>;
  readonly clientCertificate?: ClientCertificate;
  /** Changes whenever a credential is obtained anew: pass it to `invalidate()` after a 401. */
  readonly generation: number;
  /** Changes only when the client certificate changes: the transport then needs a new connection pool. */
  readonly certificateGeneration: number;
}

/** The cluster to talk to and how. */
export interface ClusterConnection {
  readonly source: 'file' | 'in-cluster';
  /** The kubeconfig files read, in precedence order (absent in-cluster). */
  readonly paths?: readonly string[];
  readonly context?: string;
  /** The context's namespace, or the service account's. */
  readonly namespace?: string;
  /** Base URL without a trailing slash. */
  readonly server: string;
  readonly tls: ServerTls;
  /** Cheap when cached: re-reads token files at most every minute, runs an exec plugin when needed. */
  credentials(): Promise<Credentials>;
  /**
   * The API server refused the credentials (401): the next call obtains them anew. With the
   * generation the refused request used, a refusal of already replaced credentials is ignored.
   */
  invalidate(generation?: number): void;
}

export interface LoadKubeconfigOptions {
  /** An explicit kubeconfig file: no other source is considered. */
  readonly path?: string | undefined;
  /** A context other than the current one. */
  readonly context?: string | undefined;
  /** Defaults to process.env (KUBERNETES_SERVICE_HOST/PORT, KUBECONFIG, and the exec plugin's environment). */
  readonly env?: NodeJS.ProcessEnv;
  /** Where the service account is mounted; tests point it elsewhere. */
  readonly serviceAccountDir?: string;
  /** For ~/.kube/config; defaults to the user's home. */
  readonly homeDir?: string;
  readonly tokenFileRefreshMs?: number;
  readonly execTimeoutMs?: number;
  /** Epoch milliseconds, for token-file refresh and exec expiry; tests move it. */
  readonly now?: () => number;
}

/** Loads the connection as client-go would, in its order of sources. */
export async function loadKubeconfig(options: LoadKubeconfigOptions = {}): Promise<ClusterConnection> {
  const env = options.env ?? process.env;
  if (options.path !== undefined) {
    const file = resolve(options.path);
    return fromFiles([await readKubeconfigFile(file, true)], options);
  }
  const inCluster = await inClusterConnection(options);
  if (inCluster !== undefined) return inCluster;
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((entry) => entry !== '');
  if (listed.length > 0) {
    const files = [...new Set(listed.map((entry) => resolve(entry)))];
    // As client-go: files of the list that do not exist are skipped; one at least must.
    const read = (await Promise.all(files.map((file) => readKubeconfigFile(file, false)))).filter(
      (parsed) => parsed !== undefined,
    );
    if (read.length === 0)
      throw new KubeconfigError({
        reason: 'not-found',
        detail: `none of the files in $KUBECONFIG exists (${files.join(', ')})`,
      });
    return fromFiles(read, options);
  }
  const file = join(options.homeDir ?? homedir(), '.kube', 'config');
  const parsed = await readKubeconfigFile(file, false);
  if (parsed === undefined)
    throw new KubeconfigError({
      reason: 'not-found',
      file,
      detail: 'no kubeconfig: not in a Pod, $KUBECONFIG unset and no ~/.kube/config',
    });
  return fromFiles([parsed], options);
}

/** A named entry with the file and field it came from: relative paths and errors refer to them. */
interface Located<T> {
  readonly value: T;
  readonly file: string;
  readonly field: string;
}

interface ParsedFile {
  readonly file: string;
  readonly document: Kubeconfig;
}

async function readKubeconfigFile(file: string, required: true): Promise<ParsedFile>;
async function readKubeconfigFile(file: string, required: false): Promise<ParsedFile | undefined>;
async function readKubeconfigFile(file: string, required: boolean): Promise<ParsedFile | undefined> {
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return undefined;
    throw new KubeconfigError({
      reason: code === 'ENOENT' ? 'not-found' : 'unreadable',
      file,
      detail: code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? 'error'})`,
      cause: error,
    });
  }
  let raw: unknown;
  try {
    raw = parseYaml(source);
  } catch (error) {
    // yaml's own message quotes the offending line, which may hold a token: position only.
    const at = error instanceof YAMLParseError ? error.linePos?.[0] : undefined;
    throw new KubeconfigError({
      reason: 'invalid',
      file,
      detail: `not valid YAML${at === undefined ? '' : ` (line ${at.line}, column ${at.col})`}`,
    });
  }
  // An empty file is an empty kubeconfig, as for client-go.
  const parsed = KubeconfigSchema.safeParse(raw ?? {});
  if (!parsed.success) throw schemaError(parsed.error, { file, what: 'not a kubeconfig' });
  return { file, document: parsed.data };
}

interface MergedKubeconfig {
  readonly clusters: Map<string, Located<KubeconfigCluster>>;
  readonly users: Map<string, Located<KubeconfigUser>>;
  readonly contexts: Map<string, Located<KubeconfigContext>>;
  readonly currentContext: Located<string> | undefined;
}

/** client-go's merge: the first file to define a name wins, and the first current-context set wins. */
function mergeKubeconfigs(files: readonly ParsedFile[]): MergedKubeconfig {
  const merged: MergedKubeconfig = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: undefined,
  };
  let currentContext: Located<string> | undefined;
  const add = <T>(into: Map<string, Located<T>>, name: string, located: Located<T>) => {
    if (!into.has(name)) into.set(name, located);
  };
  for (const { file, document } of files) {
    document.clusters?.forEach((entry, index) => {
      add(merged.clusters, entry.name, { value: entry.cluster, file, field: `clusters[${index}].cluster` });
    });
    document.users?.forEach((entry, index) => {
      add(merged.users, entry.name, { value: entry.user ?? {}, file, field: `users[${index}].user` });
    });
    document.contexts?.forEach((entry, index) => {
      add(merged.contexts, entry.name, { value: entry.context, file, field: `contexts[${index}].context` });
    });
    const current = document['current-context'];
    if (currentContext === undefined && current)
      currentContext = { value: current, file, field: 'current-context' };
  }
  return { ...merged, currentContext };
}

async function fromFiles(
  files: readonly ParsedFile[],
  options: LoadKubeconfigOptions,
): Promise<ClusterConnection> {
  const merged = mergeKubeconfigs(files);
  const paths = files.map((parsed) => parsed.file);
  const contextName = options.context ?? merged.currentContext?.value;
  const firstFile = paths[0];
  if (contextName === undefined)
    throw new KubeconfigError({ reason: 'invalid', file: firstFile, detail: 'no current-context is set' });
  const context = merged.contexts.get(contextName);
  if (context === undefined)
    throw new KubeconfigError({
      reason: 'invalid',
      file: merged.currentContext?.file ?? firstFile,
      field: options.context === undefined ? 'current-context' : undefined,
      detail: `context "${contextName}" is not defined`,
    });
  const clusterName = context.value.cluster;
  const cluster = clusterName ? merged.clusters.get(clusterName) : undefined;
  if (cluster === undefined)
    throw new KubeconfigError({
      reason: 'invalid',
      file: context.file,
      field: `${context.field}.cluster`,
      detail: clusterName ? `cluster "${clusterName}" is not defined` : 'no cluster is named',
    });
  const userName = context.value.user;
  const user = userName ? merged.users.get(userName) : undefined;
  if (userName && user === undefined)
    throw new KubeconfigError({
      reason: 'invalid',
      file: context.file,
      field: `${context.field}.user`,
      detail: `user "${userName}" is not defined`,
    });
  const server = await clusterOf(cluster);
  const credentials =
    user === undefined ? new CredentialSource({}, options) : await userCredentials(user, server, options);
  return connection(
    {
      source: 'file',
      paths,
      context: contextName,
      ...(context.value.namespace ? { namespace: context.value.namespace } : {}),
      server: server.url,
      tls: server.tls,
    },
    credentials,
  );
}

interface ResolvedCluster {
  readonly url: string;
  readonly tls: ServerTls;
  readonly execInfo: ExecClusterInfo;
}

async function clusterOf(cluster: Located<KubeconfigCluster>): Promise<ResolvedCluster> {
  const { value, file, field } = cluster;
  const invalid = (name: string, detail: string) =>
    new KubeconfigError({ reason: 'invalid', file, field: `${field}.${name}`, detail });
  if (!value.server) throw invalid('server', 'no server is set');
  // The URL is not echoed: it may carry user info.
  if (!URL.canParse(value.server)) throw invalid('server', 'is not a URL');
  if (value['proxy-url'])
    throw new KubeconfigError({
      reason: 'unsupported',
      file,
      field: `${field}.proxy-url`,
      detail: 'a proxy is not supported: reach the API server directly',
    });
  const insecure = value['insecure-skip-tls-verify'] === true;
  // client-go refuses to send credentials in clear; so do we, unless the kubeconfig says insecure.
  if (new URL(value.server).protocol === 'http:' && !insecure)
    throw invalid(
      'server',
      'is http://: credentials would travel unencrypted (use https, or set insecure-skip-tls-verify: true to accept it)',
    );
  if (value['certificate-authority'] && value['certificate-authority-data'])
    throw invalid(
      'certificate-authority-data',
      'certificate-authority and certificate-authority-data are both set',
    );
  if (insecure && (value['certificate-authority'] || value['certificate-authority-data']))
    throw invalid(
      'insecure-skip-tls-verify',
      'a certificate authority with insecure-skip-tls-verify is not allowed',
    );
  const ca = value['certificate-authority-data']
    ? decodeData(value['certificate-authority-data'], file, `${field}.certificate-authority-data`)
    : value['certificate-authority']
      ? await readReferenced(cluster, value['certificate-authority'], 'certificate-authority')
      : undefined;
  const servername = value['tls-server-name'] || undefined;
  const execConfig = value.extensions?.find((entry) => entry.name === 'client.authentication.k8s.io/exec');
  return {
    url: value.server.replace(/\/+$/, ''),
    tls: {
      ...(ca === undefined ? {} : { ca }),
      rejectUnauthorized: !insecure,
      ...(servername === undefined ? {} : { servername }),
    },
    execInfo: {
      server: value.server,
      ...(servername === undefined ? {} : { 'tls-server-name': servername }),
      ...(insecure ? { 'insecure-skip-tls-verify': true } : {}),
      ...(ca === undefined ? {} : { 'certificate-authority-data': Buffer.from(ca).toString('base64') }),
      ...(execConfig === undefined ? {} : { config: execConfig.extension }),
    },
  };
}

async function userCredentials(
  user: Located<KubeconfigUser>,
  cluster: ResolvedCluster,
  options: LoadKubeconfigOptions,
): Promise<CredentialSource> {
  const { value, file, field } = user;
  const at = (name: string) => `${field}.${name}`;
  const provider = value['auth-provider'];
  if (provider)
    throw new KubeconfigError({
      reason: 'unsupported',
      file,
      field: at('auth-provider'),
      detail: `auth-provider "${provider.name}" is not supported (client-go removed the legacy providers): use an exec credential plugin, e.g. gke-gcloud-auth-plugin or kubelogin`,
    });
  for (const name of ['as', 'as-uid', 'as-groups', 'as-user-extra'] as const) {
    if (value[name])
      throw new KubeconfigError({
        reason: 'unsupported',
        file,
        field: at(name),
        detail: 'impersonation is not supported: give the agent its own identity',
      });
  }
  const invalid = (name: string, detail: string) =>
    new KubeconfigError({ reason: 'invalid', file, field: at(name), detail });
  const hasToken = Boolean(value.token || value.tokenFile);
  const hasBasic = Boolean(value.username || value.password);
  if (hasToken && hasBasic)
    throw invalid('username', 'more than one authentication method: token and username/password');
  for (const [path, data] of [
    ['client-certificate', 'client-certificate-data'],
    ['client-key', 'client-key-data'],
  ] as const) {
    if (value[path] && value[data]) throw invalid(data, `${path} and ${data} are both set`);
  }
  const cert = value['client-certificate-data']
    ? decodeData(value['client-certificate-data'], file, at('client-certificate-data'))
    : value['client-certificate']
      ? await readReferenced(user, value['client-certificate'], 'client-certificate')
      : undefined;
  const key = value['client-key-data']
    ? decodeData(value['client-key-data'], file, at('client-key-data'))
    : value['client-key']
      ? await readReferenced(user, value['client-key'], 'client-key')
      : undefined;
  if ((cert === undefined) !== (key === undefined))
    throw invalid(
      cert === undefined ? 'client-certificate' : 'client-key',
      'a client certificate needs both a certificate and a key',
    );
  const clientCertificate = cert !== undefined && key !== undefined ? { cert, key } : undefined;

  if (value.token) return new CredentialSource({ token: value.token, clientCertificate }, options);
  if (value.tokenFile) {
    const tokenFile = new TokenFile(resolveFrom(file, value.tokenFile), file, at('tokenFile'), options);
    await tokenFile.read();
    return new CredentialSource({ tokenFile, clientCertificate }, options);
  }
  if (hasBasic) {
    const basic = Buffer.from(`${value.username ?? ''}:${value.password ?? ''}`).toString('base64');
    return new CredentialSource({ headers: { authorization: `Basic ${basic}` }, clientCertificate }, options);
  }
  // As client-go: a static credential makes an exec plugin unused.
  if (clientCertificate !== undefined || !value.exec)
    return new CredentialSource({ clientCertificate }, options);
  const parsed = ExecConfigSchema.safeParse(value.exec);
  if (!parsed.success)
    throw schemaError(parsed.error, { file, field: at('exec'), what: 'not a valid exec plugin' });
  const exec = parsed.data;
  if (exec.interactiveMode === 'Always')
    throw new KubeconfigError({
      reason: 'unsupported',
      file,
      field: at('exec.interactiveMode'),
      detail: 'interactiveMode Always needs a terminal, and the agent runs without one',
    });
  // As client-go: a command with a path separator is relative to the kubeconfig, a bare name is looked up in PATH.
  const command = exec.command.includes(sep) ? resolveFrom(file, exec.command) : exec.command;
  return new CredentialSource(
    {
      exec: {
        config: { ...exec, command },
        cluster: cluster.execInfo,
        file,
        field: at('exec'),
        timeoutMs: options.execTimeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
        env: options.env,
      },
    },
    options,
  );
}

/** The Pod's service account, when KUBERNETES_SERVICE_HOST/PORT are set and the token is mounted. */
async function inClusterConnection(options: LoadKubeconfigOptions): Promise<ClusterConnection | undefined> {
  const env = options.env ?? process.env;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return undefined;
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const tokenFile = new TokenFile(join(dir, 'token'), dir, 'token', options);
  try {
    await tokenFile.read();
  } catch (error) {
    if (error instanceof KubeconfigError && error.reason === 'not-found') return undefined;
    throw error;
  }
  const ca = await readOptional(join(dir, 'ca.crt'));
  const namespace = (await readOptional(join(dir, 'namespace')))?.trim();
  return connection(
    {
      source: 'in-cluster',
      ...(namespace ? { namespace } : {}),
      server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
      tls: { ...(ca === undefined ? {} : { ca }), rejectUnauthorized: true },
    },
    new CredentialSource({ tokenFile }, options),
  );
}

function connection(
  fields: Omit<ClusterConnection, 'credentials' | 'invalidate'>,
  source: CredentialSource,
): ClusterConnection {
  // Secrets stay in the source's private fields: logging the connection shows none.
  return {
    ...fields,
    credentials: () => source.credentials(),
    invalidate: (generation) => source.invalidate(generation),
  };
}

interface CredentialSourceInit {
  readonly token?: string | undefined;
  readonly headers?: Record<string, string>;
  readonly tokenFile?: TokenFile;
  readonly exec?: ExecPluginRun;
  readonly clientCertificate?: ClientCertificate | undefined;
}

/** Holds the current credentials and obtains them anew when a token file is due or an exec credential expires. */
class CredentialSource {
  readonly #init: CredentialSourceInit;
  readonly #now: () => number;
  #current: Credentials;
  #exec: { expiresAt: number | undefined } | undefined;
  #execRun: Promise<void> | undefined;
  #execFailure: { error: unknown; at: number } | undefined;

  constructor(init: CredentialSourceInit, options: LoadKubeconfigOptions) {
    this.#init = init;
    this.#now = options.now ?? Date.now;
    const headers: Record<string, string> = { ...init.headers };
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    const token = init.tokenFile?.current;
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    this.#current = {
      headers,
      ...(init.clientCertificate === undefined ? {} : { clientCertificate: init.clientCertificate }),
      generation: 1,
      certificateGeneration: 1,
    };
  }

  async credentials(): Promise<Credentials> {
    const { tokenFile, exec } = this.#init;
    if (tokenFile?.due()) {
      const token = await tokenFile.read();
      if (`Bearer ${token}` !== this.#current.headers.authorization)
        this.#replace({ authorization: `Bearer ${token}` }, this.#current.clientCertificate);
    }
    if (exec !== undefined && this.#execDue()) {
      const failure = this.#execFailure;
      if (failure !== undefined && this.#now() - failure.at < EXEC_FAILURE_HOLD_MS) throw failure.error;
      this.#execRun ??= this.#runExec(exec).finally(() => {
        this.#execRun = undefined;
      });
      await this.#execRun;
    }
    return this.#current;
  }

  invalidate(generation: number | undefined): void {
    if (generation !== undefined && generation !== this.#current.generation) return;
    this.#init.tokenFile?.expire();
    if (this.#init.exec !== undefined) {
      this.#exec = undefined;
      this.#execFailure = undefined;
    }
  }

  #execDue(): boolean {
    if (this.#exec === undefined) return true;
    const { expiresAt } = this.#exec;
    return expiresAt !== undefined && this.#now() >= expiresAt;
  }

  async #runExec(run: ExecPluginRun): Promise<void> {
    try {
      const result = await runExecPlugin(run);
      this.#execFailure = undefined;
      this.#exec = { expiresAt: result.expiresAt };
      this.#replace(
        result.token === undefined ? {} : { authorization: `Bearer ${result.token}` },
        result.clientCertificate,
      );
    } catch (error) {
      this.#execFailure = { error, at: this.#now() };
      throw error;
    }
  }

  #replace(headers: Record<string, string>, clientCertificate: ClientCertificate | undefined): void {
    const previous = this.#current;
    const certChanged =
      previous.clientCertificate?.cert !== clientCertificate?.cert ||
      previous.clientCertificate?.key !== clientCertificate?.key;
    this.#current = {
      headers,
      ...(clientCertificate === undefined ? {} : { clientCertificate }),
      generation: previous.generation + 1,
      certificateGeneration: previous.certificateGeneration + (certChanged ? 1 : 0),
    };
  }
}

/** A token in a file (service account, `tokenFile`), re-read when due; a failed re-read keeps the last token. */
class TokenFile {
  readonly #path: string;
  readonly #file: string;
  readonly #field: string;
  readonly #refreshMs: number;
  readonly #now: () => number;
  #token: string | undefined;
  #readAt = Number.NEGATIVE_INFINITY;

  constructor(path: string, file: string, field: string, options: LoadKubeconfigOptions) {
    this.#path = path;
    this.#file = file;
    this.#field = field;
    this.#refreshMs = options.tokenFileRefreshMs ?? TOKEN_FILE_REFRESH_MS;
    this.#now = options.now ?? Date.now;
  }

  get current(): string | undefined {
    return this.#token;
  }

  due(): boolean {
    return this.#now() - this.#readAt >= this.#refreshMs;
  }

  expire(): void {
    this.#readAt = Number.NEGATIVE_INFINITY;
  }

  async read(): Promise<string> {
    let token: string;
    try {
      token = (await readFile(this.#path, 'utf8')).trim();
      if (token === '') throw new Error('empty');
    } catch (error) {
      // As client-go's cached token source: a rotation caught half-written keeps the last good token.
      if (this.#token !== undefined) {
        this.#readAt = this.#now();
        return this.#token;
      }
      const code = (error as NodeJS.ErrnoException).code;
      throw new KubeconfigError({
        reason: code === 'ENOENT' ? 'not-found' : code === undefined ? 'invalid' : 'unreadable',
        file: this.#file,
        field: this.#field,
        detail:
          code === undefined
            ? `token file ${this.#path} is empty`
            : `cannot read token file ${this.#path} (${code})`,
      });
    }
    this.#token = token;
    this.#readAt = this.#now();
    return token;
  }
}

function resolveFrom(kubeconfigFile: string, path: string): string {
  return isAbsolute(path) ? path : resolve(dirname(kubeconfigFile), path);
}

async function readReferenced(entry: Located<unknown>, path: string, name: string): Promise<string> {
  const target = resolveFrom(entry.file, path);
  try {
    return await readFile(target, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new KubeconfigError({
      reason: code === 'ENOENT' ? 'not-found' : 'unreadable',
      file: entry.file,
      field: `${entry.field}.${name}`,
      detail: `cannot read ${target} (${code ?? 'error'})`,
      cause: error,
    });
  }
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new KubeconfigError({
      reason: 'unreadable',
      file: path,
      detail: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      cause: error,
    });
  }
}

/** A `-data` field: base64 of PEM. */
function decodeData(value: string, file: string, field: string): string {
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0)
    throw new KubeconfigError({ reason: 'invalid', file, field, detail: 'is not base64' });
  return Buffer.from(compact, 'base64').toString('utf8');
}
