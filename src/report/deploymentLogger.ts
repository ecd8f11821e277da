// Child loggers for lines about one deployment: every such line carries the same snake_case
// fields (deployment_id, and revision_id and namespace once known), whoever writes it.
import type { Logger } from 'pino';

export interface DeploymentLogFields {
  readonly deploymentId: string;
  readonly revisionId?: string | undefined;
  readonly namespace?: string | undefined;
}

/** A child of `logger` bound to one deployment; unknown fields are left out, not logged empty. */
export function deploymentLogger(logger: Logger, fields: DeploymentLogFields): Logger {
  const bindings: Record<string, string> = { deployment_id: fields.deploymentId };
  if (fields.revisionId !== undefined) bindings.revision_id = fields.revisionId;
  if (fields.namespace !== undefined) bindings.namespace = fields.namespace;
  return logger.child(bindings);
}

/**
 * The same logger with what became known since it was made (a child of a child). A field already
 * bound is not bound again: pino would write the key twice in one line.
 */
export function withDeploymentFields(
  logger: Logger,
  fields: Omit<DeploymentLogFields, 'deploymentId'>,
): Logger {
  const bound = logger.bindings();
  const bindings: Record<string, string> = {};
  if (fields.revisionId !== undefined && bound.revision_id === undefined)
    bindings.revision_id = fields.revisionId;
  if (fields.namespace !== undefined && bound.namespace === undefined) bindings.namespace = fields.namespace;
  return Object.keys(bindings).length === 0 ? logger : logger.child(bindings);
}
