// The one typed error rendering gives: every problem of a deployment, each with its field path.

export interface RenderProblem {
  /** JSON path in the deployment, e.g. `source_config.resource_spec.min_scale`. */
  readonly path: string;
  readonly message: string;
}

export class RenderError extends Error {
  override readonly name = 'RenderError';
  readonly code = 'RENDER_INVALID';
  readonly deploymentId: string;
  readonly problems: readonly RenderProblem[];

  constructor(deploymentId: string, problems: readonly RenderProblem[], options?: { cause?: unknown }) {
    super(
      `deployment ${deploymentId} cannot be rendered: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
      options,
    );
    this.deploymentId = deploymentId;
    this.problems = problems;
  }
}
