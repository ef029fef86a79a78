/**
 * GET git/archive: a ref's tree as `git archive --format=tar.gz|zip [--prefix=<prefix>] <ref>`
 * writes it (src/git/tar.ts, src/git/zip.ts): the entries of archive.c write_archive_entries() in
 * tree order, depth first, each directory written just before the first file below it, files with
 * their modes (the executable bit) and symlinks as links. Submodules are left out (git writes an
 * empty directory for one; the contract says skip them). The archive time is the commit's
 * committer time; a working tree has no commit, so, as for `git archive <tree>`, it is the time of
 * the request and there is no commit id in the archive.
 *
 * The archive is produced as it is read: trees a batch of siblings per directory level and files a
 * batch at a time (diff/batchedReads.ts; their sizes from the trees' annexes where recorded) are
 * held, never the tree whole (a zip keeps its central
 * directory, some 60 bytes per entry, for the end), with a turn of the event loop between slices
 * of work.
 */
import { Readable } from 'node:stream';
import { TreehouseError } from '../errors.js';
import { oidToHex, type Oid } from '../git/oid.js';
import { pathProblem } from '../git/path.js';
import { tarEntry, tarGlobalHeader, tarTrailer } from '../git/tar.js';
import { MODE_GITLINK, MODE_TREE } from '../git/tree.js';
import { ZipWriter } from '../git/zip.js';
import type { StoredObject } from '../store/types.js';
import { BLOB_BATCH_MAX, batchEnds, nextWalked, walkTreeChunks, type WalkedEntry } from './diff/batchedReads.js';
import { parallelGzip } from './parallelGzip.js';
import { bodyOf, commitInfo, inReadTx, resolveRef, type Repo } from './repo.js';
import { projectReads, Slicer } from './slices.js';

export type ArchiveFormat = 'zip' | 'tar.gz' | 'tar';

/** The directory mode git gives the entry for a prefix ending in "/". */
const PREFIX_DIRECTORY_MODE = 0o040777;
const DIRECTORY_MODE = 0o040000;

export interface ArchiveEntry {
  path: Buffer;
  mode: number;
  oid: Oid;
  content: Buffer;
}

export interface Archive {
  commit: string | null;
  stream: Readable;
}

/**
 * Resolves the ref and checks the prefix now (so those errors are answers), and returns the archive
 * as a stream to be read. `prefix` is prepended literally; it must be a project path, optionally
 * ending in "/", so no entry can climb out of where the archive is unpacked.
 */
export async function openArchive(repo: Repo, input: { ref: string; format: ArchiveFormat; prefix?: string }): Promise<Archive> {
  const prefix = input.prefix ?? '';
  if (prefix !== '') {
    const problem = pathProblem(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
    if (problem) throw new TreehouseError('invalid_request', `Invalid prefix: ${problem}.`, { issues: [{ path: 'prefix', message: problem }] });
  }
  const { tree, commit, mtime } = await inReadTx(repo, async (tx) => {
    const ref = await resolveRef(tx, input.ref);
    if (ref.kind === 'worktree') return { tree: ref.tree, commit: null, mtime: Math.floor(Date.now() / 1000) };
    return { tree: ref.tree, commit: ref.commit, mtime: (await commitInfo(tx, ref.commit))!.commitTime };
  });
  const commitHex = commit ? oidToHex(commit) : null;
  const entries = archiveEntries(repo, tree, Buffer.from(prefix, 'utf8'));
  const chunks = input.format === 'zip' ? zipChunks(entries, mtime, commitHex) : tarChunks(entries, mtime, commitHex);
  // git archive's internal gzip: zlib level 6, no file name, time 0, "Unix"; compressed on the
  // threadpool a block at a time, several at once (parallelGzip.ts).
  const bytes = coalesce(chunks);
  return { commit: commitHex, stream: Readable.from(input.format === 'tar.gz' ? parallelGzip(bytes) : bytes, { objectMode: false }) };
}

/** Output is handed on in pieces of at least this size: a header-sized piece each costs a stream turn. */
const OUTPUT_CHUNK_BYTES = 64 * 1024;

async function* coalesce(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of chunks) {
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes >= OUTPUT_CHUNK_BYTES) {
      yield Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending, pendingBytes);
}

async function* tarChunks(entries: AsyncIterable<ArchiveEntry>, mtime: number, commitHex: string | null): AsyncGenerator<Buffer> {
  let written = 0;
  const global = tarGlobalHeader(commitHex, mtime);
  if (global.length > 0) {
    written += global.length;
    yield global;
  }
  for await (const entry of entries) {
    for (const part of tarEntry(entry, mtime)) {
      written += part.length;
      yield part;
    }
  }
  yield tarTrailer(written);
}

async function* zipChunks(entries: AsyncIterable<ArchiveEntry>, mtime: number, commitHex: string | null): AsyncGenerator<Buffer> {
  const zip = new ZipWriter(mtime, commitHex);
  for await (const entry of entries) yield Buffer.concat(zip.add(entry));
  yield zip.finish();
}

/**
 * write_archive_entries(): the prefix's own directory when it ends in "/", then the tree depth
 * first in stored (git) order; a directory is queued and written only once a file below it is.
 * Files are read a batch at a time: the entries up to the next BLOB_BATCH_MAX files, the sizes
 * their trees do not record in one read, then their blobs in reads bounded by count and bytes.
 */
async function* archiveEntries(repo: Repo, root: Oid, prefix: Buffer): AsyncGenerator<ArchiveEntry> {
  const slicer = new Slicer();
  if (prefix.length > 0 && prefix[prefix.length - 1] === 0x2f) yield { path: prefix, mode: PREFIX_DIRECTORY_MODE, oid: root, content: Buffer.alloc(0) };
  const reads = projectReads(repo);
  const walk = walkTreeChunks(reads, root, () => true);
  let chunk: WalkedEntry[] = [];
  let inChunk = 0;
  // The directories above the walk's position, outermost first, and whether each was written.
  const directories: Array<{ path: Buffer; oid: Oid; written: boolean }> = [];
  // What the walk failed on (a tree the store lacks), reported once the entries before it are written.
  let failure: { error: unknown } | undefined;
  while (!failure) {
    // The next entries, up to BLOB_BATCH_MAX files among them.
    const entries: WalkedEntry[] = [];
    const oids: Oid[] = [];
    const sizes: Array<number | undefined> = [];
    while (oids.length < BLOB_BATCH_MAX) {
      if (inChunk === chunk.length) {
        if (slicer.due) await slicer.pause();
        const next = await nextWalked(walk);
        if ('end' in next) {
          if (next.error) failure = { error: next.error.cause };
          break;
        }
        chunk = next.entry;
        inChunk = 0;
      }
      const walked = chunk[inChunk++];
      if (walked.entry.mode === MODE_GITLINK) continue;
      entries.push(walked);
      if (walked.entry.mode !== MODE_TREE) {
        oids.push(walked.entry.oid);
        sizes.push(walked.size);
      }
    }
    if (entries.length === 0) break;
    // The sizes the trees do not record, in one read; they only bound how much one read holds.
    const unsized = sizes.flatMap((size, i) => (size === undefined ? [i] : []));
    if (unsized.length > 0) {
      const read = await reads.objectSizes(unsized.map((i) => oids[i]));
      unsized.forEach((i, k) => (sizes[i] = read[k]));
    }
    const ends = batchEnds(sizes);
    let objects: Array<StoredObject | undefined> = [];
    let file = 0;
    let batchStart = 0;
    for (const { path, entry, depth } of entries) {
      const name = Buffer.concat([prefix, Buffer.from(path, 'utf8')]);
      directories.length = depth;
      if (entry.mode === MODE_TREE) {
        directories.push({ path: Buffer.concat([name, Buffer.from('/')]), oid: entry.oid, written: false });
        continue;
      }
      if (file === batchStart + objects.length) {
        batchStart = file;
        objects = await reads.getObjects(oids.slice(file, ends.find((end) => end > file)));
      }
      const object = objects[file++ - batchStart];
      // The queued directories above this file come first, outermost first.
      for (const above of directories) {
        if (above.written) continue;
        above.written = true;
        yield { path: above.path, mode: DIRECTORY_MODE, oid: above.oid, content: Buffer.alloc(0) };
      }
      // A blob the store lacks is reported here, after every entry before it.
      const content = bodyOf(object, 'blob', entry.oid);
      yield { path: name, mode: parseInt(entry.mode, 8), oid: Buffer.from(entry.oid), content };
      if (slicer.due) await slicer.pause();
    }
  }
  if (failure) throw failure.error;
}
