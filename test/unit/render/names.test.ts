// Object names from a deployment's name: DNS labels with a stable hash of its id; env var names.
import { describe, expect, it } from 'vitest';
import { baseName, isEnvVarName, MAX_BASE_NAME } from '../../../src/render/names.ts';

describe('names', () => {
  const id = '9a1b2c3d-4e5f-4a6b-8c7d-000000000001';
  it('keeps a name that is already a short DNS label', () => {
    expect(baseName('chat-api', id)).toBe('chat-api');
  });

  it.each([
    ['Chat API', /^chat-api-[0-9a-f]{6}$/],
    ['agent_platform.v2', /^agent-platform-v2-[0-9a-f]{6}$/],
    ['a'.repeat(80), new RegExp(`^a{${MAX_BASE_NAME - 7}}-[0-9a-f]{6}$`)],
    ['--édition spéciale--', /^edition-speciale-[0-9a-f]{6}$/],
    ['0', /^app-0-[0-9a-f]{6}$/],
    ['2024 launch', /^app-2024-launch-[0-9a-f]{6}$/],
  ])('normalises %j with a stable hash of the id', (name, pattern) => {
    const first = baseName(name, id);
    expect(first).toMatch(pattern);
    expect(first?.length).toBeLessThanOrEqual(MAX_BASE_NAME);
    expect(baseName(name, id)).toBe(first);
    expect(baseName(name, 'other-id')).not.toBe(first);
  });

  it('gives up on a name with no letters or digits', () => {
    expect(baseName('!!!', id)).toBeUndefined();
  });

  it.each([
    ['DATABASE_URI', true],
    ['my.var-1', true],
    ['1ABC', false],
    ['A=B', false],
    ['', false],
  ])('env var name %j valid: %s', (name, valid) => expect(isEnvVarName(name)).toBe(valid));
});
