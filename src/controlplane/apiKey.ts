// Where the control-plane client gets its API key for each request: a fixed string, or a file
// (a mounted Secret) read again when it changes, so a rotated Secret is used without a restart.
import { type FSWatcher, watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';

export interface ApiKeySource {
  /** The key to send with the next request; undefined sends none. */
  current(): Promise<string | undefined>;
  /** The server refused the key (401): look at the source again before the next request. */
  refused(): void;
  close(): void;
}

export type ApiKeyErrorCode = 'API_KEY_FILE_UNREADABLE' | 'API_KEY_FILE_EMPTY';

/** The key file cannot be used. Names the file, never its content. */
export class ApiKeyError extends Error {
  override readonly name = 'ApiKeyError';
  readonly code: ApiKeyErrorCode;
  readonly path: string;
  constructor(message: string, code: ApiKeyErrorCode, path: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.path = path;
  }
}

export function fixedApiKey(key: string | undefined): ApiKeySource {
  return { current: async () => key, refused: () => {}, close: () => {} };
}

export interface ApiKeyFileOptions {
  readonly path: string;
  /** Between two looks at the file (one stat) when nothing signalled a change. */
  readonly checkIntervalMs?: number;
  readonly logger?: Logger | undefined;
}

/**
 * The key in a file, trimmed. Kubernetes updates a mounted Secret by writing a new timestamped
 * directory and swapping the `..data` symlink, so the file's identity (device, inode, size,
 * mtime, through the symlinks) changes: a watch on the directory marks the key stale at once, and
 * a stat at most every `checkIntervalMs` catches what a watch misses. A 401 marks it stale too.
 * A file that vanishes or turns empty after a good read keeps the last key (and says so once).
 */
export class ApiKeyFile implements ApiKeySource {
  readonly #path: string;
  readonly #checkIntervalMs: number;
  readonly #logger: Logger | undefined;
  #key: string | undefined;
  #identity = '';
  #checkedAt = 0;
  #stale = true;
  #pending: Promise<string> | undefined;
  #watcher: FSWatcher | undefined;
  #warned = false;
  #closed = false;

  constructor(options: ApiKeyFileOptions) {
    this.#path = options.path;
    this.#checkIntervalMs = options.checkIntervalMs ?? 1_000;
    this.#logger = options.logger?.child({ component: 'api-key-file' });
  }

  async current(): Promise<string> {
    const fresh = !this.#stale && Date.now() - this.#checkedAt < this.#checkIntervalMs;
    if (this.#key !== undefined && fresh) return this.#key;
    // Concurrent requests share one look at the file.
    this.#pending ??= this.#load().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  refused(): void {
    this.#stale = true;
  }

  close(): void {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  async #load(): Promise<string> {
    this.#stale = false;
    this.#checkedAt = Date.now();
    let identity: string;
    let key: string;
    try {
      const stats = await stat(this.#path);
      identity = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
      if (this.#key !== undefined && identity === this.#identity) return this.#key;
      key = (await readFile(this.#path, 'utf8')).trim();
    } catch (cause) {
      return this.#keepOrThrow(
        new ApiKeyError(`cannot read the API key file ${this.#path}`, 'API_KEY_FILE_UNREADABLE', this.#path, {
          cause,
        }),
      );
    }
    if (key === '') {
      return this.#keepOrThrow(
        new ApiKeyError(`the API key file ${this.#path} is empty`, 'API_KEY_FILE_EMPTY', this.#path),
      );
    }
    if (this.#key !== undefined && key !== this.#key)
      this.#logger?.info({ path: this.#path }, 'API key file changed; using the new key');
    this.#key = key;
    this.#identity = identity;
    this.#warned = false;
    this.#watch();
    return key;
  }

  #keepOrThrow(error: ApiKeyError): string {
    if (this.#key === undefined) throw error;
    if (!this.#warned) {
      this.#warned = true;
      this.#logger?.warn(
        { path: this.#path, code: error.code },
        'API key file unusable; keeping the last key',
      );
    }
    return this.#key;
  }

  /** Watches the directory, where the kubelet swaps `..data`; the interval check covers failures. */
  #watch(): void {
    if (this.#watcher || this.#closed) return;
    try {
      this.#watcher = watch(dirname(this.#path), { persistent: false }, () => {
        this.#stale = true;
      });
      this.#watcher.on('error', () => {
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch {
      this.#watcher = undefined;
    }
  }
}
