// No digest of a secret value can be read without the agent's digest key —
// not in any non-Secret object the agent writes (its inventory's specHash and inputHash included),
// and not in what `diff` prints when it cannot read the key (it then compares no digest, masks
// them, and says so in one line). Each is a 10,000-word dictionary attack, the secret among the
// words, by someone who knows the deployment but its secret and renders each guess as the agent does.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { runDiffCommand } from '../../../src/cli/diff.ts';
import type { Deployment } from '../../../src/controlplane/schemas/index.ts';
import { KubeClient, type LiveKubeObject } from '../../../src/kube/index.ts';
import { loadDigestKey } from '../../../src/manager/digestKey.ts';
import { LABEL_DEPLOYMENT_ID } from '../../../src/objects/ownership.ts';
import { chooseTarget } from '../../../src/reconcile/loop/target.ts';
import { inventoryName } from '../../../src/reconcile/steps/inventoryStore.ts';
import { UNCOMPARED_DIGEST_MASK } from '../../../src/render/digestAnnotations.ts';
import { app, useAgentWorld, waitForRevision, worldFlags } from '../../support/agentHarness.ts';
import {
  type AttackTarget,
  dictionary,
  digestsFor,
  digestsIn,
  recoveredWords,
} from '../../support/dictionaryAttack.ts';
import { textSink } from '../../support/textSink.ts';

const setup = useAgentWorld();
const SECRET = 'hunter2';
const ROTATED = 'swordfish';
const words = dictionary([SECRET, ROTATED]);

/** What the attacker knows of a deployment: everything the agent renders from, but the secret. */
async function targetOf(deployment: Deployment): Promise<AttackTarget> {
  const { client, listenerId, namespaces } = setup.world;
  const current =
    (await client.listAllDeployments({ deployment_ids: [deployment.id] })).items[0] ?? deployment;
  return {
    deployment: current,
    revision: chooseTarget(current, (await client.listAllRevisions(deployment.id)).items).revision,
    listener: await client.getListener(listenerId),
    allowedNamespaces: namespaces,
    secretName: 'API_TOKEN',
  };
}

let guarded: Deployment;
/** The deployment as the agent applied it first: its live objects' digests are of SECRET. */
let applied: AttackTarget;

describe('a secret value', () => {
  it("cannot be guessed from any non-Secret object the agent writes, its inventory's inputHash included", async () => {
    guarded = await setup.world.client.createDeployment(
      app(setup.world, 'guarded', setup.ns, { secrets: [{ name: 'API_TOKEN', value: SECRET }] }),
    );
    await waitForRevision(setup.world, guarded, 'DEPLOYED');

    // Every non-Secret object the agent wrote for it, as someone who may read them (not Secrets) sees them.
    const kube = await KubeClient.fromKubeconfig(setup.world.kubeconfigPath, {
      logger: pino({ level: 'silent' }),
    });
    const readable: LiveKubeObject[] = [];
    for (const kind of ['Deployment', 'Service', 'NetworkPolicy', 'ConfigMap'] as const)
      readable.push(
        ...(await kube.list(kind, {
          namespace: setup.ns,
          labelSelector: `${LABEL_DEPLOYMENT_ID}=${guarded.id}`,
        })),
      );
    const observed = digestsIn(JSON.stringify(readable));
    const record = readable.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === inventoryName(guarded.id),
    );
    const { inputHash, specHash } = JSON.parse(
      String((record?.data as Record<string, unknown>)?.inventory),
    ) as {
      inputHash: string;
      specHash: string;
    };
    expect(observed).toContain(inputHash);
    expect(observed).toContain(specHash);

    const target = await targetOf(guarded);
    applied = target;
    const recovered = recoveredWords(words, observed, (guess) => digestsFor(target, guess, undefined));
    console.log(
      `dictionary attack on the agent's objects: ${words.length} words against ${observed.size} digests, ${recovered.length} recovered`,
    );
    expect(recovered).toEqual([]);

    // The control: with the agent's key the same renders find the word — through the inventory's
    // inputHash and specHash too, so the search covers them.
    const key = await loadDigestKey(kube, 'default', { create: false });
    const keyed = digestsFor(target, SECRET, key);
    expect(keyed).toContain(inputHash);
    expect(keyed).toContain(specHash);
    expect(
      recoveredWords(dictionary(SECRET, 100), observed, (guess) => digestsFor(target, guess, key)),
    ).toEqual([SECRET]);
    await kube.close();
  }, 180_000);

  it("cannot be guessed from what diff prints without the agent's key: no digest compared, one line says so", async () => {
    // An agent namespace without the key (as for a user who may not read it there).
    const config = join(await mkdtemp(join(tmpdir(), 'k8s-listener-nokey-')), 'config.yaml');
    await writeFile(config, 'agentNamespace: no-digest-key-here\n');
    const diff = async (...args: string[]) => {
      const stdout = textSink();
      const stderr = textSink();
      const code = await runDiffCommand([...args, '--config', config, ...worldFlags(setup.world, setup.ns)], {
        stdout: stdout.stream,
        stderr: stderr.stream,
      });
      return { code, stdout: stdout.text(), stderr: stderr.text() };
    };
    const warning =
      'warning: no digest key in namespace no-digest-key-here (agentNamespace): digests (spec-hash, config-checksum) could not be compared and are masked\n';

    // Converged: the unkeyed digests would differ from every live one; compared without them, nothing.
    const converged = await diff('guarded');
    expect(converged).toMatchObject({ code: 0, stderr: warning });
    expect(converged.stdout).toContain(': no changes\n');

    // A new image and a rotated secret, not yet applied: both shown, no digest of either secret.
    await setup.agent.stop();
    await setup.world.client.patchDeployment(guarded.id, {
      source_revision_config: { image_uri: 'nginx:1.28' },
      secrets: [{ name: 'API_TOKEN', value: ROTATED }],
    });
    const text = await diff('guarded');
    const json = await diff('guarded', '--output', 'json');
    for (const run of [text, json]) expect(run).toMatchObject({ code: 1, stderr: warning });
    expect(text.stdout).toContain('-  API_TOKEN: (changed)\n+  API_TOKEN: (changed)\n');
    expect(text.stdout).toContain('+          image: nginx:1.28\n');
    expect(json.stdout).toContain(UNCOMPARED_DIGEST_MASK);
    expect(text.stdout).not.toMatch(/^[-+].*(spec-hash|config-checksum)/m);

    const printed = text.stdout + json.stdout;
    const observed = digestsIn(printed);
    const target = await targetOf(guarded);
    const recovered = [
      ...recoveredWords(words, observed, (guess) => digestsFor(target, guess, undefined)),
      // The live objects hold the first revision's digests: those renders are tried too.
      ...recoveredWords(words, observed, (guess) => digestsFor(applied, guess, undefined)),
    ];
    console.log(
      `dictionary attack on diff without the key: ${words.length} words against ${observed.size} digests, ${recovered.length} recovered`,
    );
    expect(recovered).toEqual([]);
    for (const value of [SECRET, ROTATED]) {
      expect(printed).not.toContain(value);
      expect(printed).not.toContain(Buffer.from(value).toString('base64'));
    }
  }, 180_000);
});
