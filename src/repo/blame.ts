/**
 * GET git/blame/{path}: which commit last changed each line of a file, as `git blame --porcelain`
 * finds it (git's blame.c, without -M/-C line moves):
 *   - every line starts with the commit at `ref` and the file there (an "origin"); origins are
 *     taken newest commit first (assign_blame());
 *   - for each parent, the file there is the same path if the parent has a file of the same type
 *     at it (find_origin()), else the file git's rename detection pairs with it, looking at every
 *     file the commit deleted (find_rename(): exact, unique basename, similarity);
 *   - a parent with the very same blob takes every line at once; parents whose blob repeats an
 *     earlier parent's are skipped; otherwise each parent in turn takes the lines that the diff
 *     from its file (git blame's: the classic algorithm with the indent heuristic, no context)
 *     leaves unchanged, at their line numbers there (pass_blame_to_parent());
 *   - what no parent takes was changed by the commit itself.
 * A line's answer does not depend on the order origins are taken in, only on this rule; the order
 * matters for how often an origin is looked at, so it is git's.
 *
 * `worktree:<branch>` blames the working tree, as `git blame <path>` in a checkout does: lines not
 * committed yet belong to the all-zero commit, whose parent is the branch head.
 */
import { TreehouseError } from '../errors.js';
import { decodeCommit } from '../git/commit.js';
import { oidToHex, type Oid } from '../git/oid.js';
import { pathProblem } from '../git/path.js';
import { MODE_GITLINK, MODE_TREE, type TreeMode } from '../git/tree.js';
import type { ProjectReads } from '../store/asyncTypes.js';
import type { StoredObject } from '../store/types.js';
import { BLOB_BATCH_MAX, blobReads } from './diff/batchedReads.js';
import { trimCommonTail } from './diff/patch.js';
import { detectRenames } from './diff/renames.js';
import { treeChanges, type FileVersion } from './diff/treeChanges.js';
import { LineTable } from './diff/lineTable.js';
import { MaxHeap } from './maxHeap.js';
import { diffLineIds, LineClasses } from './merge/lineDiff.js';
import { PathFilter } from './pathFilter.js';
import { bodyOf, inReadTx, resolveRef, type Repo } from './repo.js';
import { projectReads, Slicer } from './slices.js';
import { messageForClient } from './signature.js';
import { TreeLookup } from './treeLookup.js';

/** The commit id git gives lines that are not committed yet. */
export const UNCOMMITTED_OID = '0000000000000000000000000000000000000000';

export interface BlameLine {
  /** 1-based line of the file at `ref`. */
  line: number;
  oid: string;
  /** 1-based line in the file as that commit has it. */
  original_line: number;
  original_path: string;
}

export interface BlameCommit {
  message: string;
  author: { name: string; email: string };
  committed_at: string;
}

export interface BlameResult {
  path: string;
  ref: string;
  lines: BlameLine[];
  commits: Record<string, BlameCommit>;
}

/** A commit as blame walks it; the working tree is a commit without id whose parent is its head. */
interface BlameCommitNode {
  key: string;
  oid: Oid | null;
  tree: Oid;
  parents: Oid[];
  time: number;
}

/**
 * Lines still suspected on an origin, as git's blame_entry: `count` lines from index `final` of the
 * final file, from line `line` (0-based) of the origin's file.
 */
interface Suspect {
  final: number;
  line: number;
  count: number;
}

/** A file in a commit that lines are suspected to come from (git's blame_origin). */
interface Origin {
  commit: BlameCommitNode;
  path: string;
  blob: Oid;
  mode: TreeMode;
  /** Lines still suspected here. */
  suspects: Suspect[];
  queued: boolean;
}

const S_IFMT = 0o170000;
/** Blobs kept between steps (a merge's parents and the next commits' files). */
const RECENT_BLOBS_MAX = 8;
const typeOf = (mode: TreeMode) => parseInt(mode, 8) & S_IFMT;

export async function blame(repo: Repo, input: { path: string; ref: string }): Promise<BlameResult> {
  const problem = pathProblem(input.path);
  if (problem) throw new TreehouseError('invalid_request', `Invalid path: ${problem}.`, { issues: [{ path: 'path', message: problem }] });
  const walk = new BlameWalk(repo, input.path);
  const start = await inReadTx(repo, (tx) => walk.start(tx, input.ref));
  const slicer = new Slicer();
  while (await walk.step()) await slicer.pause();
  const result = await walk.result(start);
  return { path: input.path, ref: input.ref, ...result };
}

class BlameWalk {
  private readonly trees = new TreeLookup();
  private readonly commits = new Map<string, BlameCommitNode>();
  private readonly origins = new Map<string, Origin>();
  // Origins by commit time, first arrival first among equals (git's prio_queue).
  private readonly queue = new MaxHeap<Origin>((a, b) => (a.commit.time !== b.commit.time ? a.commit.time - b.commit.time : this.order.get(b)! - this.order.get(a)!));
  private arrivals = 0;
  private readonly order = new Map<Origin, number>();
  /** Per final line: the origin it was pinned on and its line there. */
  private blamed: Array<{ origin: Origin; line: number }> = [];
  private readonly blobs;
  /** The walk pauses between steps, so each of its reads is a read of its own. */
  private readonly reads: ProjectReads;

  constructor(
    private readonly repo: Repo,
    private readonly path: string,
  ) {
    this.blobs = blobReads(repo);
    this.reads = projectReads(repo);
  }

  /** Resolves the ref and puts every line of the file on its first origin; returns the line count. */
  async start(tx: ProjectReads, ref: string): Promise<number> {
    const resolved = await resolveRef(tx, ref);
    const node: BlameCommitNode =
      resolved.kind === 'commit'
        ? (await this.commitNodes(tx, [resolved.commit]))[0]!
        : { key: UNCOMMITTED_OID, oid: null, tree: resolved.tree, parents: [resolved.commit], time: Number.POSITIVE_INFINITY };
    this.commits.set(node.key, node);
    const entry = await this.trees.entryAt(tx, node.tree, this.path.split('/'));
    if (!entry || entry.mode === MODE_TREE || entry.mode === MODE_GITLINK) {
      throw new TreehouseError('not_found', `File ${JSON.stringify(this.path)} not found at ${JSON.stringify(ref)}.`);
    }
    const origin = this.origin(node, this.path, entry.oid, entry.mode);
    const [table] = await this.lineTables([entry.oid]);
    const lines = table.lineCount;
    origin.suspects = lines > 0 ? [{ final: 0, line: 0, count: lines }] : [];
    this.blamed = new Array(lines);
    this.enqueue(origin);
    return lines;
  }

  /** Takes the newest origin with suspects and passes blame on; false when none is left. */
  async step(): Promise<boolean> {
    const origin = this.dequeue();
    if (!origin) return false;
    await this.passBlame(origin);
    for (const suspect of origin.suspects) {
      for (let k = 0; k < suspect.count; k++) this.blamed[suspect.final + k] = { origin, line: suspect.line + k };
    }
    origin.suspects = [];
    return true;
  }

  /** The lines' answers, and the commits they name, read a batch at a time. */
  async result(lineCount: number): Promise<{ lines: BlameLine[]; commits: Record<string, BlameCommit> }> {
    const named = new Map<string, Oid>();
    for (let i = 0; i < lineCount; i++) {
      const { key, oid } = this.blamed[i].origin.commit;
      if (oid && !named.has(key)) named.set(key, oid);
    }
    const oids = [...named.values()];
    const objects = new Map<string, StoredObject | undefined>();
    for (let start = 0; start < oids.length; start += BLOB_BATCH_MAX) {
      const batch = oids.slice(start, start + BLOB_BATCH_MAX);
      const found = await this.reads.getObjects(batch);
      batch.forEach((oid, i) => objects.set(oidToHex(oid), found[i]));
    }
    const commits: Record<string, BlameCommit> = {};
    const lines: BlameLine[] = [];
    for (let i = 0; i < lineCount; i++) {
      const { origin, line } = this.blamed[i];
      const oid = origin.commit.key;
      lines.push({ line: i + 1, oid, original_line: line + 1, original_path: origin.path });
      if (!commits[oid]) commits[oid] = origin.commit.oid ? describeCommit(origin.commit.oid, objects.get(oid)) : uncommitted();
    }
    return { lines, commits };
  }

  // -------------------------------------------------------------------------------------------

  /** pass_blame(): find the file in each parent, then let the parents take the lines they had. */
  private async passBlame(origin: Origin): Promise<void> {
    const parents = await this.commitNodes(this.reads, origin.commit.parents);
    const found: Array<Origin | null> = parents.map(() => null);
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < parents.length; i++) {
        const parent = parents[i];
        if (found[i] || !parent) continue;
        const candidate = pass === 0 ? await this.findOrigin(parent, origin) : await this.findRename(parent, origin);
        if (!candidate) continue;
        if (candidate.blob.equals(origin.blob)) {
          // The same blob: the parent takes every line as it is.
          this.moveSuspects(candidate, origin.suspects);
          origin.suspects = [];
          return;
        }
        // A parent with the same blob as an earlier one adds nothing.
        if (!found.some((other) => other && other.blob.equals(candidate.blob))) found[i] = candidate;
      }
    }
    for (const parent of found) {
      if (!parent) continue;
      await this.passToParent(origin, parent);
      if (origin.suspects.length === 0) return;
    }
  }

  /** find_origin(): the same path in the parent, if it holds a file of the same type. */
  private async findOrigin(parent: BlameCommitNode, origin: Origin): Promise<Origin | null> {
    const known = this.origins.get(`${parent.key}\0${origin.path}`);
    if (known) return known;
    const entry = await this.trees.entryAt(this.reads, parent.tree, origin.path.split('/'));
    if (!entry || entry.mode === MODE_TREE || typeOf(entry.mode) !== typeOf(origin.mode)) return null;
    return this.origin(parent, origin.path, entry.oid, entry.mode);
  }

  /** find_rename(): the file the commit deleted that git's rename detection pairs with this one. */
  private async findRename(parent: BlameCommitNode, origin: Origin): Promise<Origin | null> {
    const changes = await treeChanges(this.repo, parent.tree, origin.commit.tree, PathFilter.all());
    const destination = changes.find((change) => change.path === origin.path);
    // Only a file the parent does not have (as a file) can be a rename's destination.
    if (!destination || destination.old || !destination.new) return null;
    const sources = changes.filter((change) => change.old && !change.new).map((change) => ({ path: change.path, version: change.old as FileVersion }));
    const renames = await detectRenames(sources, [{ path: origin.path, version: destination.new }], this.blobs);
    const match = renames.get(0);
    if (!match) return null;
    const source = sources[match.source];
    return this.origins.get(`${parent.key}\0${source.path}`) ?? this.origin(parent, source.path, source.version.oid, source.version.mode);
  }

  /**
   * Line tables of the last few origins' blobs: a walk meets each blob as a parent, then as the
   * next target. Their lines are numbered by one LineClasses for the walk, so two versions of a
   * file are diffed without numbering their lines again.
   */
  private readonly recentTables = new Map<string, LineTable>();
  private classes = new LineClasses();

  /**
   * Line tables of blobs, those not kept read in one read. A blob is split and numbered from the
   * table of `similar` (its lines in common with it taken as they are) when given.
   */
  private async lineTables(oids: readonly Oid[], similar?: LineTable): Promise<LineTable[]> {
    const keys = oids.map(oidToHex);
    const unread = new Map<string, Oid>();
    keys.forEach((key, i) => {
      if (!this.recentTables.has(key)) unread.set(key, oids[i]);
    });
    const read = new Map<string, Buffer>();
    if (unread.size > 0) {
      const bodies = await this.blobs.readBlobs([...unread.values()]);
      [...unread.keys()].forEach((key, i) => read.set(key, bodies[i]));
    }
    return keys.map((key) => {
      let table = this.recentTables.get(key);
      if (!table) {
        const content = read.get(key)!;
        table = similar ? LineTable.from(content, similar, this.classes) : LineTable.of(content, this.classes);
        if (this.recentTables.size >= RECENT_BLOBS_MAX) this.recentTables.delete(this.recentTables.keys().next().value!);
        this.recentTables.set(key, table);
      }
      return table;
    });
  }

  /** pass_blame_to_parent(): the parent takes the suspects the diff leaves unchanged. */
  private async passToParent(target: Origin, parent: Origin): Promise<void> {
    if (this.classes.full) {
      // Start over rather than keep every line a long walk has seen.
      this.classes = new LineClasses();
      this.recentTables.clear();
    }
    const [targetTable] = await this.lineTables([target.blob]);
    const [parentTable] = await this.lineTables([parent.blob], targetTable);
    // xdi_diff() drops a common tail (blame diffs without context); what is left is whole lines.
    const [parentContent, targetContent] = trimCommonTail(parentTable.content, targetTable.content);
    const parentIds = parentTable.idsUpTo(parentContent.length);
    const targetIds = targetTable.idsUpTo(targetContent.length);
    const hunks = diffLineIds(parentIds, targetIds, { old: parentTable.indents(parentIds.length), new: targetTable.indents(targetIds.length) }, 'myers', this.classes.count);
    const moved: Suspect[] = [];
    const kept: Suspect[] = [];
    // Walk the suspects in line order and the hunks together: the lines a hunk holds stay (the
    // commit changed them), the others move to the parent at their line there.
    const suspects = target.suspects;
    if (!inLineOrder(suspects)) suspects.sort((a, b) => a.line - b.line);
    let h = 0;
    let offset = 0;
    for (const suspect of suspects) {
      let { final, line, count } = suspect;
      while (count > 0) {
        while (h < hunks.length && hunks[h].newStart + hunks[h].newCount <= line) {
          offset = hunks[h].oldStart + hunks[h].oldCount - (hunks[h].newStart + hunks[h].newCount);
          h++;
        }
        const hunk = hunks[h];
        const inside = hunk !== undefined && line >= hunk.newStart;
        const run = Math.min(count, inside ? hunk.newStart + hunk.newCount - line : hunk ? hunk.newStart - line : count);
        if (inside) kept.push({ final, line, count: run });
        else addRange(moved, final, line + offset, run);
        final += run;
        line += run;
        count -= run;
      }
    }
    target.suspects = kept;
    this.moveSuspects(parent, moved);
  }

  private moveSuspects(origin: Origin, suspects: Suspect[]): void {
    if (suspects.length === 0) return;
    origin.suspects.push(...suspects);
    this.enqueue(origin);
  }

  private origin(commit: BlameCommitNode, path: string, blob: Oid, mode: TreeMode): Origin {
    const key = `${commit.key}\0${path}`;
    let origin = this.origins.get(key);
    if (!origin) {
      origin = { commit, path, blob, mode, suspects: [], queued: false };
      this.origins.set(key, origin);
    }
    return origin;
  }

  /**
   * Commits of the store, those not met yet read in one read; null for one beyond a shallow
   * boundary (git then treats it as missing).
   */
  private async commitNodes(tx: ProjectReads, oids: readonly Oid[]): Promise<Array<BlameCommitNode | null>> {
    const unread = oids.filter((oid) => !this.commits.has(oidToHex(oid)));
    const infos = unread.length > 0 ? await tx.getCommitInfos(unread) : [];
    unread.forEach((oid, i) => {
      const info = infos[i];
      const key = oidToHex(oid);
      if (info && !this.commits.has(key)) this.commits.set(key, { key, oid, tree: info.tree, parents: info.parents, time: info.commitTime });
    });
    return oids.map((oid) => this.commits.get(oidToHex(oid)) ?? null);
  }

  private enqueue(origin: Origin): void {
    if (origin.queued) return;
    origin.queued = true;
    this.order.set(origin, this.arrivals++);
    this.queue.push(origin);
  }

  private dequeue(): Origin | undefined {
    const top = this.queue.pop();
    if (top) top.queued = false;
    return top;
  }
}

/** Appends a range of suspects, joined to the last one when they are consecutive in both files. */
function addRange(suspects: Suspect[], final: number, line: number, count: number): void {
  const last = suspects[suspects.length - 1];
  if (last && last.final + last.count === final && last.line + last.count === line) last.count += count;
  else suspects.push({ final, line, count });
}

function inLineOrder(suspects: readonly Suspect[]): boolean {
  for (let i = 1; i < suspects.length; i++) if (suspects[i - 1].line > suspects[i].line) return false;
  return true;
}

function describeCommit(oid: Oid, object: StoredObject | undefined): BlameCommit {
  const commit = decodeCommit(bodyOf(object, 'commit', oid));
  return {
    message: messageForClient(commit.message),
    author: { name: commit.author.name, email: commit.author.email },
    committed_at: new Date(commit.committer.timestamp * 1000).toISOString(),
  };
}

/** git's fake working-tree commit: "Not Committed Yet" <not.committed.yet>, dated now. */
function uncommitted(): BlameCommit {
  return { message: 'Not committed yet', author: { name: 'Not Committed Yet', email: 'not.committed.yet' }, committed_at: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString() };
}
