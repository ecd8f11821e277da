// Where the platform team puts a deployment's pods: node selector, tolerations, affinity, priority
// class and topology spread, by namespace (and, within a namespace, by deployment type), for the
// application workloads and, apart, for the database and key-value store. Only the agent's
// configuration sets them: the control plane's resource spec has no such fields, and a tenant
// never chooses nodes. `deployment_type` is the tenant's word, so it selects only among the
// placements the platform gives the deployment's namespace, never one of its own.
import { z } from 'zod';
import { isDnsLabel, isHostname, isLabelValue, isQualifiedKey } from './names.ts';

const FreeForm = z.record(z.string(), z.unknown());

const Toleration = z
  .strictObject({
    key: z.string().min(1).optional(),
    operator: z.enum(['Equal', 'Exists']).optional(),
    value: z.string().optional(),
    effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
    tolerationSeconds: z.number().int().optional(),
  })
  .superRefine((toleration, ctx) => {
    // Kubernetes' own rules, refused at load rather than by every apply.
    if (toleration.key === undefined && toleration.operator !== 'Exists')
      ctx.addIssue({
        code: 'custom',
        message: 'a toleration without a key needs operator Exists',
        path: ['operator'],
      });
    if (toleration.operator === 'Exists' && toleration.value)
      ctx.addIssue({ code: 'custom', message: 'operator Exists takes no value', path: ['value'] });
    if (toleration.tolerationSeconds !== undefined && toleration.effect !== 'NoExecute')
      ctx.addIssue({
        code: 'custom',
        message: 'tolerationSeconds applies only to effect NoExecute',
        path: ['tolerationSeconds'],
      });
  });

const TopologySpreadConstraint = z.strictObject({
  maxSkew: z.number().int().min(1),
  topologyKey: z.string().min(1),
  whenUnsatisfiable: z.enum(['DoNotSchedule', 'ScheduleAnyway']),
  labelSelector: FreeForm.optional(),
  minDomains: z.number().int().min(1).optional(),
  nodeAffinityPolicy: z.enum(['Honor', 'Ignore']).optional(),
  nodeTaintsPolicy: z.enum(['Honor', 'Ignore']).optional(),
  matchLabelKeys: z.array(z.string().min(1)).optional(),
});

const NodeSelector = z.record(z.string(), z.string()).superRefine((selector, ctx) => {
  for (const [key, value] of Object.entries(selector)) {
    if (!isQualifiedKey(key))
      ctx.addIssue({ code: 'custom', message: 'is not a valid label key', path: [key] });
    if (!isLabelValue(value))
      ctx.addIssue({ code: 'custom', message: 'is not a valid label value', path: [key] });
  }
});

/** What one level of `render.scheduling` sets for one kind of pod; an absent field is inherited. */
export const Placement = z
  .strictObject({
    nodeSelector: NodeSelector.optional().describe(
      'Node labels the pods must run on (`nodeSelector`). `{}` clears what a less specific level set.',
    ),
    tolerations: z
      .array(Toleration)
      .optional()
      .describe('Taints the pods tolerate (Kubernetes `tolerations`). `[]` clears.'),
    affinity: z
      .strictObject({
        nodeAffinity: FreeForm.optional(),
        podAffinity: FreeForm.optional(),
        podAntiAffinity: FreeForm.optional(),
      })
      .nullable()
      .optional()
      .describe('A Kubernetes `affinity` (node, pod and pod anti-affinity). Null clears.'),
    priorityClassName: z
      .string()
      .refine(isHostname, 'is not a valid PriorityClass name')
      .nullable()
      .optional()
      .describe(
        'PriorityClass of the pods: it must exist, or the API server refuses every pod. Null clears.',
      ),
    topologySpreadConstraints: z
      .array(TopologySpreadConstraint)
      .optional()
      .describe(
        "Kubernetes `topologySpreadConstraints`; one without a `labelSelector` counts the workload's own pods (the agent fills it in). Set for the application workloads, they replace the spread `render.prod.topologySpread` gives `prod`; `[]` clears both.",
      ),
  })
  .describe('One kind of pod.');
export type Placement = z.infer<typeof Placement>;

const Level = z
  .strictObject({
    apps: Placement.optional().describe(
      'The application workloads: main, queue, orchestrator and the executor PodTemplate.',
    ),
    stores: Placement.optional().describe('The database and the key-value store.'),
  })
  .describe('What one level sets: `apps` and `stores`, each a placement as under `default`.');
type Level = z.infer<typeof Level>;

const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod'] as const;
type RenderedType = (typeof DEPLOYMENT_TYPES)[number];

/** What one namespace sets: its own `apps` and `stores`, and, for some types, placements of theirs. */
const NamespaceLevel = Level.extend({
  byDeploymentType: z
    .partialRecord(z.enum(DEPLOYMENT_TYPES), Level)
    .optional()
    .describe(
      'By `deployment_type` as rendered (`dev_zero` runs as `dev`), in this namespace only: each value has `apps` and `stores`.',
    ),
}).describe('What one namespace sets: `apps` and `stores`, and `byDeploymentType.<type>` of each.');

export const SchedulingConfig = z
  .strictObject({
    default: Level.prefault({}).describe('Every deployment, unless a more specific level sets the field.'),
    byNamespace: z
      .record(z.string().refine(isDnsLabel, 'is not a valid namespace name'), NamespaceLevel)
      .default({})
      .describe(
        "By the deployment's namespace, one of the agent's `namespaces` (another is refused at load): each value has `apps` and `stores`, shaped as under `default`, and may have `byDeploymentType.<type>` (`dev_free`, `dev`, `prod`; `dev_zero` runs as `dev`), each with `apps` and `stores` too, for the deployments of that type in that namespace. A field set there replaces the namespace's, which replaces `default`'s. `deployment_type` is the tenant's choice: it selects only among the placements given here for the namespace, so a priority class or node pool reserved for `prod` is given under the namespaces whose deployments may have it. The rules and an example: [Placement](#placement).",
      ),
  })
  .prefault({})
  .describe(
    "Where the pods run, set by the platform team only (a deployment cannot: the control plane's resource spec has no such fields). Three levels, the most specific winning field by field: `byNamespace.<namespace>.byDeploymentType.<type>`, then `byNamespace.<namespace>`, then `default`; a field set at a level replaces the whole field below it (maps and lists are not merged), and `{}`, `[]` or null there clears it. Each level sets `apps` (main, queue, orchestrator, executor) and `stores` (database, key-value store) apart.",
  );
export type SchedulingConfig = z.infer<typeof SchedulingConfig>;

const FIELDS = [
  'nodeSelector',
  'tolerations',
  'affinity',
  'priorityClassName',
  'topologySpreadConstraints',
] as const satisfies readonly (keyof Placement)[];

/** The placement of one kind of pod of a deployment: each field from the most specific level setting it. */
export function resolvePlacement(
  scheduling: SchedulingConfig,
  part: keyof Level,
  deploymentType: RenderedType,
  namespace: string,
): Placement {
  const inNamespace = scheduling.byNamespace[namespace];
  const levels = [
    inNamespace?.byDeploymentType?.[deploymentType]?.[part],
    inNamespace?.[part],
    scheduling.default[part],
  ];
  const resolved: Record<string, unknown> = {};
  for (const field of FIELDS) {
    const level = levels.find((placement) => placement?.[field] !== undefined);
    if (level) resolved[field] = structuredClone(level[field]);
  }
  return resolved as Placement;
}

/** Namespaces of `byNamespace` that are not the agent's: a typo there would apply to nothing. */
export function unknownSchedulingNamespaces(
  scheduling: SchedulingConfig,
  namespaces: readonly string[],
): { readonly key: string; readonly message: string }[] {
  const known = new Set(namespaces);
  return Object.keys(scheduling.byNamespace)
    .filter((namespace) => !known.has(namespace))
    .map((namespace) => ({
      key: `render.scheduling.byNamespace.${namespace}`,
      message: `${namespace} is not one of the agent's namespaces (${namespaces.join(', ') || 'none'}): it would apply to no deployment`,
    }));
}

/**
 * The pod spec fields of a placement, empty ones left out. A spread constraint without a label
 * selector would count no pods at all: it counts the workload's own, by its selector labels.
 */
export function placementFields(
  placement: Placement,
  ownPods: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (placement.nodeSelector && Object.keys(placement.nodeSelector).length > 0)
    fields.nodeSelector = placement.nodeSelector;
  if (placement.tolerations?.length) fields.tolerations = placement.tolerations;
  if (placement.affinity && Object.keys(placement.affinity).length > 0) fields.affinity = placement.affinity;
  if (placement.priorityClassName) fields.priorityClassName = placement.priorityClassName;
  if (placement.topologySpreadConstraints?.length)
    fields.topologySpreadConstraints = placement.topologySpreadConstraints.map((constraint) => ({
      ...constraint,
      labelSelector: constraint.labelSelector ?? { matchLabels: { ...ownPods } },
    }));
  return fields;
}
