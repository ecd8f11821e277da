// What travels unencrypted or unverified is said at start: a table of connections.
import { describe, expect, it } from 'vitest';
import { transportWeaknesses } from '../../../src/manager/transportSecurity.ts';

describe('transport weaknesses', () => {
  it.each([
    ['https everywhere, verified', 'https://cp.example.test', 'https://10.0.0.1:6443', true, []],
    [
      'a loopback http control plane (the emulator, a sidecar)',
      'http://127.0.0.1:8080',
      'https://10.0.0.1:6443',
      true,
      [],
    ],
    [
      'an http control plane elsewhere',
      'http://cp.example.test',
      'https://10.0.0.1:6443',
      true,
      ['control-plane http'],
    ],
    [
      'an unverified API server',
      'https://cp.example.test',
      'https://10.0.0.1:6443',
      false,
      ['kube-api skip-tls-verify'],
    ],
    ['an http API server', 'https://cp.example.test', 'http://10.0.0.1:8080', false, ['kube-api http']],
  ])('%s', (_what, controlPlaneUrl, kubeServer, kubeVerifiesTls, expected) => {
    expect(
      transportWeaknesses({ controlPlaneUrl, kubeServer, kubeVerifiesTls }).map(
        (w) => `${w.target} ${w.reason}`,
      ),
    ).toEqual(expected);
  });
});
