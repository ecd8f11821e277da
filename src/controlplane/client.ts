// The agent's client of the deployment management service: one method per endpoint it calls,
// each response validated, and listings that are complete or throw. The HTTP beneath (retries,
// bounds, paging) is transport.ts; endpoints only tests and tools call are theirs to add.
import { type Parsed, parseResource, type ResourceIdentity, type SchemaValidationError } from './parse.ts';
import {
  Deployment,
  DeploymentIdentity,
  type DeploymentStatus,
  type DeploymentType,
  Listener,
  type ListenerWrite,
  Revision,
  type RevisionStatus,
  type StatusReportBatch,
} from './schemas/index.ts';
import {
  type CallOptions,
  ControlPlaneTransport,
  type ControlPlaneTransportOptions,
  type ListingOptions,
  route,
} from './transport.ts';

export type { CallOptions, ListingOptions } from './transport.ts';
export type ControlPlaneClientOptions = ControlPlaneTransportOptions;

export interface DeploymentFilter {
  readonly name_contains?: string | undefined;
  readonly status?: DeploymentStatus | undefined;
  readonly remote_reconciled?: boolean | undefined;
  readonly tag_value_ids?: readonly string[] | undefined;
  readonly image_version?: string | undefined;
  readonly deployment_type?: DeploymentType | undefined;
  readonly deployment_ids?: readonly string[] | undefined;
}

export interface RevisionFilter {
  readonly status?: readonly RevisionStatus[] | undefined;
  readonly remote_reconciled?: boolean | undefined;
}

export interface InvalidItem {
  /** Its id, when it has one that is an id (a uuid). */
  readonly id: string | undefined;
  readonly error: SchemaValidationError;
  /** Whose it is and where it goes, as far as that can be read (deployments). */
  readonly identity?: ResourceIdentity | undefined;
}

export interface CompleteListing<T> {
  readonly items: T[];
  /** Items the server sent that failed validation: present, but not usable. */
  readonly invalid: InvalidItem[];
}

export class ControlPlaneClient {
  /** For a client that adds endpoints (tests and tools): the same pool, retries and bounds. */
  protected readonly transport: ControlPlaneTransport;

  constructor(options: ControlPlaneClientOptions) {
    this.transport = new ControlPlaneTransport(options);
  }

  // --- Deployments and revisions

  deployments(
    filter: DeploymentFilter = {},
    options: ListingOptions<Deployment> = {},
  ): AsyncGenerator<Parsed<Deployment>> {
    return this.transport.paginate(
      route('/v2/deployments'),
      { ...filter },
      Deployment,
      'deployment',
      options,
      (raw) => {
        const identity = DeploymentIdentity.safeParse(raw);
        return identity.success ? identity.data : undefined;
      },
    );
  }

  revisions(
    deploymentId: string,
    filter: RevisionFilter = {},
    options: CallOptions = {},
  ): AsyncGenerator<Parsed<Revision>> {
    return this.transport.paginate(
      route('/v2/deployments/{deployment_id}/revisions', { deployment_id: deploymentId }),
      { ...filter },
      Revision,
      'revision',
      options,
    );
  }

  /** Every deployment matching the filter, or a throw: never a partial list passed off as complete. */
  async listAllDeployments(
    filter: DeploymentFilter = {},
    options: ListingOptions<Deployment> = {},
  ): Promise<CompleteListing<Deployment>> {
    return collect(this.deployments(filter, options));
  }

  async listAllRevisions(
    deploymentId: string,
    filter: RevisionFilter = {},
    options: CallOptions = {},
  ): Promise<CompleteListing<Revision>> {
    return collect(this.revisions(deploymentId, filter, options));
  }

  // --- Listeners

  async getListener(listenerId: string, options: CallOptions = {}): Promise<Listener> {
    return parseResource(
      Listener,
      await this.transport.json('GET', route('/v2/listeners/{listener_id}', { listener_id: listenerId }), {
        signal: options.signal,
      }),
      'listener',
      listenerId,
    );
  }

  async putListener(listenerId: string, body: ListenerWrite): Promise<Listener> {
    const response = await this.transport.json(
      'PUT',
      route('/v2/listeners/{listener_id}', { listener_id: listenerId }),
      { body },
    );
    return parseResource(Listener, response, 'listener', listenerId);
  }

  // --- Status reports: the agent's extension of the interface (docs/architecture.md, "Reporting")

  async postStatusReports(listenerId: string, batch: StatusReportBatch): Promise<void> {
    await this.transport.send(
      'POST',
      route('/v2/listeners/{listener_id}/status-reports', { listener_id: listenerId }),
      { body: batch },
    );
  }

  /** Closes the connection pool; safe to call more than once. */
  close(): Promise<void> {
    return this.transport.close();
  }
}

async function collect<T>(iterator: AsyncGenerator<Parsed<T>>): Promise<CompleteListing<T>> {
  const items: T[] = [];
  const invalid: InvalidItem[] = [];
  for await (const parsed of iterator) {
    if (parsed.ok) items.push(parsed.value);
    else invalid.push({ id: parsed.id, error: parsed.error, identity: parsed.identity });
  }
  return { items, invalid };
}
