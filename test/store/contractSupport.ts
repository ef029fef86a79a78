/** What the synchronous and asynchronous store contract suites (contract.ts, asyncContract.ts) share. */
import { expect } from 'vitest';
import { encodeCommit, type Signature } from '../../src/git/commit.js';
import { oidToHex, type Oid } from '../../src/git/oid.js';

export const EMPTY_BLOB_HEX = 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391';
export const EMPTY_TREE_HEX = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
/** `printf 'hello\n' | git hash-object --stdin` */
export const HELLO_BLOB_HEX = 'ce013625030ba8dba906f756967f9e9ca394464a';

/** Project numbers from `first` on, one per call, so a suite's tests never see each other's data. */
export function projectNumbers(first: number): () => number {
  let next = first;
  return () => next++;
}

export function signature(timestamp: number): Signature {
  return { name: 'Contract', email: 'contract@example.com', timestamp, timezone: '+0000' };
}

export function commitBody(tree: Oid, parents: Oid[], timestamp: number, message = 'm\n'): Buffer {
  return encodeCommit({ tree, parents, author: signature(timestamp), committer: signature(timestamp), extraHeaders: [], message });
}

export function hexes(oids: Oid[]): string[] {
  return oids.map(oidToHex);
}

/** An error thrown on purpose inside a write transaction, to check that it rolls back. */
export class Boom extends Error {}

export async function expectBoom(promise: Promise<unknown>): Promise<void> {
  await expect(promise).rejects.toBeInstanceOf(Boom);
}
