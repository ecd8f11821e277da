// The chart's Role in a watched namespace held to the kind table: under each render setting that
// turns an optional kind on, it grants exactly what `run` (the access `check` asks for) and
// `status` need, read off objects/kinds.ts — nothing missing, nothing more.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { namespaceAccess, statusAccess } from '../../../src/cli/requiredAccess.ts';
import { ReconcileConfig } from '../../../src/reconcile/policy/reconcileConfig.ts';
import { RenderConfig, type RenderConfigInput } from '../../../src/render/index.ts';
import { grantedLines, type RoleRule, requiredLines } from '../../support/roleGrants.ts';

const run = promisify(execFile);
const binDir = inject('clusterBinDir');
const CHART = new URL('../../../charts/k8s-listener', import.meta.url).pathname;
const VALUES = new URL('../../../deploy/kustomize/chart-values.yaml', import.meta.url).pathname;
const WATCHED = 'apps';

/** The rules of the chart's Role in the watched namespace, rendered with this render configuration. */
async function chartRole(render: RenderConfigInput): Promise<RoleRule[]> {
  const { stdout } = await run(
    join(binDir, 'helm'),
    ['template', 'k8s-listener', CHART, '-f', VALUES, '--set-json', `config=${JSON.stringify({ render })}`],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const roles = parseAllDocuments(stdout)
    .map(
      (doc) => doc.toJS() as { kind?: string; metadata?: { namespace?: string }; rules?: RoleRule[] } | null,
    )
    .filter((m) => m?.kind === 'Role' && m.metadata?.namespace === WATCHED);
  expect(roles).toHaveLength(1);
  return roles[0]?.rules ?? [];
}

describe("the chart's Role in a watched namespace", () => {
  const reconcile = ReconcileConfig.parse({});
  it.each<[string, RenderConfigInput]>([
    ['the default configuration', {}],
    ['network policies off', { networkPolicy: { enabled: false } }],
    ['an ingress class', { ingress: { className: 'nginx' } }],
    ['a Gateway', { gateway: { parentRefs: [{ name: 'shared' }] } }],
    ['KEDA queue scaling', { autoscaling: { queue: 'keda' } }],
  ])('grants what the kind table derives under %s', async (_, render) => {
    const config = { render: RenderConfig.parse(render), reconcile };
    expect(grantedLines(await chartRole(render))).toEqual(
      requiredLines([...namespaceAccess(config), ...statusAccess(config)]),
    );
  });
});
