// Scalar building blocks shared by every control-plane schema.
import { z } from 'zod';

// The interface says "uuid"; accept any 8-4-4-4-12 hex id rather than only RFC 9562 versions,
// so that a server using another uuid flavour is not rejected.
export const Uuid = z.guid();
export const DateTime = z.iso.datetime({ offset: true });

/** A free-form JSON object whose inner structure the interface does not show. */
export const FreeFormObject = z.record(z.string(), z.unknown());
export type FreeFormObject = z.infer<typeof FreeFormObject>;

export const Source = z.enum([
  'repohost',
  'external_container',
  'internal_container',
  'internal_source',
  'internal_template',
]);
export type Source = z.infer<typeof Source>;

export const RevisionSource = z.enum(['repohost', 'internal_container', 'internal_source']);
export type RevisionSource = z.infer<typeof RevisionSource>;

export const DeploymentType = z.enum(['dev_free', 'dev', 'prod']);
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
