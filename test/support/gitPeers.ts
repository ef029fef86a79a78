/**
 * The two servers a differential git test runs each operation against (Treehouse and `git
 * http-backend` serving the same history), and the protocol versions it runs them over.
 */
export type PeerName = 'treehouse' | 'git';
export const PEERS: PeerName[] = ['treehouse', 'git'];
export const PROTOCOLS = ['0', '2'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** git's arguments with `protocol.version` set. */
export const withProtocol = (protocol: Protocol, args: string[]): string[] => ['-c', `protocol.version=${protocol}`, ...args];
