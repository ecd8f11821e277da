// What bounds the work of one render: every list, map and string a deployment brings is capped
// before any other check of render reads an entry of it, by counts and lengths read in constant
// time and sizes summed with a budget that stops the sum. Past a cap the deployment is refused,
// naming the field and the cap, and nothing else is checked: no later check then meets more than
// the caps allow, whatever the input. At Kubernetes' own limits or lower. Pure.
import {
  type Container,
  capMessage,
  type Deployment,
  entryCount,
  INPUT_CAPS,
  type Revision,
} from '../controlplane/schemas/index.ts';
import type { RenderProblem } from './errors.ts';

const KiB = 1024;
const MiB = 1024 * KiB;

/** The sizes and lengths render caps, beside the counts the schema caps already (INPUT_CAPS). */
export const INPUT_SIZE_CAPS = {
  /**
   * Characters of the deployment's name: the value of an annotation on every object. A long or
   * unicode name is served (its object names are normalised and hashed), within reason.
   */
  name: 16 * KiB,
  /** Characters of `custom_url`. */
  customUrl: 2048,
  /** Characters of an image reference, the deployment's or a container's. */
  image: 1024,
  /**
   * Bytes of the pod annotations a deployment sets, keys and values together: Kubernetes allows
   * 256 KiB on an object, of which the agent's own pod-template annotations take the last KiB.
   */
  annotationBytes: 255 * KiB,
  /** Bytes of the secrets' names and values together: Kubernetes' limit on one Secret's data. */
  secretBytes: MiB,
  /** Characters of the resource spec written as JSON: the workloads that copy it stay under 1.5 MiB. */
  resourceSpecJson: MiB,
} as const;

const SPEC = 'source_config.resource_spec';

/** Every field past its cap, or none: what planDeployment checks before anything else. */
export function inputBoundsProblems(deployment: Deployment, revision: Revision | undefined): RenderProblem[] {
  const problems: RenderProblem[] = [];
  const over = (path: string, length: number | undefined, cap: number, unit: string) => {
    if (length !== undefined && length > cap)
      problems.push({
        path,
        message: `is ${length.toLocaleString('en-US')} ${unit} long; at most ${cap.toLocaleString('en-US')}`,
      });
  };
  over('name', deployment.name.length, INPUT_SIZE_CAPS.name, 'characters');
  over(
    'source_config.custom_url',
    deployment.source_config.custom_url?.length,
    INPUT_SIZE_CAPS.customUrl,
    'characters',
  );
  over(
    'source_revision_config.image_uri',
    deployment.source_revision_config.image_uri?.length,
    INPUT_SIZE_CAPS.image,
    'characters',
  );
  over(
    'revision.source_revision_config.image_uri',
    revision?.source_revision_config.image_uri?.length,
    INPUT_SIZE_CAPS.image,
    'characters',
  );
  problems.push(...countProblems(deployment));
  // Sizes only once every count holds: each sum below then reads a bounded number of entries.
  if (problems.length > 0) return problems;

  const spec = deployment.source_config.resource_spec ?? {};
  // A value that is not a string is refused by render's next checks; here it weighs nothing.
  const annotationBytes = textBytes(
    Object.entries(spec.annotations ?? {}).flatMap(([key, value]) => [
      key,
      typeof value === 'string' ? value : '',
    ]),
    INPUT_SIZE_CAPS.annotationBytes,
  );
  if (annotationBytes === undefined)
    problems.push({
      path: `${SPEC}.annotations`,
      message: `the keys and values are more than ${INPUT_SIZE_CAPS.annotationBytes / KiB} KiB together; at most that`,
    });
  const secretBytes = textBytes(
    deployment.secrets.flatMap((secret) => [secret.name, secret.value]),
    INPUT_SIZE_CAPS.secretBytes,
  );
  if (secretBytes === undefined)
    problems.push({
      path: 'secrets',
      message: `the names and values are more than ${INPUT_SIZE_CAPS.secretBytes / MiB} MiB together; at most that`,
    });
  for (const [group, containers] of [
    ['init_containers', spec.init_containers ?? []],
    ['sidecars', spec.sidecars ?? []],
  ] as const)
    containers.forEach((container, i) => {
      over(`${SPEC}.${group}[${i}].image`, container.image?.length, INPUT_SIZE_CAPS.image, 'characters');
    });
  if (!jsonWithin(spec, INPUT_SIZE_CAPS.resourceSpecJson))
    problems.push({
      path: SPEC,
      message: `is more than ${INPUT_SIZE_CAPS.resourceSpecJson / MiB} MiB as JSON; at most that`,
    });
  return problems;
}

/** Each list or map of the deployment past its count in INPUT_CAPS. */
function countProblems(deployment: Deployment): RenderProblem[] {
  const spec = deployment.source_config.resource_spec ?? {};
  const counted: [string, unknown, number][] = [
    ['secrets', deployment.secrets, INPUT_CAPS.secrets],
    ['secret_references', deployment.secret_references, INPUT_CAPS.secretReferences],
    [`${SPEC}.labels`, spec.labels, INPUT_CAPS.labels],
    [`${SPEC}.annotations`, spec.annotations, INPUT_CAPS.annotations],
    [`${SPEC}.image_pull_secrets`, spec.image_pull_secrets, INPUT_CAPS.imagePullSecrets],
    [`${SPEC}.volumes`, spec.volumes, INPUT_CAPS.volumes],
    [`${SPEC}.volume_mounts`, spec.volume_mounts, INPUT_CAPS.volumeMounts],
    [`${SPEC}.init_containers`, spec.init_containers, INPUT_CAPS.initContainers],
    [`${SPEC}.sidecars`, spec.sidecars, INPUT_CAPS.sidecars],
  ];
  const problems: RenderProblem[] = [];
  for (const [path, value, cap] of counted) {
    const count = entryCount(value);
    if (count > cap) problems.push({ path, message: capMessage(count, cap) });
  }
  if (problems.length > 0) return problems;
  let variables = deployment.secrets.length + (deployment.secret_references?.length ?? 0);
  for (const [group, containers] of [
    ['init_containers', spec.init_containers ?? []],
    ['sidecars', spec.sidecars ?? []],
  ] as const)
    containers.forEach((container, i) => {
      variables += entryCount(container.env);
      for (const [field, cap] of CONTAINER_CAPS) {
        const count = entryCount(container[field]);
        if (count > cap)
          problems.push({ path: `${SPEC}.${group}[${i}].${field}`, message: capMessage(count, cap) });
      }
    });
  // Every application workload's pod carries them all: what render makes grows with this sum.
  if (variables > INPUT_CAPS.podEnv)
    problems.push({
      path: 'secrets',
      message: `with secret_references and the env of the sidecars and init containers, a pod would hold ${variables.toLocaleString('en-US')} environment variables; at most ${INPUT_CAPS.podEnv.toLocaleString('en-US')}`,
    });
  return problems;
}

const CONTAINER_CAPS: readonly [keyof Container & string, number][] = [
  ['env', INPUT_CAPS.env],
  ['envFrom', INPUT_CAPS.envFrom],
  ['command', INPUT_CAPS.commandOrArgs],
  ['args', INPUT_CAPS.commandOrArgs],
  ['volumeMounts', INPUT_CAPS.volumeMounts],
];

/**
 * The UTF-8 bytes of the strings together, or undefined past `budget`. Their lengths are summed
 * first (a character is at least one byte), so no byte of a string past the budget is read.
 */
function textBytes(texts: readonly string[], budget: number): number | undefined {
  let characters = 0;
  for (const text of texts) {
    characters += text.length;
    if (characters > budget) return undefined;
  }
  let bytes = 0;
  for (const text of texts) bytes += Buffer.byteLength(text, 'utf8');
  return bytes > budget ? undefined : bytes;
}

/**
 * Whether the value written as JSON stays within `budget` characters, counted by a walk that
 * does not recurse and stops at the budget: a string's length is read, never its characters.
 */
export function jsonWithin(value: unknown, budget: number): boolean {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') size += item.length + 2;
    else if (Array.isArray(item)) {
      // An element and its comma are two characters at least.
      size += 2 * item.length + 1;
      if (size > budget) return false;
      for (const element of item) stack.push(element);
    } else if (typeof item === 'object' && item !== null) {
      size += 2;
      for (const key in item) {
        size += key.length + 4;
        if (size > budget) return false;
        stack.push((item as Record<string, unknown>)[key]);
      }
    } else size += 8;
    if (size > budget) return false;
  }
  return true;
}
