// The API server's version (GET /version) and the range of Kubernetes versions the agent supports.
import { z } from 'zod';
import type { CallOptions, KubeClient } from './kubeClient.ts';

/** The oldest Kubernetes minor version the agent supports (every API it uses is GA there). */
export const MIN_SUPPORTED_VERSION = { major: 1, minor: 29 } as const;
export const SUPPORTED_RANGE = `≥ ${MIN_SUPPORTED_VERSION.major}.${MIN_SUPPORTED_VERSION.minor}`;

export interface ServerVersion {
  readonly major: number;
  readonly minor: number;
  /** As the server states it, e.g. `v1.34.4` or `v1.30.2-eks-1234`. */
  readonly gitVersion: string;
}

const VersionInfo = z.looseObject({
  major: z.string(),
  minor: z.string(),
  gitVersion: z.string().default(''),
});

/** Reads `/version`. Distributions write the minor as `30+`: the digits are what counts. */
export async function readServerVersion(
  client: KubeClient,
  options: CallOptions = {},
): Promise<ServerVersion> {
  const body = await client.requestJson('GET', '/version', { ...options, kind: 'Version' });
  return parseServerVersion(body);
}

export class ServerVersionError extends Error {
  override readonly name = 'ServerVersionError';
  readonly code = 'KUBE_VERSION_UNREADABLE';
}

export function parseServerVersion(body: unknown): ServerVersion {
  const parsed = VersionInfo.safeParse(body);
  const major = parsed.success ? Number.parseInt(parsed.data.major, 10) : Number.NaN;
  const minor = parsed.success ? Number.parseInt(parsed.data.minor, 10) : Number.NaN;
  if (!parsed.success || Number.isNaN(major) || Number.isNaN(minor)) {
    throw new ServerVersionError('the API server /version answer has no numeric major and minor');
  }
  return { major, minor, gitVersion: parsed.data.gitVersion || `v${major}.${minor}` };
}

export function isSupportedVersion(version: Pick<ServerVersion, 'major' | 'minor'>): boolean {
  if (version.major !== MIN_SUPPORTED_VERSION.major) return version.major > MIN_SUPPORTED_VERSION.major;
  return version.minor >= MIN_SUPPORTED_VERSION.minor;
}
