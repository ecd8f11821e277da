// Exec credential plugins (client.authentication.k8s.io v1 and v1beta1) run as client-go runs
// them: the kubeconfig's command, args and env, KUBERNETES_EXEC_INFO, no terminal; what they print
// is an ExecCredential with a token or a client certificate and an optional expiry.
import { spawn } from 'node:child_process';
import { z } from 'zod';
import { KubeconfigError, schemaError } from './kubeconfigError.ts';

export const EXEC_API_VERSIONS = [
  'client.authentication.k8s.io/v1',
  'client.authentication.k8s.io/v1beta1',
] as const;

/** The `user.exec` stanza of a kubeconfig. */
export const ExecConfigSchema = z.looseObject({
  apiVersion: z.enum(EXEC_API_VERSIONS),
  command: z.string().min(1),
  args: z.array(z.string()).nullish(),
  env: z.array(z.object({ name: z.string().min(1), value: z.string() })).nullish(),
  interactiveMode: z.enum(['Never', 'IfAvailable', 'Always']).nullish(),
  provideClusterInfo: z.boolean().nullish(),
  installHint: z.string().nullish(),
});
export type ExecConfig = z.infer<typeof ExecConfigSchema>;

/** What a plugin prints on stdout. */
export const ExecCredentialSchema = z.looseObject({
  apiVersion: z.enum(EXEC_API_VERSIONS),
  kind: z.literal('ExecCredential'),
  status: z.looseObject({
    expirationTimestamp: z.iso.datetime({ offset: true }).nullish(),
    token: z.string().nullish(),
    // PEM text, not base64 (unlike the kubeconfig's `-data` fields).
    clientCertificateData: z.string().nullish(),
    clientKeyData: z.string().nullish(),
  }),
});
export type ExecCredential = z.infer<typeof ExecCredentialSchema>;

/** `spec.cluster` of KUBERNETES_EXEC_INFO, sent only when the kubeconfig sets `provideClusterInfo`. */
export interface ExecClusterInfo {
  readonly server: string;
  readonly 'tls-server-name'?: string;
  readonly 'insecure-skip-tls-verify'?: boolean;
  /** base64, as in a kubeconfig. */
  readonly 'certificate-authority-data'?: string;
  /** The cluster's `client.authentication.k8s.io/exec` extension. */
  readonly config?: unknown;
}

export interface ExecPluginResult {
  readonly token: string | undefined;
  readonly clientCertificate: { readonly cert: string; readonly key: string } | undefined;
  /** Epoch milliseconds; undefined when the credential does not expire. */
  readonly expiresAt: number | undefined;
}

export interface ExecPluginRun {
  readonly config: ExecConfig;
  readonly cluster: ExecClusterInfo | undefined;
  /** The kubeconfig file and the field of the exec stanza, for errors. */
  readonly file: string | undefined;
  readonly field: string;
  readonly timeoutMs: number;
  /** The environment the plugin inherits (the agent's own by default). */
  readonly env?: NodeJS.ProcessEnv | undefined;
}

// A credential is a few kilobytes: anything far larger is not one, and must not fill the heap.
const MAX_OUTPUT_BYTES = 1024 * 1024;

/** Runs the plugin once and returns the credential it printed. */
export async function runExecPlugin(run: ExecPluginRun): Promise<ExecPluginResult> {
  const { config } = run;
  const fail = (detail: string): KubeconfigError =>
    new KubeconfigError({ reason: 'exec-failed', file: run.file, field: run.field, detail });
  const env: NodeJS.ProcessEnv = { ...(run.env ?? process.env) };
  for (const entry of config.env ?? []) env[entry.name] = entry.value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify({
    apiVersion: config.apiVersion,
    kind: 'ExecCredential',
    spec: {
      ...(config.provideClusterInfo === true && run.cluster !== undefined ? { cluster: run.cluster } : {}),
      // No terminal: the agent runs unattended (interactiveMode Always is refused at load).
      interactive: false,
    },
  });
  const command = `exec plugin "${config.command}"`;
  const stdout = await new Promise<string>((resolve, reject) => {
    // The plugin's stderr goes where kubectl sends it, to ours: it is the plugin's own diagnosis.
    // Its own process group, so that a timeout also stops what it started (a child holding the
    // output pipe open would otherwise keep the run waiting).
    const child = spawn(config.command, config.args ?? [], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const stop = (detail: string) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      child.stdout.destroy();
      settle(() => reject(fail(detail)));
    };
    const timer = setTimeout(
      () => stop(`${command} did not finish within ${run.timeoutMs} ms`),
      run.timeoutMs,
    );
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT_BYTES) stop(`${command} printed more than ${MAX_OUTPUT_BYTES} bytes`);
      else chunks.push(chunk);
    });
    // Spawn errors carry the arguments (`spawnargs`), which may be secret: only the code is kept.
    child.on('error', (error: NodeJS.ErrnoException) => {
      const hint = config.installHint ? ` (${config.installHint.trim()})` : '';
      settle(() =>
        reject(
          error.code === 'ENOENT'
            ? fail(`${command} not found${hint}`)
            : fail(`${command} could not start: ${error.code ?? 'error'}`),
        ),
      );
    });
    child.on('close', (code, signal) => {
      settle(() => {
        if (signal !== null) reject(fail(`${command} was killed by ${signal}`));
        else if (code !== 0) reject(fail(`${command} exited with code ${code}`));
        else resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  });
  return parseExecCredential(stdout, run, fail);
}

function parseExecCredential(
  stdout: string,
  run: ExecPluginRun,
  fail: (detail: string) => KubeconfigError,
): ExecPluginResult {
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    // The output is not echoed: it may be a token printed the wrong way.
    throw fail('exec plugin output is not JSON');
  }
  const parsed = ExecCredentialSchema.safeParse(json);
  if (!parsed.success)
    throw schemaError(
      parsed.error,
      { file: run.file, field: run.field, what: 'exec plugin output is not an ExecCredential' },
      'exec-failed',
    );
  const credential = parsed.data;
  if (credential.apiVersion !== run.config.apiVersion)
    throw fail(
      `exec plugin is configured for ${run.config.apiVersion} but returned ${credential.apiVersion}`,
    );
  const { token, clientCertificateData: cert, clientKeyData: key, expirationTimestamp } = credential.status;
  if (Boolean(cert) !== Boolean(key))
    throw fail('exec plugin returned a client certificate or key, not both');
  if (!token && !cert) throw fail('exec plugin returned neither a token nor a client certificate and key');
  return {
    token: token || undefined,
    clientCertificate: cert && key ? { cert, key } : undefined,
    expiresAt: expirationTimestamp ? Date.parse(expirationTimestamp) : undefined,
  };
}
