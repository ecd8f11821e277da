// Change → applied, the cluster's side: watches of the Deployments of some namespaces, which tell
// when a Deployment first carries an image waited for. One watch per namespace, whatever the
// number of changes in flight, so that the measurement adds no load of its own as they grow.
import type { KubeClient } from '../../src/kube/kubeClient.ts';
import { sleep } from '../../src/sleep.ts';

export class ImageWatch {
  readonly #abort = new AbortController();
  readonly #waiting = new Map<string, { image: string; since: number; done: (ms: number) => void }>();
  readonly #watches: Promise<void>[];

  private constructor(admin: KubeClient, namespaces: readonly string[]) {
    this.#watches = namespaces.map(async (namespace) => {
      const list = await admin.listWithVersion('Deployment', { namespace });
      try {
        for await (const event of admin.watch('Deployment', {
          namespace,
          resourceVersion: list.resourceVersion,
          signal: this.#abort.signal,
        })) {
          const key = `${namespace}/${event.object.metadata.name}`;
          const wanted = this.#waiting.get(key);
          const spec = event.object.spec as
            | { template?: { spec?: { containers?: { image?: string }[] } } }
            | undefined;
          if (wanted && spec?.template?.spec?.containers?.some((c) => c.image === wanted.image)) {
            this.#waiting.delete(key);
            wanted.done(performance.now() - wanted.since);
          }
        }
      } catch (error) {
        if (!this.#abort.signal.aborted) throw error;
      }
    });
  }

  /** Watches `namespaces`; resolves once the watches have had time to start. */
  static async start(admin: KubeClient, namespaces: readonly string[]): Promise<ImageWatch> {
    const watch = new ImageWatch(admin, namespaces);
    await sleep(500);
    return watch;
  }

  /** How many changes are still waited for. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Resolves with the ms from now until `namespace/name` carries `image`. */
  expect(namespace: string, name: string, image: string): Promise<number> {
    return new Promise((resolve) =>
      this.#waiting.set(`${namespace}/${name}`, { image, since: performance.now(), done: resolve }),
    );
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled(this.#watches);
  }
}
