import { describe, expect, it } from 'vitest';
import { endpointKey, parseTarget, parseTargetList } from '../shared/targets.ts';

describe('target parsing', () => {
  it('reads host:port and tcp:// as TCP targets, keeping the text as given', () => {
    expect(parseTarget('backend:6379')).toMatchObject({ kind: 'tcp', host: 'backend', port: 6379, url: 'backend:6379' });
    expect(parseTarget('tcp://10.0.0.1:80')).toMatchObject({ kind: 'tcp', host: '10.0.0.1', port: 80 });
    expect(parseTarget(' 127.0.0.1:9 ')).toMatchObject({ url: '127.0.0.1:9' });
  });

  it('reads http and https URLs as HTTP targets with default ports', () => {
    expect(parseTarget('http://frontend/status')).toMatchObject({ kind: 'http', host: 'frontend', port: 80, tls: false, href: 'http://frontend/status' });
    expect(parseTarget('https://x.example:8443/a?b=1')).toMatchObject({ kind: 'http', port: 8443, tls: true });
    expect(parseTarget('HTTP://Frontend:80/status')).toMatchObject({ kind: 'http', host: 'frontend', port: 80 });
  });

  it('accepts IPv6 literals in brackets', () => {
    expect(parseTarget('[::1]:80')).toMatchObject({ kind: 'tcp', host: '::1', port: 80 });
    expect(parseTarget('tcp://[::1]:81')).toMatchObject({ kind: 'tcp', host: '::1', port: 81 });
    expect(parseTarget('http://[::1]:9000/status')).toMatchObject({ kind: 'http', host: '::1', port: 9000 });
  });

  it.each([
    ['', /empty/],
    ['foo', /expected host:port/],
    ['foo:', /port "" is not a number/],
    ['foo:99999', /outside 1-65535/],
    ['foo:0', /outside 1-65535/],
    ['http://foo:0/status', /port 0 is outside 1-65535/],
    ['https://foo:00', /port 0 is outside 1-65535/],
    ['udp://foo:0', /outside 1-65535/],
    ['::1:80', /brackets/],
    ['ftp://x:21', /unsupported scheme/],
    ['tcp://x:80/path', /no path/],
    ['http://[::1', /not a valid URL/],
    ['http://user:pw@x/', /credentials/],
    ['a b:80', /not a valid name/],
  ])('rejects %j with a clear reason', (entry, reason) => {
    expect(() => parseTarget(entry)).toThrow(reason);
    if (entry) expect(() => parseTarget(entry)).toThrow(entry.trim());
  });

  it('parses lists and names every bad entry by position', () => {
    expect(parseTargetList('a:1,http://b/,[::1]:3').map((t) => t.kind)).toEqual(['tcp', 'http', 'tcp']);
    expect(() => parseTargetList('a:1,x,b')).toThrow(/entry 2 .*"x".*entry 3 .*"b"/);
    expect(() => parseTargetList('')).toThrow(/no targets/);
    expect(() => parseTargetList(' , ,')).toThrow(/no targets/);
  });

  it('skips empty entries, as star did (a trailing comma, two commas), keeping positions in errors', () => {
    expect(parseTargetList('a:80,').map((t) => t.url)).toEqual(['a:80']);
    expect(parseTargetList(',a:80,, b:81 ,').map((t) => t.url)).toEqual(['a:80', 'b:81']);
    expect(() => parseTargetList('a:80,,nope')).toThrow(/entry 3 bad target "nope"/);
  });

  it('matches endpoints by scheme, host and port, not by raw text', () => {
    expect(endpointKey('http://A:80/status')).toBe(endpointKey('http://a/other'));
    expect(endpointKey('http://a:81/')).not.toBe(endpointKey('http://a:80/'));
    expect(endpointKey('https://a/')).toBe('https://a:443');
    expect(endpointKey('[::1]:80')).toBe('tcp://[::1]:80');
    expect(endpointKey('nonsense')).toBeUndefined();
  });
});
