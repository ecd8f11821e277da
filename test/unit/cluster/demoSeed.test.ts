import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { EmulatorState } from '../../../src/emulator/state.ts';
import { LANGGRAPH_DEPLOYMENT, seedForRealNode, seedImages, seedWithImage } from '../../cluster/demoSeed.ts';

const seedPath = new URL('../../../src/emulator/fixtures/seed.json', import.meta.url).pathname;
const seed = EmulatorState.parse(JSON.parse(await readFile(seedPath, 'utf8')));
const LOCAL = '127.0.0.1:5000/k8s-listener-test/probe-app@sha256:0123';
const SERVER = '127.0.0.1:5000/k8s-listener-test/langgraph-server@sha256:4567';

describe('the demo seed on a real node', () => {
  it('names public images, in revisions, init containers and sidecars', () => {
    expect(seedImages(seed)).toEqual(['busybox:1.35', 'busybox:1.36', 'nginx:1.27']);
  });

  it('runs every container of it from the one local image, and stays a valid seed', () => {
    const local = seedWithImage(seed, LOCAL);
    expect(seedImages(local)).toEqual([LOCAL]);
    expect(EmulatorState.parse(local)).toEqual(local);
    // Nothing else changes: the same deployments, revisions, listeners.
    const withoutImages = (state: EmulatorState) =>
      JSON.parse(JSON.stringify(state).replaceAll(/"image(_uri)?":"[^"]*"/g, '"image$1":""'));
    expect(withoutImages(local)).toEqual(withoutImages(seed));
  });

  it('runs the LangGraph server in one deployment, one replica sized for the node, the probe app in the rest', () => {
    const local = seedForRealNode(seed, { probeApp: LOCAL, langgraphServer: SERVER });
    expect(EmulatorState.parse(local)).toEqual(local);
    expect(seedImages(local)).toEqual([SERVER, LOCAL].sort());
    for (const { deployment, revisions } of local.deployments) {
      const served = deployment.name === LANGGRAPH_DEPLOYMENT;
      expect(deployment.source_revision_config.image_uri).toBe(served ? SERVER : LOCAL);
      for (const revision of revisions)
        expect(revision.source_revision_config.image_uri).toBe(served ? SERVER : LOCAL);
    }
    const spec = local.deployments.find((d) => d.deployment.name === LANGGRAPH_DEPLOYMENT)?.deployment
      .source_config.resource_spec;
    // Its stores as the seed has them (a PostgreSQL and a Redis), its sizes the node's.
    expect(spec).toMatchObject({
      min_scale: 1,
      max_scale: 1,
      cpu: 0.25,
      db_cpu: 0.25,
      db_max_connections: 100,
    });
  });
});
