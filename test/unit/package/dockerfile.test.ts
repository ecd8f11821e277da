// The Dockerfile, read structurally (no Docker engine here to build it): the stages, what reaches
// the final one, the user, the entry point, the labels, and the build context it is given.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentCommand } from '../../support/agentProcess.ts';
import { IMAGE_ENV } from '../../support/imageRuntime.ts';

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

interface Stage {
  readonly from: string;
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

/** Instructions with line continuations joined and comments dropped, grouped by FROM. */
function parseDockerfile(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === 'FROM') {
      const [from = '', , name] = args.split(/\s+/);
      stages.push({ from, name, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

const root = new URL('../../..', import.meta.url).pathname;
const stages = parseDockerfile(readFileSync(`${root}Dockerfile`, 'utf8'));
const final = stages.at(-1);
const all = (stage: Stage | undefined, keyword: string) =>
  (stage?.instructions ?? []).filter((i) => i.keyword === keyword).map((i) => i.args);

describe('Dockerfile', () => {
  it('builds in stages on Node 24, packing and installing the package as the package test does', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'install', undefined]);
    for (const stage of stages) expect(stage.from).toMatch(/^node:24[.-]/);
    const build = all(stages[0], 'RUN').join('\n');
    expect(build).toContain('npm ci ');
    expect(build).toContain('npm pack');
    const install = all(stages[1], 'RUN').join('\n');
    expect(install).toContain('tar -xzf /tmp/k8s-listener.tgz --strip-components=1');
    expect(install).toContain('npm ci --omit=dev');
  });

  it('puts only the installed package in the final stage: no sources, no build context', () => {
    const copies = all(final, 'COPY');
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) expect(copy).toMatch(/^--from=install\b/);
    expect(copies.join('\n')).not.toMatch(/\bsrc\b|\.ts\b/);
  });

  it('runs in production mode with two malloc arenas, fixed thresholds, a 16 MiB young generation and an old generation of 60 % of the limit, the environment bench:sync gives the agent', () => {
    const env = all(final, 'ENV').join(' ');
    // IMAGE_ENV is what bench:sync and the bounded-input test run the agent with.
    expect(Object.keys(IMAGE_ENV).sort()).toEqual([
      'MALLOC_ARENA_MAX',
      'MALLOC_MMAP_THRESHOLD_',
      'MALLOC_TRIM_THRESHOLD_',
      'NODE_ENV',
      'NODE_OPTIONS',
    ]);
    // A value with a space is quoted in the Dockerfile.
    for (const [name, value] of Object.entries(IMAGE_ENV))
      expect(env).toContain(value.includes(' ') ? `${name}="${value}"` : `${name}=${value} `);
    expect(IMAGE_ENV.NODE_OPTIONS.split(' ')).toEqual([
      '--max-semi-space-size=16',
      '--max-old-space-size-percentage=60',
    ]);
  });

  it('runs as a numeric non-root user, node as PID 1 in exec form, with OCI labels', () => {
    const users = all(final, 'USER');
    expect(users).toHaveLength(1);
    const [uid, gid] = (users[0] ?? '').split(':').map(Number);
    expect(uid).toBeGreaterThan(0);
    expect(gid).toBeGreaterThan(0);
    // No Node flags: bench:sync measures the agent started as `node dist/cli/main.js run`, through
    // the shared process helper, which puts nothing but node's own flags before it.
    const entrypoint = JSON.parse(all(final, 'ENTRYPOINT')[0] ?? 'null');
    expect(entrypoint).toEqual(['node', '/app/dist/cli/main.js']);
    const cmd = JSON.parse(all(final, 'CMD')[0] ?? 'null');
    expect(cmd).toEqual(['run']);
    const [node = '', ...asRun] = agentCommand('/config.yaml', {
      image: { main: '/app/dist/cli/main.js', env: IMAGE_ENV },
    });
    expect([basename(node), ...asRun]).toEqual([...entrypoint, ...cmd, '--config', '/config.yaml']);
    expect(readFileSync(`${root}bench/sync/agentUnderTest.ts`, 'utf8')).toContain('startAgentProcess(');
    const labels = all(final, 'LABEL').join(' ');
    for (const key of ['title', 'description', 'licenses', 'version', 'revision']) {
      expect(labels).toContain(`org.opencontainers.image.${key}=`);
    }
  });

  it('is given a build context of exactly what it copies', () => {
    const ignore = readFileSync(`${root}.dockerignore`, 'utf8')
      .split('\n')
      .filter((line) => line && !line.startsWith('#'));
    expect(ignore).toEqual(['*', '!package.json', '!package-lock.json', '!tsconfig.json', '!src/']);
    const copiedFromContext = stages
      .flatMap((stage) => all(stage, 'COPY'))
      .filter((args) => !args.startsWith('--from='))
      .flatMap((args) => args.split(/\s+/).slice(0, -1));
    expect(new Set(copiedFromContext)).toEqual(
      new Set(['package.json', 'package-lock.json', 'tsconfig.json', 'src']),
    );
  });
});
