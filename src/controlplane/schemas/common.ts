// Scalar building blocks shared by every control-plane schema.
import { z } from 'zod';

// The interface says "uuid"; accept any 8-4-4-4-12 hex id rather than only RFC 9562 versions,
// so that a server using another uuid flavour is not rejected.
export const Uuid = z.guid();
export const DateTime = z.iso.datetime({ offset: true });

/** A free-form JSON object whose inner structure the interface does not show. */
export const FreeFormObject = z.record(z.string(), z.unknown());
export type FreeFormObject = z.infer<typeof FreeFormObject>;

/**
 * Sources as either dialect names them: the interface document's, and the real control plane's
 * (its own client, the LangGraph CLI, sends `external_docker` and `internal_docker`). The value is
 * kept as sent (a client reads back what it wrote); `sourceMeaning` gives the one meaning.
 */
export const Source = z.enum([
  'repohost',
  'external_container',
  'internal_container',
  'internal_source',
  'internal_template',
  'external_docker',
  'internal_docker',
]);
export type Source = z.infer<typeof Source>;

const SOURCE_ALIASES = {
  external_docker: 'external_container',
  internal_docker: 'internal_container',
} as const;
export type SourceMeaning = Exclude<Source, keyof typeof SOURCE_ALIASES>;

/** The interface document's name for a source sent in either dialect. */
export function sourceMeaning(source: Source): SourceMeaning {
  return source === 'external_docker' || source === 'internal_docker' ? SOURCE_ALIASES[source] : source;
}

/** PATCH's `revision_source`, in either dialect. */
export const RevisionSource = z.enum([
  'repohost',
  'internal_container',
  'internal_source',
  'internal_docker',
  'external_docker',
]);
export type RevisionSource = z.infer<typeof RevisionSource>;

/**
 * `dev_zero` is the real control plane's (the CLI's "serverless": scaled to zero when idle); the
 * agent renders it as `dev` (scaling to zero needs an activator in front of the Service) and says so.
 */
export const DeploymentType = z.enum(['dev_free', 'dev', 'prod', 'dev_zero']);
export type DeploymentType = z.infer<typeof DeploymentType>;

export const DeploymentStatus = z.enum([
  'AWAITING_DATABASE',
  'READY',
  'UNUSED',
  'AWAITING_DELETE',
  'UNKNOWN',
]);
export type DeploymentStatus = z.infer<typeof DeploymentStatus>;

export const RevisionStatus = z.enum([
  'CREATING',
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'DEPLOYED',
  'SKIPPED',
  'INTERRUPTED',
  'UNKNOWN',
]);
export type RevisionStatus = z.infer<typeof RevisionStatus>;

/** List envelope of the paginated endpoints: `offset` is the offset of the next page. */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ resources: z.array(item), offset: z.number().int().nonnegative() });
