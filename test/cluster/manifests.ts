// Generates deploy/kustomize (the plain manifests for teams without Helm) from the chart: `helm
// template` with deploy/kustomize/chart-values.yaml, split into the agent's base and the
// per-namespace RBAC base. `npm run manifests` rewrites them; the drift test compares.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

export const KUSTOMIZE_DIR = 'deploy/kustomize';
export const CHART_VALUES = `${KUSTOMIZE_DIR}/chart-values.yaml`;
/** The release (and so the objects' names) and its namespace the base is rendered for. */
export const BASE_RELEASE = 'k8s-listener';
export const BASE_NAMESPACE = 'k8s-listener';

const HEADER = `# Generated from charts/k8s-listener by \`npm run manifests\` (test/cluster/manifests.ts) with
# ${CHART_VALUES}. Do not edit: change the chart or the values and regenerate.
`;

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: { template?: { metadata?: { annotations?: Record<string, string> } } };
}

/** The chart's objects without what only Helm means: its chart label and the checksum (a generated ConfigMap's name hash does that job). */
function plain(object: KubeObject): KubeObject {
  const labels = object.metadata.labels;
  if (labels) {
    delete labels['helm.sh/chart'];
    if (labels['app.kubernetes.io/managed-by'] === 'Helm')
      labels['app.kubernetes.io/managed-by'] = 'kustomize';
  }
  const podMetadata = object.spec?.template?.metadata;
  if (podMetadata?.annotations) {
    delete podMetadata.annotations['checksum/config'];
    if (Object.keys(podMetadata.annotations).length === 0) delete podMetadata.annotations;
  }
  return object;
}

function documents(objects: readonly KubeObject[]): string {
  return HEADER + objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

/** Renders the chart and returns every generated file, by path relative to the repository. */
export async function generateManifests(helm: string): Promise<Map<string, string>> {
  const { stdout } = await run(
    helm,
    [
      'template',
      BASE_RELEASE,
      join(root, 'charts/k8s-listener'),
      '-n',
      BASE_NAMESPACE,
      '-f',
      join(root, CHART_VALUES),
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  // YAML 1.1, as Helm and kubectl read it: the chart's `defaultMode: 0440` is octal.
  const objects = parseAllDocuments(stdout, { version: '1.1' })
    .map((doc) => doc.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null)
    .map(plain);
  const own = objects.filter((o) => o.metadata.namespace === BASE_NAMESPACE);
  const watched = objects.filter((o) => o.metadata.namespace !== BASE_NAMESPACE);
  const configMap = own.find((o) => o.kind === 'ConfigMap');
  const configYaml = configMap?.data?.['config.yaml'];
  if (!configMap || configYaml === undefined)
    throw new Error('the chart rendered no ConfigMap with config.yaml');
  if (watched.some((o) => o.kind !== 'Role' && o.kind !== 'RoleBinding'))
    throw new Error(`unexpected objects outside ${BASE_NAMESPACE}: ${watched.map((o) => o.kind).join(', ')}`);

  const kustomization = (body: Record<string, unknown>) =>
    HEADER + stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', ...body });
  const files = new Map<string, string>();
  files.set(
    `${KUSTOMIZE_DIR}/base/kustomization.yaml`,
    kustomization({
      resources: ['agent.yaml'],
      // A generated ConfigMap's name carries a hash of its content: a changed config.yaml restarts the agent.
      configMapGenerator: [
        {
          name: configMap.metadata.name,
          namespace: BASE_NAMESPACE,
          files: ['config.yaml'],
          options: { labels: configMap.metadata.labels ?? {} },
        },
      ],
    }),
  );
  files.set(`${KUSTOMIZE_DIR}/base/agent.yaml`, documents(own.filter((o) => o !== configMap)));
  files.set(`${KUSTOMIZE_DIR}/base/config.yaml`, HEADER + configYaml);
  files.set(
    `${KUSTOMIZE_DIR}/watched-namespace/kustomization.yaml`,
    kustomization({ resources: ['rbac.yaml'] }),
  );
  files.set(`${KUSTOMIZE_DIR}/watched-namespace/rbac.yaml`, documents(watched));
  return files;
}

/** The helm binary: $HELM, else the one test/cluster/build.sh built (it prints its bin directory last). */
async function findHelm(): Promise<string> {
  if (process.env.HELM) return process.env.HELM;
  const { stdout } = await run('bash', [join(root, 'test/cluster/build.sh')], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const binDir = stdout.trim().split('\n').at(-1) ?? '';
  return join(binDir, 'helm');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: root } } });
  const files = await generateManifests(await findHelm());
  for (const [path, content] of files) {
    const target = join(values.out, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content);
    console.log(`wrote ${target}`);
  }
}
