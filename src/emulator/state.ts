// The emulator's whole state: what a seed or state file holds, validated on load.
import { z } from 'zod';
import {
  AgentConnection,
  Deployment,
  Listener,
  OAuthProvider,
  Repository,
  Revision,
} from '../controlplane/schemas/index.ts';

/** A line of `deploy logs` (the real control plane's /v1 log endpoints): what the listener reported. */
export const DeployLogEntry = z.object({
  id: z.string(),
  timestamp: z.string(),
  level: z.enum(['INFO', 'WARNING', 'ERROR']),
  message: z.string(),
  revision_id: z.string().nullable(),
});
export type DeployLogEntry = z.infer<typeof DeployLogEntry>;

export const StoredDeployment = z.object({
  deployment: Deployment,
  /** Oldest first; the API lists them newest first. */
  revisions: z.array(Revision),
  /** Tag value ids, matched by the `tag_value_ids` filter. Not part of the Deployment resource. */
  tag_value_ids: z.array(z.string()).default([]),
  /** Oldest first: each status report that carried a message. */
  deploy_logs: z.array(DeployLogEntry).default([]),
});
export type StoredDeployment = z.infer<typeof StoredDeployment>;

export const EmulatorState = z.object({
  /** Tenant of deployments created without an X-Tenant-Id header. */
  default_tenant_id: z.guid().default('00000000-0000-4000-8000-000000000001'),
  listeners: z.array(Listener).default([]),
  /** In creation order, which is the order of the list endpoint. */
  deployments: z.array(StoredDeployment).default([]),
  oauth_providers: z.array(OAuthProvider).default([]),
  /** Agent id → its connections. */
  agent_connections: z.record(z.string(), z.array(AgentConnection)).default({}),
  /** Integration id → repositories, for the repohost and the hosted-variant listings. */
  repositories: z.record(z.string(), z.array(Repository)).default({}),
  hosted_repositories: z.record(z.string(), z.array(Repository)).default({}),
});
export type EmulatorState = z.infer<typeof EmulatorState>;
export type EmulatorStateInput = z.input<typeof EmulatorState>;
