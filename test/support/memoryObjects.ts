/**
 * Test support for merges: a Map-backed object set (blobs, trees, commits) with the merge engine's
 * MergeObjects and CommitGraph methods, read synchronously (test/repo/merge/asyncObjects.ts gives
 * the engine its asynchronous view of them), plus the two bulk bridges to a real git repository
 * that keep differential tests fast: one `git fast-import` writes many commits, one
 * `git cat-file --batch-all-objects --batch` reads every object back.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeCommit } from '../../src/git/commit.js';
import { EMPTY_TREE_OID, hashObject, oidFromHex, oidToHex, type ObjectType, type Oid } from '../../src/git/oid.js';
import { decodeTree, encodeTree, type TreeEntry } from '../../src/git/tree.js';
import { gitBytes } from './git.js';

interface StoredObject {
  type: ObjectType;
  body: Buffer;
}

export class MemoryObjects {
  readonly objects = new Map<string, StoredObject>();
  private readonly generations = new Map<string, number>();

  put(type: ObjectType, body: Buffer): Oid {
    const oid = hashObject(type, body);
    const hex = oidToHex(oid);
    if (!this.objects.has(hex)) this.objects.set(hex, { type, body });
    return oid;
  }

  get(oid: Oid, type: ObjectType): Buffer {
    const stored = this.objects.get(oidToHex(oid));
    if (!stored) throw new Error(`missing object ${oidToHex(oid)}`);
    if (stored.type !== type) throw new Error(`object ${oidToHex(oid)} is a ${stored.type}, not a ${type}`);
    return stored.body;
  }

  readTree(oid: Oid): TreeEntry[] {
    if (oid.equals(EMPTY_TREE_OID)) return [];
    return decodeTree(this.get(oid, 'tree'));
  }

  readBlob(oid: Oid): Buffer {
    return this.get(oid, 'blob');
  }

  writeBlob(body: Buffer): Oid {
    return this.put('blob', body);
  }

  writeTree(entries: TreeEntry[]): Oid {
    return this.put('tree', encodeTree(entries));
  }

  putEncodedTree(oid: Oid, body: Buffer): void {
    if (!this.put('tree', body).equals(oid)) throw new Error(`tree ${oidToHex(oid)} does not hash to its id`);
  }

  parents(oid: Oid): Oid[] {
    return decodeCommit(this.get(oid, 'commit')).parents;
  }

  commitTime(oid: Oid): number {
    return decodeCommit(this.get(oid, 'commit')).committer.timestamp;
  }

  tree(oid: Oid): Oid {
    return decodeCommit(this.get(oid, 'commit')).tree;
  }

  /** Topological level: 1 for a root, else 1 + the largest level of the parents. */
  generation(oid: Oid): number {
    const hex = oidToHex(oid);
    const known = this.generations.get(hex);
    if (known !== undefined) return known;
    // Iterative post-order so long histories do not exhaust the stack.
    const stack: Oid[] = [oid];
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const topHex = oidToHex(top);
      if (this.generations.has(topHex)) {
        stack.pop();
        continue;
      }
      const pending = this.parents(top).filter((parent) => !this.generations.has(oidToHex(parent)));
      if (pending.length > 0) {
        stack.push(...pending);
        continue;
      }
      const level = 1 + Math.max(0, ...this.parents(top).map((parent) => this.generations.get(oidToHex(parent))!));
      this.generations.set(topHex, level);
      stack.pop();
    }
    return this.generations.get(hex)!;
  }

  /** Reads every object of a repository with one `git cat-file --batch-all-objects --batch`. */
  static fromRepository(repoPath: string): MemoryObjects {
    const out = gitBytes(['cat-file', '--batch-all-objects', '--batch'], { cwd: repoPath });
    const store = new MemoryObjects();
    let offset = 0;
    while (offset < out.length) {
      const headerEnd = out.indexOf(0x0a, offset);
      const [hex, type, size] = out.toString('latin1', offset, headerEnd).split(' ');
      const bodyStart = headerEnd + 1;
      const bodyEnd = bodyStart + Number(size);
      store.objects.set(hex, { type: type as ObjectType, body: Buffer.from(out.subarray(bodyStart, bodyEnd)) });
      offset = bodyEnd + 1; // the body is followed by a newline
    }
    return store;
  }
}

/** A file of a commit to import: content and mode. */
export interface ImportFile {
  mode: '100644' | '100755' | '120000';
  content: Buffer;
}

/** A commit to import: its complete tree as path → file, and its parents (indexes of earlier commits). */
export interface ImportCommit {
  files: ReadonlyMap<string, ImportFile>;
  parents: readonly number[];
  /** Committer and author time, seconds since the epoch. */
  time: number;
  message?: string;
}

/**
 * Writes commits with one `git fast-import` process and returns their ids, in input order.
 * Each commit's tree is given whole (deleteall, then every file), so trees equal the input.
 */
export function importCommits(repoPath: string, commits: readonly ImportCommit[]): Oid[] {
  const chunks: Buffer[] = [];
  const text = (value: string) => chunks.push(Buffer.from(value, 'utf8'));
  const blobMarks = new Map<string, number>();
  let nextMark = 1;
  const blobMark = (content: Buffer): number => {
    const key = content.toString('latin1');
    const known = blobMarks.get(key);
    if (known !== undefined) return known;
    const mark = nextMark++;
    blobMarks.set(key, mark);
    text(`blob\nmark :${mark}\ndata ${content.length}\n`);
    chunks.push(content);
    text('\n');
    return mark;
  };
  const commitMarks: number[] = [];
  for (const commit of commits) {
    const fileLines: string[] = [];
    for (const [path, file] of commit.files) fileLines.push(`M ${file.mode} :${blobMark(file.content)} ${path}\n`);
    const mark = nextMark++;
    commitMarks.push(mark);
    const message = Buffer.from(commit.message ?? 'commit\n', 'utf8');
    text('reset refs/heads/import\n');
    text(`commit refs/heads/import\nmark :${mark}\n`);
    text(`author Test <test@example.com> ${commit.time} +0000\n`);
    text(`committer Test <test@example.com> ${commit.time} +0000\n`);
    text(`data ${message.length}\n`);
    chunks.push(message);
    text('\n');
    commit.parents.forEach((parent, index) => text(`${index === 0 ? 'from' : 'merge'} :${commitMarks[parent]}\n`));
    text('deleteall\n');
    fileLines.forEach((line) => text(line));
    text('\n');
  }
  const marksFile = join(repoPath, 'import-marks');
  execFileSync('git', ['fast-import', '--quiet', `--export-marks=${marksFile}`], {
    cwd: repoPath,
    input: Buffer.concat(chunks),
    maxBuffer: 1 << 30,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const marks = new Map<number, string>();
  for (const line of readFileSync(marksFile, 'utf8').split('\n')) {
    if (!line) continue;
    const [mark, hex] = line.split(' ');
    marks.set(Number(mark.slice(1)), hex);
  }
  return commitMarks.map((mark) => oidFromHex(marks.get(mark)!));
}

/** One of git's conflict or info messages: the paths it concerns, its type ("CONFLICT (contents)"), its text. */
export interface GitMergeMessage {
  paths: string[];
  type: string;
  text: string;
}

/** What `git merge-tree --write-tree --name-only --messages` said about one merge; `failed` if git gave up. */
export type GitMergeOutcome =
  | { failed: false; clean: boolean; tree: string; conflictedPaths: string[]; messages: GitMergeMessage[] }
  | { failed: true; error: string };

/**
 * Runs many merges with `git merge-tree --write-tree --stdin -z --name-only --messages`. Per
 * merge git 2.39 prints "<clean>\0<tree>\0<path>\0...\0", then the messages as
 * "<n>\0<path>\0...<type>\0<text>\n\0", then "\0" (builtin/merge-tree.c, merge-ort.c
 * merge_display_update_messages()). git can abort on a merge (an assertion in merge-ort),
 * taking the whole batch with it; then the batch is split until the merges git cannot do are
 * alone, and those are reported as failed.
 */
export function gitMergeTrees(repoPath: string, pairs: ReadonlyArray<readonly [Oid, Oid]>): GitMergeOutcome[] {
  try {
    return runMergeTreeBatch(repoPath, pairs);
  } catch (error) {
    if (pairs.length === 1) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString('utf8').trim();
      return [{ failed: true, error: stderr || String(error) }];
    }
    const half = Math.ceil(pairs.length / 2);
    return [...gitMergeTrees(repoPath, pairs.slice(0, half)), ...gitMergeTrees(repoPath, pairs.slice(half))];
  }
}

function runMergeTreeBatch(repoPath: string, pairs: ReadonlyArray<readonly [Oid, Oid]>): GitMergeOutcome[] {
  const input = pairs.map(([ours, theirs]) => `${oidToHex(ours)} ${oidToHex(theirs)}\n`).join('');
  const out = gitBytes(['merge-tree', '--write-tree', '--stdin', '-z', '--name-only', '--messages'], { cwd: repoPath, input });
  const fields = out.toString('utf8').split('\0');
  const outcomes: GitMergeOutcome[] = [];
  let index = 0;
  for (let i = 0; i < pairs.length; i++) {
    const clean = fields[index++] === '1';
    const tree = fields[index++];
    const conflictedPaths: string[] = [];
    while (fields[index] !== '') conflictedPaths.push(fields[index++]);
    index++; // the empty field before the messages
    const messages: GitMergeMessage[] = [];
    while (fields[index] !== '') {
      const count = Number(fields[index++]);
      const paths = fields.slice(index, index + count);
      index += count;
      const type = fields[index++];
      const text = fields[index++].replace(/\n$/, '');
      messages.push({ paths, type, text });
    }
    index++; // the empty field that ends this merge
    outcomes.push({ failed: false, clean, tree, conflictedPaths, messages });
  }
  return outcomes;
}
