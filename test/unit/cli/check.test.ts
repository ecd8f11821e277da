import { describe, expect, it } from 'vitest';
import { CheckReport, formatChecklist, runCheckCommand } from '../../../src/cli/check.ts';
import { textSink } from '../../support/textSink.ts';

describe('check output', () => {
  it('prints ✓ lines plainly and a ✗ line with its reason and fix', () => {
    const text = formatChecklist({
      ok: false,
      version: '0.0.0',
      checks: [
        { id: 'config', ok: true, title: 'configuration loads' },
        {
          id: 'access/a/secrets',
          ok: false,
          title: 'may not delete secrets in a',
          reason: 'denied',
          fix: 'grant it',
        },
      ],
    });
    expect(text).toBe(
      [
        '✓ configuration loads',
        '✗ may not delete secrets in a',
        '    reason: denied',
        '    fix:    grant it',
        '1 of 2 checks failed',
        '',
      ].join('\n'),
    );
  });

  it('an invalid configuration is one ✗ line naming the field, exit 1, without the API key', async () => {
    const out = textSink();
    const previous = process.env.K8S_LISTENER_API_KEY;
    process.env.K8S_LISTENER_API_KEY = 'super-secret-key-value';
    try {
      const code = await runCheckCommand(
        ['--listener-id', 'not-a-uuid', '--control-plane', 'http://127.0.0.1:1'],
        { stdout: out.stream },
      );
      expect(code).toBe(1);
    } finally {
      if (previous === undefined) delete process.env.K8S_LISTENER_API_KEY;
      else process.env.K8S_LISTENER_API_KEY = previous;
    }
    const lines = out.text().trim().split('\n');
    expect(lines[0]).toBe('✗ configuration does not load');
    expect(lines[1]).toMatch(/^ {4}reason: .*listenerId/);
    expect(lines.at(-1)).toBe('1 of 1 checks failed');
    expect(out.text()).not.toContain('super-secret-key-value');
  });

  it('--output json gives the same checks as data', async () => {
    const out = textSink();
    const code = await runCheckCommand(['--listener-id', 'nope', '--output', 'json'], { stdout: out.stream });
    expect(code).toBe(1);
    const report = CheckReport.parse(JSON.parse(out.text()));
    expect(report.ok).toBe(false);
    expect(report.checks.map((c) => [c.id, c.ok])).toEqual([['config', false]]);
  });

  it.each([
    [['--output', 'yaml'], /--output must be text or json, not yaml/],
    [['--no-such-flag'], /Unknown option '--no-such-flag'/],
  ])('%j is a usage error: exit 2, the reason and the usage on stderr', async (argv, reason) => {
    const out = textSink();
    const err = textSink();
    expect(await runCheckCommand(argv, { stdout: out.stream, stderr: err.stream })).toBe(2);
    expect(out.text()).toBe('');
    expect(err.text()).toMatch(reason);
    expect(err.text()).toContain('Usage: k8s-listener check');
  });
});
