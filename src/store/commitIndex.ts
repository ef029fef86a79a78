/**
 * The commit index entry: what log, merge-base and pack negotiation need from a commit, in a fixed
 * binary layout so a walk reads it without inflating or parsing the commit object.
 * Layout: tree id (20) | generation u32 BE | committer time f64 BE | parent count u32 BE | parent ids.
 */
import { decodeCommit } from '../git/commit.js';
import type { Oid } from '../git/oid.js';
import { OID_BYTES } from '../git/oid.js';
import type { CommitInfo } from './types.js';

const FIXED_BYTES = OID_BYTES + 4 + 8 + 4;

export function encodeCommitInfo(info: CommitInfo): Buffer {
  const out = Buffer.allocUnsafe(FIXED_BYTES + info.parents.length * OID_BYTES);
  info.tree.copy(out, 0);
  out.writeUInt32BE(info.generation, OID_BYTES);
  out.writeDoubleBE(info.commitTime, OID_BYTES + 4);
  out.writeUInt32BE(info.parents.length, OID_BYTES + 12);
  info.parents.forEach((parent, index) => parent.copy(out, FIXED_BYTES + index * OID_BYTES));
  return out;
}

/** Copies out of `bytes`, which may be a buffer lmdb reuses on the next read. */
export function decodeCommitInfo(bytes: Uint8Array): CommitInfo {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parentCount = view.readUInt32BE(OID_BYTES + 12);
  const parents: Oid[] = [];
  for (let i = 0; i < parentCount; i++) {
    parents.push(Buffer.from(view.subarray(FIXED_BYTES + i * OID_BYTES, FIXED_BYTES + (i + 1) * OID_BYTES)));
  }
  return {
    tree: Buffer.from(view.subarray(0, OID_BYTES)),
    generation: view.readUInt32BE(OID_BYTES),
    commitTime: view.readDoubleBE(OID_BYTES + 4),
    parents,
  };
}

export function commitInfoFromBody(body: Buffer): Omit<CommitInfo, 'generation'> {
  const commit = decodeCommit(body);
  return { tree: commit.tree, parents: commit.parents, commitTime: commit.committer.timestamp };
}
