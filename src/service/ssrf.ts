/**
 * Which git remotes the server may talk to (../shared/API.md, "Projects": git seeds and linked
 * repositories). A remote is an http(s) URL; its host is resolved once, every address it resolves to
 * must be public, and the connection then goes to the address that was checked, so a second DNS
 * answer (DNS rebinding) cannot point the request elsewhere.
 *
 * Refused address ranges, unless the server runs with TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS=1:
 * - IPv4: 0.0.0.0/8 (unspecified, "this network"), 10/8, 100.64/10 (carrier-grade NAT), 127/8,
 *   169.254/16 (link-local), 172.16/12, 192.0.0/24, 192.168/16, 198.18/15 (benchmarking),
 *   224/4 (multicast) and 240/4 (reserved, broadcast).
 * - IPv6: ::/128, ::1/128, fc00::/7, fe80::/10, fec0::/10 (site-local), ff00::/8 (multicast), and
 *   every form that embeds an IPv4 address (::ffff:0:0/96 mapped, ::/96 compatible, 64:ff9b::/96
 *   NAT64, 2002::/16 6to4), which are judged by the IPv4 address they carry.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** `invalid`: not a URL we take; `unresolvable`: DNS gave no answer; `refused`: a forbidden address. */
export class RemoteUrlError extends Error {
  override name = 'RemoteUrlError';
  constructor(
    message: string,
    readonly reason: 'invalid' | 'unresolvable' | 'refused' = 'invalid',
  ) {
    super(message);
  }
}

/** A remote URL taken apart: where to connect and what to send, credentials kept apart. */
export interface ParsedRemoteUrl {
  /** The URL without credentials, query or fragment, and without a trailing slash. */
  url: string;
  /** Credentials that were written into the URL (user:password@), decoded. */
  username: string | null;
  password: string | null;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

const URL_LENGTH_MAX = 2000;

/** Parses a remote URL: http(s) only, no query or fragment; userinfo is returned apart and removed. */
export function parseRemoteUrl(raw: string): ParsedRemoteUrl {
  if (raw.length > URL_LENGTH_MAX) throw new RemoteUrlError(`The URL is longer than ${URL_LENGTH_MAX} characters.`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RemoteUrlError('The URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RemoteUrlError(`Only http and https URLs are supported, not ${url.protocol.replace(/:$/, '')}.`);
  }
  if (url.hostname === '') throw new RemoteUrlError('The URL has no host.');
  if (url.search !== '' || url.hash !== '') throw new RemoteUrlError('The URL must not have a query or a fragment.');
  const username = url.username === '' ? null : decodeUserinfo(url.username);
  const password = url.password === '' ? null : decodeUserinfo(url.password);
  url.username = '';
  url.password = '';
  return { url: url.href.replace(/\/+$/, ''), username, password };
}

function decodeUserinfo(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new RemoteUrlError('The credentials in the URL are not validly percent-encoded.');
  }
}

/**
 * The addresses to connect to for `hostname` (as URL.hostname gives it: IPv6 in brackets), in the
 * resolver's order. Throws RemoteUrlError when the host does not resolve or any address is refused.
 */
export async function resolveRemoteHost(hostname: string, allowPrivate: boolean): Promise<ResolvedAddress[]> {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  let addresses: ResolvedAddress[];
  const literal = isIP(host);
  if (literal !== 0) {
    addresses = [{ address: host, family: literal as 4 | 6 }];
  } else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((found) => ({ address: found.address, family: found.family as 4 | 6 }));
    } catch (error) {
      throw new RemoteUrlError(`The host ${host} could not be resolved (${(error as { code?: string }).code ?? 'lookup failed'}).`, 'unresolvable');
    }
  }
  if (addresses.length === 0) throw new RemoteUrlError(`The host ${host} has no addresses.`, 'unresolvable');
  if (!allowPrivate) {
    const refused = addresses.find((found) => isRefusedAddress(found.address));
    if (refused) {
      throw new RemoteUrlError(`The host ${host} resolves to a private, loopback or link-local address (${refused.address}), which is not allowed.`,
        'refused',
      );
    }
  }
  return addresses;
}

/** IPv4 ranges refused, as [network address, prefix length]. */
const REFUSED_IPV4: Array<[string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const IPV4_BYTES = 4;
const IPV6_BYTES = 16;
const IPV6_GROUPS = 8;

const refusedIpv4 = REFUSED_IPV4.map(([base, bits]) => ({ base: ipv4ToNumber(base), bits }));

/** True for any address the server refuses to connect to (see the module comment). */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return isRefusedIpv4(ipv4ToNumber(address));
  if (family === 6) return isRefusedIpv6(ipv6ToBytes(address));
  return true;
}

function isRefusedIpv4(value: number): boolean {
  return refusedIpv4.some(({ base, bits }) => (value >>> (32 - bits)) === (base >>> (32 - bits)));
}

function isRefusedIpv6(bytes: Uint8Array): boolean {
  const embedded = embeddedIpv4(bytes);
  if (embedded !== null) return isRefusedIpv4(embedded);
  if (bytes.every((byte, index) => byte === 0 || (index === IPV6_BYTES - 1 && byte === 1))) return true; // :: and ::1
  if ((bytes[0] & 0xfe) === 0xfc) return true; // fc00::/7 unique local
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) return true; // fe80::/10 link-local
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0xc0) return true; // fec0::/10 site-local
  if (bytes[0] === 0xff) return true; // ff00::/8 multicast
  return false;
}

/** The IPv4 address carried by a mapped, compatible, NAT64 or 6to4 IPv6 address, else null. */
function embeddedIpv4(bytes: Uint8Array): number | null {
  const tail = (at: number) => ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0;
  const zeros = (from: number, to: number) => bytes.subarray(from, to).every((byte) => byte === 0);
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return tail(12); // ::ffff:a.b.c.d
  if (zeros(0, 12) && !(zeros(12, 15) && bytes[15] <= 1)) return tail(12); // ::a.b.c.d (not :: or ::1)
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) return tail(12); // 64:ff9b::/96
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return tail(2); // 2002::/16
  return null;
}

function ipv4ToNumber(address: string): number {
  const parts = address.split('.').map(Number);
  if (parts.length !== IPV4_BYTES || parts.some((part) => !Number.isInteger(part) || part < 0 || part > 255)) {
    throw new RemoteUrlError(`not an IPv4 address: ${address}`);
  }
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

/** The 16 bytes of an IPv6 address in any textual form isIP accepts (zone ids are dropped). */
export function ipv6ToBytes(address: string): Uint8Array {
  let text = address.split('%')[0].toLowerCase();
  const groups: number[] = [];
  const dotted = text.lastIndexOf(':') >= 0 && text.includes('.') ? text.slice(text.lastIndexOf(':') + 1) : null;
  if (dotted !== null) {
    const value = ipv4ToNumber(dotted);
    text = `${text.slice(0, text.lastIndexOf(':') + 1)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [head, tail, extra] = text.split('::');
  if (extra !== undefined) throw new RemoteUrlError(`not an IPv6 address: ${address}`);
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const headGroups = parse(head);
  const tailGroups = tail === undefined ? [] : parse(tail);
  const missing = IPV6_GROUPS - headGroups.length - tailGroups.length;
  if ((tail === undefined && missing !== 0) || missing < 0) throw new RemoteUrlError(`not an IPv6 address: ${address}`);
  groups.push(...headGroups, ...new Array<number>(missing).fill(0), ...tailGroups);
  const bytes = new Uint8Array(IPV6_BYTES);
  groups.forEach((group, index) => {
    if (!Number.isInteger(group) || group < 0 || group > 0xffff) throw new RemoteUrlError(`not an IPv6 address: ${address}`);
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 0xff;
  });
  return bytes;
}
