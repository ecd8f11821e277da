// Kubernetes names derived from deployment names: DNS-1123, stable, and hashed when changed.
import { createHash } from 'node:crypto';

/** Room left for the longest suffix we append ("-db-credentials") and StatefulSet pod ordinals. */
export const MAX_BASE_NAME = 40;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
// Kubernetes' classic environment variable name rule (IsEnvVarName).
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

export function shortHash(value: string, length = 6): string {
  return createHash('sha256').update(value).digest('hex').slice(0, length);
}

/**
 * The base of every object name of one deployment. A name that is already a valid, short DNS
 * label is kept as is; any other is normalised, truncated and given a hash of the deployment id,
 * so that it stays stable across runs and two deployments never share one.
 */
export function baseName(deploymentName: string, deploymentId: string): string | undefined {
  // DNS-1035 (a leading letter), because Service names must be, and every name derives from it.
  if (DNS1035_LABEL.test(deploymentName) && deploymentName.length <= MAX_BASE_NAME) return deploymentName;
  const normalised = deploymentName
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  if (normalised === '') return undefined;
  const suffix = shortHash(deploymentId);
  const lettered = /^[a-z]/.test(normalised) ? normalised : `app-${normalised}`;
  const head = lettered.slice(0, MAX_BASE_NAME - suffix.length - 1).replace(/-$/, '');
  return `${head}-${suffix}`;
}

export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS1123_LABEL.test(value);
}

export function isEnvVarName(value: string): boolean {
  return ENV_VAR_NAME.test(value);
}

export function isSecretKey(value: string): boolean {
  return value.length <= 253 && SECRET_KEY.test(value);
}

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A qualified key's longest: a DNS prefix of 253, a slash, a name of 63. */
export const MAX_QUALIFIED_KEY = 253 + 1 + 63;

/** A qualified label or annotation key: optional DNS prefix, then a name of at most 63. */
export function isQualifiedKey(key: string): boolean {
  // Length first: no pattern runs over a key longer than any valid one.
  if (key.length > MAX_QUALIFIED_KEY) return false;
  const parts = key.split('/');
  if (parts.length > 2) return false;
  const name = parts.at(-1) ?? '';
  const prefix = parts.length === 2 ? parts[0] : undefined;
  if (prefix !== undefined && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) return false;
  return name.length <= 63 && LABEL_NAME.test(name);
}

export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

export function isHostname(value: string): boolean {
  return value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}
