// The emulator's rules: what the interface says creating, patching, redeploying, deleting and
// reporting do to deployments, revisions and listeners. Pure state transitions; no HTTP here.
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type {
  Deployment,
  DeploymentCreate,
  DeploymentPatch,
  DeploymentStatus,
  Listener,
  ListenerWrite,
  Revision,
  RevisionStatus,
  SourceConfig,
  SourceRevisionConfig,
  StatusReport,
} from '../controlplane/schemas/index.ts';
import { sourceMeaning } from '../controlplane/schemas/index.ts';
import type { DeployLogEntry, EmulatorState, StoredDeployment } from './state.ts';

export class EmulatorError extends Error {
  override readonly name = 'EmulatorError';
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;

  constructor(status: number, code: string, message: string, field?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** A time filter of the log endpoints, in ms since the epoch; a value that is no time is refused. */
function timeBound(field: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const at = Date.parse(value);
  if (!Number.isFinite(at)) throw invalid(field, `${field} is not an ISO 8601 time: ${value}`);
  return at;
}

const notFound = (what: string, id: string) => new EmulatorError(404, 'not_found', `${what} ${id} not found`);
const invalid = (field: string, message: string) =>
  new EmulatorError(422, 'validation_error', message, field);

export interface DeploymentQuery {
  readonly tenantId?: string | undefined;
  /** Exact name (the real control plane's filter, which its CLI sends). */
  readonly name?: string | undefined;
  readonly nameContains?: string | undefined;
  readonly status?: DeploymentStatus | undefined;
  readonly remoteReconciled?: boolean | undefined;
  readonly tagValueIds?: readonly string[] | undefined;
  readonly imageVersion?: string | undefined;
  readonly deploymentType?: string | undefined;
  readonly deploymentIds?: readonly string[] | undefined;
}

export interface RevisionQuery {
  readonly statuses?: readonly RevisionStatus[] | undefined;
  readonly remoteReconciled?: boolean | undefined;
}

const REVISION_FIELDS = ['repo_ref', 'graph_config_path', 'image_uri', 'source_tarball_path'] as const;
// A superseded revision that never started is skipped; one that was rolling out is interrupted.
const SUPERSEDED: Partial<Record<RevisionStatus, RevisionStatus>> = {
  CREATING: 'SKIPPED',
  QUEUED: 'SKIPPED',
  AWAITING_BUILD: 'SKIPPED',
  AWAITING_DEPLOY: 'SKIPPED',
  BUILDING: 'INTERRUPTED',
  DEPLOYING: 'INTERRUPTED',
};

export class EmulatorStore {
  readonly #state: EmulatorState;
  readonly #now: () => Date;
  #lastTimestamp = 0;
  /**
   * The stored deployments by id, made at the first look-up and kept with every creation and
   * removal: a search of the list for each revisions request and status report made a poll of
   * 10,000 deployments cost the emulator some 10,000 × 10,000 comparisons.
   */
  #byId: Map<string, StoredDeployment> | undefined;

  constructor(state: EmulatorState, now: () => Date = () => new Date()) {
    this.#state = state;
    this.#now = now;
  }

  snapshot(): EmulatorState {
    return structuredClone(this.#state);
  }

  /** Strictly increasing timestamps, so creation order and updated_at comparisons are exact. */
  #timestamp(): string {
    const ms = Math.max(this.#now().getTime(), this.#lastTimestamp + 1);
    this.#lastTimestamp = ms;
    return new Date(ms).toISOString();
  }

  // --- Listeners

  listListeners(): Listener[] {
    return this.#state.listeners;
  }

  getListener(id: string): Listener {
    const listener = this.#state.listeners.find((l) => l.id === id);
    if (!listener) throw notFound('listener', id);
    return listener;
  }

  createListener(body: ListenerWrite): Listener {
    if (
      this.#state.listeners.some(
        (l) => l.compute_id === body.compute_id && l.compute_type === body.compute_type,
      )
    ) {
      throw new EmulatorError(
        409,
        'conflict',
        `a ${body.compute_type} listener for ${body.compute_id} exists already`,
        'compute_id',
      );
    }
    const now = this.#timestamp();
    const listener: Listener = {
      id: randomUUID(),
      compute_type: body.compute_type,
      compute_id: body.compute_id,
      compute_config: body.compute_config ?? null,
      version: body.version ?? null,
      created_at: now,
      updated_at: now,
    };
    this.#state.listeners.push(listener);
    return listener;
  }

  putListener(id: string, body: ListenerWrite): Listener {
    const listener = this.getListener(id);
    if (body.compute_type !== listener.compute_type) invalidChange('compute_type');
    if (body.compute_id !== listener.compute_id) invalidChange('compute_id');
    listener.compute_config = body.compute_config ?? null;
    listener.version = body.version ?? null;
    listener.updated_at = this.#timestamp();
    return listener;
  }

  // --- Deployments

  listDeployments(query: DeploymentQuery): Deployment[] {
    const ids = query.deploymentIds ? new Set(query.deploymentIds) : undefined;
    const tags = query.tagValueIds ? new Set(query.tagValueIds) : undefined;
    return this.#state.deployments
      .filter(({ deployment: d, tag_value_ids }) => {
        if (query.tenantId !== undefined && d.tenant_id !== query.tenantId) return false;
        if (query.name !== undefined && d.name !== query.name) return false;
        if (query.nameContains !== undefined && !d.name.includes(query.nameContains)) return false;
        if (query.status !== undefined && d.status !== query.status) return false;
        if (query.remoteReconciled !== undefined && isRemote(d) !== query.remoteReconciled) return false;
        if (tags && !tag_value_ids.some((tag) => tags.has(tag))) return false;
        if (query.imageVersion !== undefined && d.image_version !== query.imageVersion) return false;
        if (query.deploymentType !== undefined && d.source_config.deployment_type !== query.deploymentType)
          return false;
        if (ids && !ids.has(d.id)) return false;
        return true;
      })
      .map((stored) => stored.deployment);
  }

  getDeployment(id: string, tenantId?: string): Deployment {
    return this.#stored(id, tenantId).deployment;
  }

  createDeployment(body: DeploymentCreate, tenantId: string | undefined): Deployment {
    const sourceConfig = normaliseSourceConfig(body.source_config ?? {});
    // As the real control plane: where listeners exist, an external image runs on one of them.
    if (
      sourceMeaning(body.source) === 'external_container' &&
      sourceConfig.listener_id == null &&
      this.#state.listeners.length > 0
    ) {
      throw new EmulatorError(
        400,
        'listener_required',
        `'listener_id' is required: this tenant deploys ${body.source} images through its listeners (source_config.listener_id and source_config.listener_config.k8s_namespace)`,
        'source_config.listener_id',
      );
    }
    this.#validateBinding(body.source, sourceConfig, body.secret_references);
    const now = this.#timestamp();
    const revisionConfig = revisionConfigOf(body.source_revision_config ?? {});
    const deployment: Deployment = {
      id: randomUUID(),
      tenant_id: tenantId ?? this.#state.default_tenant_id,
      name: body.name,
      source: body.source,
      source_config: sourceConfig,
      source_revision_config: revisionConfig,
      secrets: body.secrets ?? [],
      secret_references: body.secret_references ?? null,
      image_version: imageVersionOf(revisionConfig),
      status: 'UNKNOWN',
      created_at: now,
      updated_at: now,
      latest_revision_id: null,
      active_revision_id: null,
    };
    const stored: StoredDeployment = { deployment, revisions: [], tag_value_ids: [], deploy_logs: [] };
    this.#addRevision(stored, revisionConfig, now, body.source);
    this.#state.deployments.push(stored);
    this.#byId?.set(deployment.id, stored);
    return deployment;
  }

  patchDeployment(id: string, patch: DeploymentPatch, tenantId?: string): Deployment {
    const stored = this.#stored(id, tenantId);
    const current = stored.deployment;
    const sourceConfig =
      patch.source_config == null
        ? current.source_config
        : normaliseSourceConfig({ ...current.source_config, ...definedOnly(patch.source_config) });
    const secretReferences =
      patch.secret_references === undefined ? current.secret_references : patch.secret_references;
    this.#validateBinding(current.source, sourceConfig, secretReferences);
    // The interface's overrides are repohost, internal_container and internal_source: an external
    // image runs on the listener its deployment is bound to, so it neither takes nor is an override.
    if (patch.revision_source != null && sourceMeaning(current.source) === 'external_container') {
      throw invalid('revision_source', `revision_source does not apply to ${current.source} deployments`);
    }
    if (patch.revision_source != null && sourceMeaning(patch.revision_source) === 'external_container') {
      throw invalid(
        'revision_source',
        `revision_source ${patch.revision_source} is not an override: an external image is a deployment's own source`,
      );
    }
    const now = this.#timestamp();
    current.source_config = sourceConfig;
    if (patch.secrets != null) current.secrets = patch.secrets;
    if (patch.secret_references !== undefined) current.secret_references = patch.secret_references;
    if (patch.source_revision_config != null) {
      const next = revisionConfigOf({
        ...current.source_revision_config,
        ...definedOnly(patch.source_revision_config),
      });
      // Only a change of `source_revision_config` makes a new revision; `source_config` never does.
      if (!isDeepStrictEqual(next, current.source_revision_config)) {
        current.source_revision_config = next;
        current.image_version = imageVersionOf(next);
        // A PATCH's `revision_source` is this revision's source only; the deployment keeps its own.
        this.#addRevision(stored, next, now, patch.revision_source ?? current.source);
      }
    }
    current.updated_at = now;
    return current;
  }

  redeploy(id: string, revisionId: string, tenantId?: string): Deployment {
    const stored = this.#stored(id, tenantId);
    const revision = stored.revisions.find((r) => r.id === revisionId);
    if (!revision) throw notFound('revision', revisionId);
    const now = this.#timestamp();
    const config = structuredClone(revision.source_revision_config);
    stored.deployment.source_revision_config = config;
    stored.deployment.image_version = imageVersionOf(config);
    stored.deployment.updated_at = now;
    this.#addRevision(stored, config, now, revision.source);
    return stored.deployment;
  }

  /** Marks the deployment AWAITING_DELETE; its listener removes it by reporting `deleted`. */
  deleteDeployment(id: string, tenantId?: string): Deployment {
    const stored = this.#stored(id, tenantId);
    if (!isRemote(stored.deployment)) {
      this.#remove(stored);
      return stored.deployment;
    }
    stored.deployment.status = 'AWAITING_DELETE';
    stored.deployment.updated_at = this.#timestamp();
    return stored.deployment;
  }

  getRevision(id: string, revisionId: string, tenantId?: string): Revision {
    const revision = this.#stored(id, tenantId).revisions.find((r) => r.id === revisionId);
    if (!revision) throw notFound('revision', revisionId);
    return revision;
  }

  /** Newest first when `order` is desc; at most `limit`; only the revision's when one is named. */
  deployLogs(
    id: string,
    query: {
      revisionId?: string | undefined;
      limit: number;
      order: 'asc' | 'desc';
      level?: string | undefined;
      /** A substring of the message (the CLI's `--query`). */
      query?: string | undefined;
      /** ISO 8601, inclusive: `--follow` asks again from the newest entry it printed (and skips it by id). */
      start_time?: string | undefined;
      end_time?: string | undefined;
    },
    tenantId?: string,
  ): DeployLogEntry[] {
    const stored = this.#stored(id, tenantId);
    if (query.revisionId !== undefined) this.getRevision(id, query.revisionId, tenantId);
    const start = timeBound('start_time', query.start_time);
    const end = timeBound('end_time', query.end_time);
    const entries = stored.deploy_logs.filter((e) => {
      const at = Date.parse(e.timestamp);
      return (
        (query.revisionId === undefined || e.revision_id === query.revisionId) &&
        (query.level === undefined || e.level === query.level.toUpperCase()) &&
        (query.query === undefined || e.message.includes(query.query)) &&
        (start === undefined || at >= start) &&
        (end === undefined || at <= end)
      );
    });
    const ordered = query.order === 'desc' ? entries.reverse() : entries;
    return ordered.slice(0, query.limit);
  }

  listRevisions(id: string, query: RevisionQuery, tenantId?: string): Revision[] {
    const stored = this.#stored(id, tenantId);
    if (query.remoteReconciled !== undefined && isRemote(stored.deployment) !== query.remoteReconciled)
      return [];
    const statuses = query.statuses ? new Set(query.statuses) : undefined;
    return [...stored.revisions].reverse().filter((r) => !statuses || statuses.has(r.status));
  }

  setTags(id: string, tagValueIds: readonly string[]): void {
    this.#stored(id).tag_value_ids = [...tagValueIds];
  }

  // --- Status reports (extension)

  /** Applies every report it can; reports about deployments of other listeners are ignored. */
  applyStatusReports(listenerId: string, reports: readonly StatusReport[]): number {
    this.getListener(listenerId);
    let applied = 0;
    for (const report of reports) {
      const stored = this.#lookup(report.deployment_id);
      if (!stored || stored.deployment.source_config.listener_id !== listenerId) continue;
      const deployment = stored.deployment;
      const now = this.#timestamp();
      if (report.deleted) {
        // Only a deletion the control plane asked for may remove the record.
        if (deployment.status === 'AWAITING_DELETE') {
          this.#remove(stored);
          applied++;
        }
        continue;
      }
      if (report.revision_id != null && report.revision_status != null) {
        const revision = stored.revisions.find((r) => r.id === report.revision_id);
        if (revision) {
          revision.status = report.revision_status;
          revision.updated_at = now;
          if (report.revision_status === 'DEPLOYED') deployment.active_revision_id = revision.id;
        }
      }
      if (report.deployment_status != null && deployment.status !== 'AWAITING_DELETE') {
        deployment.status = report.deployment_status;
      }
      if (report.message != null) {
        stored.deploy_logs.push({
          id: randomUUID(),
          timestamp: now,
          level: report.revision_status === 'DEPLOY_FAILED' ? 'ERROR' : 'INFO',
          message: report.revision_status ? `${report.revision_status}: ${report.message}` : report.message,
          revision_id: report.revision_id ?? null,
        });
      }
      deployment.updated_at = now;
      applied++;
    }
    return applied;
  }

  // --- Internals

  #lookup(id: string): StoredDeployment | undefined {
    this.#byId ??= new Map(this.#state.deployments.map((d) => [d.deployment.id, d]));
    return this.#byId.get(id);
  }

  #remove(stored: StoredDeployment): void {
    this.#state.deployments = this.#state.deployments.filter((d) => d !== stored);
    this.#byId?.delete(stored.deployment.id);
  }

  #stored(id: string, tenantId?: string): StoredDeployment {
    const stored = this.#lookup(id);
    if (!stored || (tenantId !== undefined && stored.deployment.tenant_id !== tenantId))
      throw notFound('deployment', id);
    return stored;
  }

  #addRevision(
    stored: StoredDeployment,
    config: SourceRevisionConfig,
    now: string,
    source: Revision['source'],
  ): void {
    for (const older of stored.revisions) {
      const next = SUPERSEDED[older.status];
      if (next) {
        older.status = next;
        older.updated_at = now;
      }
    }
    const remote = isRemote(stored.deployment);
    const revision: Revision = {
      id: randomUUID(),
      created_at: now,
      updated_at: now,
      // A remotely reconciled revision waits for its listener; others would be built here.
      status: remote ? 'AWAITING_DEPLOY' : 'QUEUED',
      source,
      source_revision_config: structuredClone(config),
    };
    stored.revisions.push(revision);
    stored.deployment.latest_revision_id = revision.id;
  }

  #validateBinding(
    source: Deployment['source'],
    config: SourceConfig,
    secretReferences: Deployment['secret_references'],
  ): void {
    const external = sourceMeaning(source) === 'external_container';
    if (secretReferences?.length && !external) {
      throw invalid(
        'secret_references',
        'secret_references apply only to external_container (external_docker) deployments',
      );
    }
    if (config.listener_id == null) return;
    if (!external) {
      throw invalid(
        'source',
        'only external_container (external_docker) deployments can be bound to a listener',
      );
    }
    const listener = this.#state.listeners.find((l) => l.id === config.listener_id);
    if (!listener)
      throw invalid('source_config.listener_id', `listener ${config.listener_id} does not exist`);
    const namespace = config.listener_config?.k8s_namespace;
    const allowed = listener.compute_config?.k8s_namespaces ?? [];
    if (namespace != null && !allowed.includes(namespace)) {
      throw invalid(
        'source_config.listener_config.k8s_namespace',
        `namespace ${namespace} is not one of the listener's k8s_namespaces (${allowed.join(', ') || 'none'})`,
      );
    }
  }
}

function invalidChange(field: string): never {
  throw invalid(field, `${field} cannot be changed after creation`);
}

function isRemote(deployment: Deployment): boolean {
  return deployment.source_config.listener_id != null;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function normaliseSourceConfig(config: Partial<SourceConfig>): SourceConfig {
  return {
    integration_id: config.integration_id ?? null,
    repo_url: config.repo_url ?? null,
    deployment_type: config.deployment_type ?? null,
    build_on_push: config.build_on_push ?? null,
    custom_url: config.custom_url ?? null,
    resource_spec: config.resource_spec ?? null,
    listener_id: config.listener_id ?? null,
    listener_config: config.listener_config ?? null,
    install_command: config.install_command ?? null,
    build_command: config.build_command ?? null,
  };
}

function revisionConfigOf(config: Partial<SourceRevisionConfig>): SourceRevisionConfig {
  const out: SourceRevisionConfig = { repo_commit_sha: config.repo_commit_sha ?? null };
  for (const key of REVISION_FIELDS) out[key] = config[key] ?? null;
  return out;
}

/** The tag of the image (the part after the last ':' past the last '/'), if any. */
function imageVersionOf(config: SourceRevisionConfig): string | null {
  const image = config.image_uri;
  if (!image) return null;
  const name = image.split('@')[0] ?? image;
  const lastSlash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  return colon > lastSlash ? name.slice(colon + 1) : null;
}
