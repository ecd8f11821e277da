// Secret values masked in text that leaves the cluster, in the forms a server prints them.
import { describe, expect, it } from 'vitest';
import { SECRET_MARK, secretMask } from '../../../src/report/secretMask.ts';

describe('secretMask', () => {
  const value = 'hunter2-Secret/+x';
  const mask = secretMask([value, 'postgresql://app:p%40ss-w0rd@db.ns:5432/app', 'ab']);

  it('masks the value, its URL encoding and a URI’s password raw and decoded', () => {
    expect(mask(`v=${value}`)).toBe(`v=${SECRET_MARK}`);
    expect(mask(`v=${encodeURIComponent(value)}`)).toBe(`v=${SECRET_MARK}`);
    expect(mask('uri postgresql://app:p%40ss-w0rd@db.ns:5432/app')).toBe(`uri ${SECRET_MARK}`);
    expect(mask('connecting as app with p@ss-w0rd')).toBe(`connecting as app with ${SECRET_MARK}`);
    expect(mask('postgresql://app:p%40ss-w0rd@other:1/x')).not.toContain('w0rd');
  });

  it('masks the value inside base64 at every alignment, standard and URL-safe', () => {
    for (const prefix of ['', 'a', 'ab', 'abc']) {
      const encoded = Buffer.from(`${prefix}${value}trailer`).toString('base64');
      const masked = mask(`Authorization: Basic ${encoded}`);
      expect(masked).toContain(SECRET_MARK);
      // What is left of the encoding decodes to no more than a few bytes of the value.
      for (const part of masked.replace('Authorization: Basic ', '').split(SECRET_MARK))
        expect(Buffer.from(part, 'base64').toString('latin1')).not.toContain(value.slice(0, 6));
      const urlSafe = Buffer.from(`${prefix}${value}`).toString('base64url');
      expect(mask(urlSafe)).toContain(SECRET_MARK);
    }
  });

  it('masks each line of a multi-line value, and leaves a value too short to be one', () => {
    const pem = secretMask(['-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX\n-----END KEY-----']);
    expect(pem('MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX')).toBe(SECRET_MARK);
    expect(mask('ab cd')).toBe('ab cd');
  });
});
