// A leader serves the listener's namespaces that the allow-list keeps, each once its inventories
// are read: one added to the listener is served without a restart, one whose inventories cannot
// be read waits for the next poll (and is no target meanwhile), and a failed read of the listener
// keeps the last one.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Listener } from '../../../src/controlplane/schemas/index.ts';
import { ServedNamespaces } from '../../../src/manager/servedNamespaces.ts';

const LISTENER_ID = '0b4f1c1e-0000-4000-8000-0000000000ff';

function listener(namespaces: string[]): Listener {
  return {
    id: LISTENER_ID,
    compute_type: 'k8s',
    compute_config: { k8s_namespaces: namespaces },
  } as unknown as Listener;
}

function served(options: { registered: string[]; allowed?: string[] }) {
  const state: { listener: Listener | Error; unreadable: Set<string> } = {
    listener: listener(options.registered),
    unreadable: new Set(),
  };
  const loaded: string[] = [];
  const watched: string[] = [];
  const subject = new ServedNamespaces({
    controlPlane: {
      getListener: async () => {
        if (state.listener instanceof Error) throw state.listener;
        return state.listener;
      },
    },
    registration: { listener: listener(options.registered), namespaces: options.registered },
    allowedNamespaces: options.allowed,
    agentNamespace: 'agent',
    logger: pino({ level: 'silent' }),
  });
  const inventories = {
    load: async (namespaces: readonly string[]) => {
      loaded.push(...namespaces);
    },
    add: async (namespace: string) => {
      if (state.unreadable.has(namespace)) throw new Error('forbidden');
      loaded.push(namespace);
    },
  };
  const follow = () => subject.follow(inventories, (namespace) => watched.push(namespace), signal);
  return { subject, state, inventories, loaded, watched, follow };
}

const signal = new AbortController().signal;

describe('ServedNamespaces', () => {
  it('serves the registered namespaces once their inventories are loaded', async () => {
    const s = served({ registered: ['apps', 'web'] });
    expect(s.subject.served).toEqual([]);
    expect(await s.subject.load(s.inventories, signal)).toBe(true);
    expect(s.loaded).toEqual(['apps', 'web']);
    expect(s.subject.served).toEqual(['apps', 'web']);
  });

  it('serves a namespace added to the listener after its inventories, and says what is served changed', async () => {
    const s = served({ registered: ['apps'] });
    await s.subject.load(s.inventories, signal);
    s.state.listener = listener(['apps', 'web']);
    expect(await s.follow()).toBe(true);
    expect(s.watched).toEqual(['web']);
    expect(s.subject.served).toEqual(['apps', 'web']);
    expect(s.subject.listener.compute_config?.k8s_namespaces).toEqual(['apps', 'web']);
    // Nothing new the next time.
    expect(await s.follow()).toBe(false);
  });

  it('leaves an added namespace unserved, and no target, while its inventories cannot be read', async () => {
    const s = served({ registered: ['apps'] });
    await s.subject.load(s.inventories, signal);
    s.state.unreadable.add('web');
    s.state.listener = listener(['apps', 'web']);
    expect(await s.follow()).toBe(false);
    expect(s.watched).toEqual([]);
    expect(s.subject.listener.compute_config?.k8s_namespaces).toEqual(['apps']);
    s.state.unreadable.clear();
    expect(await s.follow()).toBe(true);
    expect(s.subject.listener.compute_config?.k8s_namespaces).toEqual(['apps', 'web']);
  });

  it('takes a namespace off the listener as a target at once, keeping it served (watched)', async () => {
    const s = served({ registered: ['apps', 'web'] });
    await s.subject.load(s.inventories, signal);
    s.state.listener = listener(['apps']);
    expect(await s.follow()).toBe(true);
    expect(s.subject.listener.compute_config?.k8s_namespaces).toEqual(['apps']);
    expect(s.subject.served).toEqual(['apps', 'web']);
  });

  it('never serves a namespace outside the allow-list', async () => {
    const s = served({ registered: ['apps'], allowed: ['apps'] });
    await s.subject.load(s.inventories, signal);
    s.state.listener = listener(['apps', 'other']);
    await s.follow();
    expect(s.watched).toEqual([]);
    expect(s.subject.served).toEqual(['apps']);
  });

  it('keeps the last listener read when the control plane cannot be read', async () => {
    const s = served({ registered: ['apps'] });
    await s.subject.load(s.inventories, signal);
    s.state.listener = new Error('unreachable');
    expect(await s.follow()).toBe(false);
    expect(s.subject.listener.compute_config?.k8s_namespaces).toEqual(['apps']);
  });
});
