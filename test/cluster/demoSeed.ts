// The demo's seed on a real node. The seed names public images (nginx, busybox) that nothing here
// can pull, so on the real node every container of it runs an image of the node's registry: the
// probe app, which answers the LangGraph server's GET /ok on 8000 and says whether the database
// and Redis connection strings the agent rendered open their stores (GET /stores), and, for one
// deployment, a real LangGraph server. Pure.
import type { ResourceSpec, SourceRevisionConfig } from '../../src/controlplane/schemas/index.ts';
import type { EmulatorState } from '../../src/emulator/state.ts';

/** The seed with each image it names (revisions, init containers, sidecars) replaced by `image`. */
export function seedWithImage(seed: EmulatorState, image: string): EmulatorState {
  const revisionConfig = (config: SourceRevisionConfig): SourceRevisionConfig =>
    config.image_uri === undefined || config.image_uri === null ? config : { ...config, image_uri: image };
  return {
    ...seed,
    deployments: seed.deployments.map((stored) => {
      const { deployment } = stored;
      const spec = deployment.source_config.resource_spec;
      const containers = <T extends { image?: string | null | undefined }>(
        list: readonly T[] | null | undefined,
      ) => list?.map((container) => ({ ...container, image }));
      return {
        ...stored,
        deployment: {
          ...deployment,
          source_config: {
            ...deployment.source_config,
            ...(spec
              ? {
                  resource_spec: {
                    ...spec,
                    ...(spec.init_containers ? { init_containers: containers(spec.init_containers) } : {}),
                    ...(spec.sidecars ? { sidecars: containers(spec.sidecars) } : {}),
                  },
                }
              : {}),
          },
          source_revision_config: revisionConfig(deployment.source_revision_config),
        },
        revisions: stored.revisions.map((revision) => ({
          ...revision,
          source_revision_config: revisionConfig(revision.source_revision_config),
        })),
      };
    }),
  };
}

/** The seed's deployment that runs the node registry's LangGraph server, with its PostgreSQL and Redis. */
export const LANGGRAPH_DEPLOYMENT = 'chat-api';

/**
 * Its resources on the real node: one replica, a quarter core each for the server and its
 * PostgreSQL, so that it, hello-web and a LangGraph server deployed with the CLI (each with its
 * stores) fit the node's two cores. Its connection limit and sizes are the seed's.
 */
const LANGGRAPH_RESOURCES = {
  min_scale: 1,
  max_scale: 1,
  cpu: 0.25,
  db_cpu: 0.25,
} as const satisfies ResourceSpec;

/**
 * The seed on the real node: every image `probeApp`, but `LANGGRAPH_DEPLOYMENT`'s, which is
 * `langgraphServer` and sized for the node (LANGGRAPH_RESOURCES).
 */
export function seedForRealNode(
  seed: EmulatorState,
  images: { readonly probeApp: string; readonly langgraphServer: string },
): EmulatorState {
  const probed = seedWithImage(seed, images.probeApp);
  const server = seedWithImage(seed, images.langgraphServer);
  return {
    ...probed,
    deployments: probed.deployments.map((stored, i) => {
      const served = server.deployments[i];
      if (stored.deployment.name !== LANGGRAPH_DEPLOYMENT || !served) return stored;
      const { source_config } = served.deployment;
      return {
        ...served,
        deployment: {
          ...served.deployment,
          source_config: {
            ...source_config,
            resource_spec: { ...source_config.resource_spec, ...LANGGRAPH_RESOURCES },
          },
        },
      };
    }),
  };
}

/** Every image the seed names: what its unit test checks none was left behind. */
export function seedImages(seed: EmulatorState): string[] {
  const found = new Set<string>();
  for (const { deployment, revisions } of seed.deployments) {
    const spec = deployment.source_config.resource_spec;
    for (const config of [
      deployment.source_revision_config,
      ...revisions.map((r) => r.source_revision_config),
    ])
      if (config.image_uri) found.add(config.image_uri);
    for (const container of [...(spec?.init_containers ?? []), ...(spec?.sidecars ?? [])])
      if (container.image) found.add(container.image);
  }
  return [...found].sort();
}
