// The key of the agent's digests (spec hashes, config checksums; see render/canonicalHash): 32
// random bytes in a Secret of the agent's own namespace, made by the first agent that starts and
// read by every later one and by `status` and `diff`, so their digests agree with the agent's.
import { randomBytes } from 'node:crypto';
import { isConflict } from '../kube/errors.ts';
import type { KubeClient, LiveKubeObject } from '../kube/index.ts';
import { secretData } from '../objects/fields.ts';
import type { KubeObject } from '../objects/kubeObject.ts';
import { AGENT_NAME, DIGEST_KEY_SECRET, LABEL_MANAGED_BY } from '../objects/ownership.ts';

export class DigestKeyError extends Error {
  override readonly name = 'DigestKeyError';
  readonly namespace: string;
  constructor(namespace: string, message: string, options?: { cause?: unknown }) {
    super(`digest key Secret ${namespace}/${DIGEST_KEY_SECRET}: ${message}`, options);
    this.namespace = namespace;
  }
}

type DigestKeyKube = Pick<KubeClient, 'get' | 'create'>;

const ref = (namespace: string) => ({ apiVersion: 'v1', kind: 'Secret', namespace, name: DIGEST_KEY_SECRET });

function keyOf(secret: LiveKubeObject | undefined, namespace: string): Uint8Array | undefined {
  if (!secret) return undefined;
  const encoded = secretData(secret).data.key;
  const key = encoded === undefined ? undefined : Buffer.from(encoded, 'base64');
  if (!key || key.length < 32) throw new DigestKeyError(namespace, 'holds no key of 32 bytes or more');
  return key;
}

/** The key, made when `create` and none exists yet (two agents racing read the one that won). */
export async function loadDigestKey(
  kube: DigestKeyKube,
  namespace: string,
  options: { create: boolean; signal?: AbortSignal },
): Promise<Uint8Array | undefined> {
  const found = keyOf(await kube.get(ref(namespace), { signal: options.signal }), namespace);
  if (found || !options.create) return found;
  const secret: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: DIGEST_KEY_SECRET,
      namespace,
      labels: { [LABEL_MANAGED_BY]: AGENT_NAME },
      annotations: {},
    },
    type: 'Opaque',
    data: { key: randomBytes(32).toString('base64') },
  };
  try {
    return keyOf(await kube.create(secret, { signal: options.signal }), namespace);
  } catch (error) {
    if (!isConflict(error)) throw new DigestKeyError(namespace, 'could not be created', { cause: error });
    return keyOf(await kube.get(ref(namespace), { signal: options.signal }), namespace);
  }
}
