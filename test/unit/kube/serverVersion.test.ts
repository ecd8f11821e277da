import { describe, expect, it } from 'vitest';
import {
  isSupportedVersion,
  parseServerVersion,
  ServerVersionError,
  SUPPORTED_RANGE,
} from '../../../src/kube/serverVersion.ts';

describe('server version', () => {
  it.each([
    [{ major: '1', minor: '34', gitVersion: 'v1.34.4' }, 1, 34, 'v1.34.4', true],
    [{ major: '1', minor: '30+', gitVersion: 'v1.30.2-eks-1234' }, 1, 30, 'v1.30.2-eks-1234', true],
    [{ major: '1', minor: '29' }, 1, 29, 'v1.29', true],
    [{ major: '1', minor: '28', gitVersion: 'v1.28.9' }, 1, 28, 'v1.28.9', false],
    [{ major: '1', minor: '9', gitVersion: 'v1.9.0' }, 1, 9, 'v1.9.0', false],
  ])('%j → %i.%i %s supported=%s', (body, major, minor, gitVersion, supported) => {
    const version = parseServerVersion(body);
    expect(version).toEqual({ major, minor, gitVersion });
    expect(isSupportedVersion(version)).toBe(supported);
  });

  it.each([[{}], [{ major: 'one', minor: '2' }], ['v1.30'], [null]])(
    'rejects %j with a typed error',
    (body) => {
      expect(() => parseServerVersion(body)).toThrow(ServerVersionError);
    },
  );

  it('states the range', () => {
    expect(SUPPORTED_RANGE).toBe('≥ 1.29');
  });
});
