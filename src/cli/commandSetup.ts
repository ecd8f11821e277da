// What a one-shot command acting as the agent (status, diff, check, suspend, resume) sets up
// before its work: the agent's configuration from its flags, a logger on stderr (stdout is the
// command's output), and its clients of the control plane and the cluster, each naming the
// command in its user agent. A command answers in seconds: it does not wait out an outage.
import pino, { type Logger } from 'pino';
import type { AgentConfig } from '../config/agentConfig.ts';
import { ControlPlaneClient, type ControlPlaneClientOptions } from '../controlplane/client.ts';
import { KubeClient } from '../kube/kubeClient.ts';
import { loadDigestKey } from '../manager/digestKey.ts';
import { AGENT_NAME } from '../objects/ownership.ts';
import { terminalLine } from '../report/terminalText.ts';
import { AGENT_VERSION } from '../version.ts';
import { type ConfigFlagValues, loadConfigFromFlags } from './configFlags.ts';
import { createLogger } from './logger.ts';

/** The control-plane client's options from the agent configuration, as the agent itself uses them. */
export function controlPlaneClientOptions(
  controlPlane: AgentConfig['controlPlane'],
): Omit<ControlPlaneClientOptions, 'logger'> {
  const { baseUrl, apiKey, apiKeyFile, tenantId, timeoutMs, maxResponseBytes, maxPages, maxListingBytes } =
    controlPlane;
  return {
    baseUrl,
    timeoutMs,
    maxResponseBytes,
    maxPages,
    maxListingBytes,
    ...(apiKey ? { apiKey } : {}),
    ...(apiKeyFile ? { apiKeyFile } : {}),
    ...(tenantId ? { tenantId } : {}),
  };
}

/** A command's retries: one, within seconds. */
const COMMAND_RETRY = { retries: 1, minDelayMs: 200, maxDelayMs: 1_000, maxElapsedMs: 5_000 };

export interface CommandSetupOptions {
  /** The log level without --log-level: silent, or warn where the command's stderr is for news. */
  readonly quietLogLevel?: 'silent' | 'warn';
  /** Per Kubernetes request; the client's own default when absent. */
  readonly kubeTimeoutMs?: number;
}

export class CommandSetup {
  readonly config: AgentConfig;
  readonly logger: Logger;
  /** With the agent's credentials and bounds, and a command's short retry. */
  readonly controlPlane: ControlPlaneClient;
  readonly #userAgent: string;
  readonly #kubeTimeoutMs: number | undefined;
  #kube: Promise<KubeClient> | undefined;

  constructor(
    config: AgentConfig,
    logLevelFlag: string | undefined,
    command: string,
    options: CommandSetupOptions,
  ) {
    this.config = config;
    const quiet = options.quietLogLevel ?? 'silent';
    this.logger =
      logLevelFlag !== undefined
        ? createLogger(config.log.level, pino.destination(2))
        : quiet === 'silent'
          ? pino({ level: 'silent' })
          : createLogger(quiet, pino.destination(2));
    this.#userAgent = `${AGENT_NAME}/${AGENT_VERSION} ${command}`;
    this.#kubeTimeoutMs = options.kubeTimeoutMs;
    this.controlPlane = new ControlPlaneClient({
      ...controlPlaneClientOptions(config.controlPlane),
      retry: COMMAND_RETRY,
      logger: this.logger,
      userAgent: this.#userAgent,
    });
  }

  /**
   * The Kubernetes client, opened at the first call: a kubeconfig that does not load fails here,
   * for the command to say so its own way.
   */
  kube(): Promise<KubeClient> {
    this.#kube ??= KubeClient.fromKubeconfig(this.config.kubeconfig, {
      logger: this.logger,
      ...(this.#kubeTimeoutMs === undefined ? {} : { requestTimeoutMs: this.#kubeTimeoutMs }),
      userAgent: this.#userAgent,
    });
    return this.#kube;
  }

  /** Closes both clients (the Kubernetes one if it was opened). */
  async close(): Promise<void> {
    await this.controlPlane.close();
    const kube = await this.#kube?.catch(() => undefined);
    await kube?.close();
  }
}

/**
 * The configuration (its ConfigError names what is wrong, for the command to word), then the
 * logger and the control-plane client.
 */
export async function commandSetup(
  values: ConfigFlagValues,
  command: string,
  options: CommandSetupOptions = {},
): Promise<CommandSetup> {
  return new CommandSetup(await loadConfigFromFlags(values), values['log-level'], command, options);
}

/**
 * The agent's digest key for a command that renders as the agent does (status, diff): without it
 * the digests differ from the agent's, so it says, in one line, what the command does instead.
 */
export async function commandDigestKey(
  kube: Pick<KubeClient, 'get' | 'create'>,
  config: AgentConfig,
  stderr: { write(text: string): unknown },
  without: string,
): Promise<Uint8Array | undefined> {
  const where = `namespace ${config.agentNamespace} (agentNamespace)`;
  try {
    const key = await loadDigestKey(kube, config.agentNamespace, { create: false });
    if (!key) stderr.write(`warning: no digest key in ${where}: ${without}\n`);
    return key;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    stderr.write(
      terminalLine(`warning: the digest key in ${where} could not be read (${reason}): ${without}`),
    );
    return undefined;
  }
}
