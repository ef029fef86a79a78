import { describe, expect, it } from 'vitest';
import { ipv6ToBytes, isRefusedAddress, parseRemoteUrl, RemoteUrlError, resolveRemoteHost } from '../../src/service/ssrf.js';

describe('isRefusedAddress', () => {
  it('refuses loopback, private, link-local, unspecified, reserved and IPv4-carrying IPv6 forms', () => {
    const refused = [
      '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1',
      '224.0.0.1', '255.255.255.255', '::', '::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'febf::1', 'ff02::1', '::ffff:127.0.0.1',
      '::ffff:7f00:1', '::ffff:10.0.0.1', '::127.0.0.1', '64:ff9b::a9fe:a9fe', '2002:c0a8:0101::1', 'fe80::1%eth0', 'not an address',
    ];
    for (const address of refused) expect(isRefusedAddress(address), address).toBe(true);
  });

  it('allows public addresses', () => {
    for (const address of ['8.8.8.8', '140.82.112.3', '172.32.0.1', '172.15.255.255', '192.169.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '2002:0808:0808::1', '2001:db8::1']) {
      expect(isRefusedAddress(address), address).toBe(false);
    }
  });

  it('reads every textual IPv6 form', () => {
    expect([...ipv6ToBytes('::1')]).toEqual([...new Array(15).fill(0), 1]);
    expect([...ipv6ToBytes('1:2:3:4:5:6:7:8')]).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
    expect([...ipv6ToBytes('::ffff:1.2.3.4')].slice(10)).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    expect(() => ipv6ToBytes('1::2::3')).toThrow(RemoteUrlError);
  });
});

describe('parseRemoteUrl', () => {
  it('takes http(s) URLs and moves credentials out of them', () => {
    expect(parseRemoteUrl('https://user:p%40ss@example.com/org/repo.git/')).toEqual({ url: 'https://example.com/org/repo.git', username: 'user', password: 'p@ss' });
    expect(parseRemoteUrl('http://example.com:8080/r')).toEqual({ url: 'http://example.com:8080/r', username: null, password: null });
  });

  it('refuses other schemes, queries, fragments and non-URLs', () => {
    for (const url of ['ftp://example.com/r', 'file:///etc/passwd', 'ssh://git@example.com/r', 'git@example.com:r.git', 'https://example.com/r?x=1', 'https://example.com/r#x', '']) {
      expect(() => parseRemoteUrl(url), url).toThrow(RemoteUrlError);
    }
  });
});

describe('resolveRemoteHost', () => {
  it('refuses names and literals that resolve to loopback unless private hosts are allowed', async () => {
    for (const host of ['localhost', '127.0.0.1', '[::1]']) {
      await expect(resolveRemoteHost(host, false)).rejects.toMatchObject({ reason: 'refused' });
      expect((await resolveRemoteHost(host, true)).map((found) => found.address)).toContainEqual(expect.stringMatching(/^(127\.0\.0\.1|::1)$/));
    }
    await expect(resolveRemoteHost('name.invalid', true)).rejects.toMatchObject({ reason: 'unresolvable' });
  });
});
