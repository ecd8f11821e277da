// The CustomResourceDefinitions the test cluster serves beside the built-in kinds: the Gateway
// API's standard channel and KEDA's, fetched by crds.sh from their Go modules (cached outside the
// repository) and created at cluster start, so that what the agent renders for them is admitted
// — or refused — by the API server's own validation of them.
import { execFile, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const execFileAsync = promisify(execFile);

export class CrdInstallError extends Error {
  override readonly name = 'CrdInstallError';
  readonly code = 'CRD_INSTALL';
}

/** The CRDs every test cluster gets, by name: what the agent can render. */
export const REQUIRED_CRDS = [
  'httproutes.gateway.networking.k8s.io',
  'scaledobjects.keda.sh',
  'triggerauthentications.keda.sh',
] as const;

/** Runs crds.sh (a no-op once cached) and returns the directory of the YAML files. */
export async function ensureCrdFiles(): Promise<string> {
  const script = new URL('./crds.sh', import.meta.url).pathname;
  const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new CrdInstallError(`test/cluster/crds.sh failed with exit code ${code}`);
  const dir = stdout.trim().split('\n').at(-1);
  if (!dir) throw new CrdInstallError('crds.sh printed no directory');
  return dir;
}

/**
 * Creates every CRD of `dir` with kubectl (server-side apply: one already there is taken over as it
 * is) and waits until each is Established. kubectl sends the YAML as it is: a typed client would
 * drop the fields it has no model for under their YAML names (`x-kubernetes-validations`,
 * `x-kubernetes-int-or-string`), and with them the CRDs' validation rules.
 */
export async function installCrds(
  kubectl: string,
  kubeconfigPath: string,
  dir: string,
  log: (line: string) => void,
): Promise<string[]> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.yaml')).sort();
  const names: string[] = [];
  for (const file of files) {
    for (const document of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) {
      const body = document.toJSON() as { kind?: string; metadata?: { name?: string } } | null;
      if (body?.kind === 'CustomResourceDefinition' && body.metadata?.name) names.push(body.metadata.name);
    }
  }
  const missing = REQUIRED_CRDS.filter((name) => !names.includes(name));
  if (missing.length > 0) throw new CrdInstallError(`${dir} has no ${missing.join(', ')}`);
  const run = (args: readonly string[]) =>
    execFileAsync(kubectl, ['--kubeconfig', kubeconfigPath, ...args], { maxBuffer: 16 * 1024 * 1024 }).catch(
      (error: unknown) => {
        const stderr = (error as { stderr?: string }).stderr ?? '';
        throw new CrdInstallError(`kubectl ${args.slice(0, 2).join(' ')}: ${stderr.trim()}`, {
          cause: error,
        });
      },
    );
  await run([
    'apply',
    '--server-side',
    '--field-manager=k8s-listener-tests',
    ...files.flatMap((f) => ['-f', join(dir, f)]),
  ]);
  await run(['wait', '--for=condition=Established', '--timeout=60s', ...names.map((name) => `crd/${name}`)]);
  log(`CRDs installed: ${names.length} (Gateway API, KEDA)`);
  return names;
}
