/**
 * Differential test: randomised histories are built in a real git repository and merged both by
 * `git merge-tree --write-tree` (git 2.39) and by mergeCommits(). A clean merge must give the
 * same tree id; a conflicted one the same set of conflicted paths.
 *
 * Histories come from fast-check with a fixed seed (reproducible; MERGE_SEED and MERGE_RUNS
 * override it, MERGE_VERBOSE prints statistics, MERGE_KEEP keeps the repository). Each scenario
 * is a base tree and per-side operations: adds (some reusing part of an existing file, to land
 * near git's similarity thresholds), edits of overlapping and disjoint line ranges (sometimes
 * identical on both sides), deletes, moves of files (a third of them edited too) and of whole
 * directories, mode changes, file↔directory swaps, symlinks, binary files, files without a final
 * newline, CRLF files. A share of the histories are criss-cross, with two or three merge bases
 * and conflicts inside the virtual base.
 *
 * Speed: all commits go through one `git fast-import`, all merges through one
 * `git merge-tree --stdin`, and all objects come back through one `git cat-file --batch`.
 *
 * Normalisation and the known differences, all deliberate:
 *   - git moves a file out of a directory's way to "<path>~<branch>"; we report <path>;
 *   - git 2.39 only prints some conflicts ("rename involved in collision", directory rename
 *     problems) and may call such a merge clean; we report them as conflicts, and the test
 *     accepts each such report only if git printed that conflict for that path;
 *   - merges on which git itself aborts (assertions in merge-ort's process_renames) are skipped.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { oidFromHex, oidToHex, type Oid } from '../../../src/git/oid.js';
import { mergeCommits } from '../../../src/repo/merge/mergeBase.js';
import { initBareRepo, scratchDir } from '../../support/git.js';
import { gitMergeTrees, importCommits, MemoryObjects, type ImportCommit, type ImportFile } from '../../support/memoryObjects.js';
import { AsyncObjects } from './asyncObjects.js';

const SEED = Number(process.env.MERGE_SEED ?? 20240611);
const RUNS = Number(process.env.MERGE_RUNS ?? 600);

// ---------------------------------------------------------------------------------------------
// Random choices: fast-check draws a tape of integers per scenario; the builder reads it in order
// and, past its end, continues with a xorshift seeded from it.

class Tape {
  private index = 0;
  private state: number;

  constructor(private readonly values: readonly number[]) {
    this.state = (values.reduce((acc, v) => (acc * 31 + v) | 0, 17) | 1) >>> 0;
  }

  next(): number {
    if (this.index < this.values.length) return this.values[this.index++];
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return this.state & 0x7fffffff;
  }

  below(n: number): number {
    return n <= 0 ? 0 : this.next() % n;
  }

  chance(percent: number): boolean {
    return this.below(100) < percent;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.below(items.length)];
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.below(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Trees as path → file, content as lines plus format flags.

interface FileModel {
  lines: string[];
  mode: '100644' | '100755' | '120000';
  binary: boolean;
  crlf: boolean;
  /** The last line has no newline. */
  noFinalNewline: boolean;
}

type TreeModel = Map<string, FileModel>;

function render(file: FileModel): Buffer {
  if (file.mode === '120000') return Buffer.from(file.lines.join('/'), 'utf8');
  const eol = file.crlf ? '\r\n' : '\n';
  let text = file.lines.map((line) => line + eol).join('');
  if (file.noFinalNewline && text.length > 0) text = text.slice(0, -eol.length);
  if (file.binary) text = `\0binary\n${text}`;
  return Buffer.from(text, 'utf8');
}

function toImportFiles(tree: TreeModel): Map<string, ImportFile> {
  const files = new Map<string, ImportFile>();
  for (const [path, file] of [...tree].sort(([a], [b]) => (a < b ? -1 : 1))) files.set(path, { mode: file.mode, content: render(file) });
  return files;
}

/** Does the tree have a file at `path` or at a directory prefix of it, or files below `path`? */
function pathBlocked(tree: TreeModel, path: string): boolean {
  if (tree.has(path)) return true;
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) if (tree.has(parts.slice(0, i).join('/'))) return true;
  for (const existing of tree.keys()) if (existing.startsWith(`${path}/`)) return true;
  return false;
}

function directoriesOf(tree: TreeModel): string[] {
  const dirs = new Set<string>();
  for (const path of tree.keys()) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return [...dirs].sort();
}

const DIRS = ['', '', 'x', 'y', 'x/z', 'y/z', 'w', 'lib'];
// "x-1", "x.c", "x0" sort around the directory "x" ("x/"); the non-ASCII names sort by their
// UTF-8 bytes (U+FFEF before U+1F600, unlike UTF-16).
const NAMES = ['f', 'g', 'h', 'k', 'm', 'x', 'y', 'w', 'readme', 'x-1', 'x.c', 'x0', '\u00e9', '\uffef', '\u{1f600}'];
const FILLER = ['', '{', '}', '--'];

class Builder {
  private fileCounter = 0;
  private lineCounter = 0;

  constructor(private readonly tape: Tape) {}

  randomPath(): string {
    const dir = this.tape.pick(DIRS);
    const name = this.tape.pick(NAMES);
    return dir === '' ? name : `${dir}/${name}`;
  }

  freshLines(count: number, fileId: number): string[] {
    const lines: string[] = [];
    for (let i = 0; i < count; i++) {
      lines.push(this.tape.chance(12) ? this.tape.pick(FILLER) : `line ${fileId}.${this.lineCounter++} of file ${fileId}`);
    }
    return lines;
  }

  newFile(): FileModel {
    const id = this.fileCounter++;
    const roll = this.tape.below(100);
    if (roll < 3) return { lines: [`target-${id}`], mode: '120000', binary: false, crlf: false, noFinalNewline: false };
    const count = this.tape.chance(5) ? 0 : 1 + this.tape.below(14);
    return {
      lines: this.freshLines(count, id),
      mode: this.tape.chance(10) ? '100755' : '100644',
      binary: roll >= 3 && roll < 8,
      crlf: roll >= 8 && roll < 12,
      noFinalNewline: this.tape.chance(12),
    };
  }

  baseTree(): TreeModel {
    const tree: TreeModel = new Map();
    const count = 2 + this.tape.below(9);
    for (let i = 0; i < count; i++) {
      const path = this.randomPath();
      if (!pathBlocked(tree, path)) tree.set(path, this.newFile());
    }
    return tree;
  }

  /** A new file made of a random share of an existing file's lines and fresh ones. */
  partialCopy(file: FileModel): FileModel {
    const id = this.fileCounter++;
    const lines: string[] = [];
    for (const line of file.lines) {
      if (this.tape.chance(60)) lines.push(line);
      if (this.tape.chance(40)) lines.push(...this.freshLines(1, id));
    }
    return { ...file, lines: lines.length > 0 ? lines : this.freshLines(1, id) };
  }

  /** Edits of a file's lines: replacements, insertions and deletions at random places. */
  edit(file: FileModel): FileModel {
    if (file.mode === '120000') return { ...file, lines: [`target-edit-${this.lineCounter++}`] };
    const lines = [...file.lines];
    const edits = 1 + this.tape.below(3);
    const id = this.fileCounter++;
    for (let e = 0; e < edits; e++) {
      const at = this.tape.below(lines.length + 1);
      const remove = this.tape.below(3);
      const insert = this.tape.below(3);
      lines.splice(at, remove, ...this.freshLines(insert, id));
    }
    const changed = { ...file, lines };
    if (this.tape.chance(8)) changed.noFinalNewline = !changed.noFinalNewline;
    if (changed.lines.join() === file.lines.join() && changed.noFinalNewline === file.noFinalNewline) {
      changed.lines = [...changed.lines, `appended ${this.lineCounter++}`];
    }
    return changed;
  }
}

interface SideOptions {
  /** Files this side must not move (their content differs between the virtual base and this side). */
  noMove: ReadonlySet<string>;
  /** Only operations that can be combined with the other side's without clashes (criss-cross sides). */
  tame: boolean;
  /** The other side's edits, to copy sometimes (identical changes). */
  otherEdits?: ReadonlyMap<string, FileModel>;
}

interface SideResult {
  tree: TreeModel;
  /** Files this side touched, with their new state (null: deleted or moved away). */
  touched: Map<string, FileModel | null>;
  edits: Map<string, FileModel>;
}

function applySide(builder: Builder, tape: Tape, base: TreeModel, options: SideOptions): SideResult {
  const tree: TreeModel = new Map(base);
  const touched = new Map<string, FileModel | null>();
  const edits = new Map<string, FileModel>();
  const free = (path: string) => !touched.has(path);

  // Whole-directory moves make directory renames.
  if (!options.tame && tape.chance(12)) {
    const dirs = directoriesOf(tree);
    if (dirs.length > 0) {
      const from = tape.pick(dirs);
      const to = tape.pick(['moved', 'x', 'y/q', 'lib', 'w/sub', 'z']);
      const inside = [...tree.keys()].filter((path) => path.startsWith(`${from}/`));
      if (to !== from && !to.startsWith(`${from}/`) && inside.every((path) => free(path) && !options.noMove.has(path))) {
        for (const path of inside) {
          const target = to + path.slice(from.length);
          const file = tree.get(path)!;
          tree.delete(path);
          if (pathBlocked(tree, target)) {
            tree.set(path, file);
            continue;
          }
          tree.set(target, file);
          touched.set(path, null);
          touched.set(target, file);
        }
      }
    }
  }

  for (const path of tape.shuffle([...base.keys()])) {
    if (!free(path) || !tree.has(path)) continue;
    const file = tree.get(path)!;
    const roll = tape.below(100);
    if (roll < 28) {
      const copied = options.otherEdits?.get(path);
      const edited = copied && tape.chance(35) ? copied : builder.edit(file);
      tree.set(path, edited);
      touched.set(path, edited);
      edits.set(path, edited);
    } else if (roll < 35) {
      tree.delete(path);
      touched.set(path, null);
    } else if (roll < 46) {
      // A move, a third of the time with edits (git then pairs the files by similarity).
      const target = options.tame ? `${builder.randomPath()}-moved${tape.below(1000)}` : builder.randomPath();
      const moved = tape.chance(33) ? builder.edit(file) : file;
      tree.delete(path);
      if (pathBlocked(tree, target)) {
        tree.set(path, file);
        continue;
      }
      tree.set(target, moved);
      touched.set(path, null);
      touched.set(target, moved);
    } else if (roll < 52 && file.mode !== '120000') {
      const changed: FileModel = { ...file, mode: file.mode === '100755' ? '100644' : '100755' };
      tree.set(path, changed);
      touched.set(path, changed);
    } else if (roll < 55 && !options.tame) {
      // File becomes a directory.
      tree.delete(path);
      const inner = `${path}/${tape.pick(NAMES)}`;
      const fresh = builder.newFile();
      tree.set(inner, fresh);
      touched.set(path, null);
      touched.set(inner, fresh);
    }
  }

  if (!options.tame && tape.chance(8)) {
    // A directory becomes a file.
    const dirs = directoriesOf(tree).filter((dir) => [...tree.keys()].filter((p) => p.startsWith(`${dir}/`)).every(free));
    if (dirs.length > 0) {
      const dir = tape.pick(dirs);
      for (const path of [...tree.keys()]) {
        if (path.startsWith(`${dir}/`)) {
          tree.delete(path);
          touched.set(path, null);
        }
      }
      const fresh = builder.newFile();
      tree.set(dir, fresh);
      touched.set(dir, fresh);
    }
  }

  const adds = tape.below(3);
  for (let i = 0; i < adds; i++) {
    const path = options.tame ? `${builder.randomPath()}-new${tape.below(100000)}` : builder.randomPath();
    if (pathBlocked(tree, path)) continue;
    // Sometimes a new file reuses part of an existing one, to land near git's similarity limits.
    const existing = [...tree.values()].filter((file) => file.mode !== '120000');
    const fresh = existing.length > 0 && tape.chance(20) ? builder.partialCopy(tape.pick(existing)) : builder.newFile();
    tree.set(path, fresh);
    touched.set(path, fresh);
  }
  return { tree, touched, edits };
}

interface Scenario {
  commits: ImportCommit[];
  ours: number;
  theirs: number;
  description: string;
}

function buildScenario(shape: string, values: readonly number[], time: number): Scenario {
  const tape = new Tape(values);
  const builder = new Builder(tape);
  const base = builder.baseTree();
  const commits: ImportCommit[] = [{ files: toImportFiles(base), parents: [], time }];
  const commit = (tree: TreeModel, parents: number[]) => {
    commits.push({ files: toImportFiles(tree), parents, time: time + commits.length });
    return commits.length - 1;
  };

  if (shape === 'simple' || shape === 'fast-forward') {
    const ours = applySide(builder, tape, base, { noMove: new Set(), tame: false });
    const theirs = applySide(builder, tape, base, { noMove: new Set(), tame: false, otherEdits: ours.edits });
    const oursCommit = commit(ours.tree, [0]);
    const theirsCommit = shape === 'fast-forward' ? commit(theirs.tree, [oursCommit]) : commit(theirs.tree, [0]);
    return { commits, ours: oursCommit, theirs: theirsCommit, description: shape };
  }

  // Criss-cross: X and Y (and Z) branch from the base; both tips merge all of them, resolving
  // shared paths differently; then each tip changes more.
  const branchCount = shape === 'triple' ? 3 : 2;
  const sides: SideResult[] = [];
  for (let i = 0; i < branchCount; i++) {
    sides.push(applySide(builder, tape, base, { noMove: new Set(), tame: true, otherEdits: sides[0]?.edits }));
  }
  const sideCommits = sides.map((side) => commit(side.tree, [0]));
  // A merge commit's tree: every side's changes, the first side in `order` winning where several
  // touched a path.
  const resolve = (order: readonly number[]): TreeModel => {
    const tree: TreeModel = new Map(base);
    const decided = new Set<string>();
    for (const index of order) {
      for (const [path, file] of sides[index].touched) {
        if (decided.has(path)) continue;
        decided.add(path);
        if (file === null) tree.delete(path);
        else tree.set(path, file);
      }
    }
    return tree;
  };
  const touchedAnywhere = new Set(sides.flatMap((side) => [...side.touched.keys()]));
  const shared = [...touchedAnywhere].filter((path) => sides.filter((side) => side.touched.has(path)).length > 1);
  const oursOrder = sides.map((_, i) => i);
  const theirsOrder = tape.chance(70) ? [...oursOrder].reverse() : oursOrder;
  const ours = applySide(builder, tape, resolve(oursOrder), { noMove: new Set(), tame: false });
  const theirs = applySide(builder, tape, resolve(theirsOrder), { noMove: new Set(), tame: false, otherEdits: ours.edits });
  const oursCommit = commit(ours.tree, oursOrder.map((i) => sideCommits[i]));
  const theirsCommit = commit(theirs.tree, theirsOrder.map((i) => sideCommits[i]));
  return { commits, ours: oursCommit, theirs: theirsCommit, description: `${shape} (${shared.length} shared paths)` };
}

const scenarioArbitrary = fc.record({
  shape: fc.constantFrom('simple', 'simple', 'simple', 'simple', 'simple', 'simple', 'crisscross', 'crisscross', 'triple', 'fast-forward'),
  tape: fc.array(fc.nat({ max: 0x7fffffff }), { minLength: 300, maxLength: 300 }),
});

// ---------------------------------------------------------------------------------------------

/** git's conflicted paths with "~<branch>" suffixes removed (our report names the original path). */
function normaliseGitPath(path: string): string {
  return path.replace(/~[0-9a-f]{40}(?:_\d+)?$/, '');
}

/**
 * Conflicts git 2.39 announces only in a "CONFLICT (...)" message and does not record as a
 * conflicted path (it may even call the merge clean); we report them as conflicts. Each such
 * report must match git's message of that type naming the path.
 */
const MESSAGE_ONLY_REASONS = new Map([
  ['rename collision', ['CONFLICT (rename involved in collision)']],
  ['directory rename split', ['CONFLICT(directory rename unclear split)']],
  ['implicit dir rename', ['CONFLICT (file in way of directory rename)', 'CONFLICT(directory rename collision)']],
]);

describe('mergeCommits against git merge-tree --write-tree', () => {
  const scratch = scratchDir('treehouse-merge-diff-');
  initBareRepo(scratch.path);
  afterAll(() => {
    if (process.env.MERGE_KEEP) console.log(`kept ${scratch.path}`);
    else scratch.remove();
  });

  it(`agrees on ${RUNS} randomised histories (seed ${SEED})`, async () => {
    const samples = fc.sample(scenarioArbitrary, { seed: SEED, numRuns: RUNS });
    const allCommits: ImportCommit[] = [];
    const merges: Array<{ ours: number; theirs: number; description: string; index: number }> = [];
    samples.forEach((sample, index) => {
      const scenario = buildScenario(sample.shape, sample.tape, 1_600_000_000 + index * 1000);
      const offset = allCommits.length;
      for (const commit of scenario.commits) allCommits.push({ ...commit, parents: commit.parents.map((p) => p + offset) });
      merges.push({ ours: scenario.ours + offset, theirs: scenario.theirs + offset, description: scenario.description, index });
    });
    const oids = importCommits(scratch.path, allCommits);
    const pairs = merges.map((merge) => [oids[merge.ours], oids[merge.theirs]] as [Oid, Oid]);
    const outcomes = gitMergeTrees(scratch.path, pairs);
    // Read after merge-tree ran, so git's result trees can be inspected too.
    const objects = new AsyncObjects(MemoryObjects.fromRepository(scratch.path));

    const failures: string[] = [];
    const gitFailed: string[] = [];
    const messageOnly: string[] = [];
    let compared = 0;
    let conflicted = 0;
    const reasons = new Map<string, number>();
    for (const [i, merge] of merges.entries()) {
      const git = outcomes[i];
      const label = `#${merge.index} ${merge.description} ${oidToHex(pairs[i][0])} ${oidToHex(pairs[i][1])}`;
      let ours: Awaited<ReturnType<typeof mergeCommits>>;
      try {
        ours = await mergeCommits(objects, objects, pairs[i][0], pairs[i][1]);
      } catch (error) {
        failures.push(`${label}: threw ${(error as Error).stack}`);
        continue;
      }
      if (git.failed) {
        // Nothing to compare with: git itself could not merge these.
        gitFailed.push(`${label}: ${git.error}`);
        continue;
      }
      // Conflicts git only announces in a message, without a conflicted entry: we report them.
      const announced = (c: { path: string; reason: string }) =>
        MESSAGE_ONLY_REASONS.has(c.reason) &&
        !git.conflictedPaths.map(normaliseGitPath).includes(c.path) &&
        git.messages.some((m) => MESSAGE_ONLY_REASONS.get(c.reason)!.includes(m.type) && m.paths.includes(c.path));
      if (git.clean && !ours.clean && ours.conflicts.every(announced)) {
        messageOnly.push(`${label}: ${JSON.stringify(ours.conflicts)}`);
        continue;
      }
      compared++;
      if (git.clean !== ours.clean) {
        failures.push(`${label}: git clean=${git.clean} [${git.conflictedPaths.join(', ')}], ours clean=${ours.clean} ${JSON.stringify(ours.clean ? oidToHex(ours.tree) : ours.conflicts)}`);
        continue;
      }
      if (ours.clean) {
        if (!ours.tree.equals(oidFromHex(git.tree))) failures.push(`${label}: tree ${oidToHex(ours.tree)} != git ${git.tree}`);
        continue;
      }
      conflicted++;
      for (const conflict of ours.conflicts) reasons.set(conflict.reason, (reasons.get(conflict.reason) ?? 0) + 1);
      const gitPaths = [...new Set(git.conflictedPaths.map(normaliseGitPath))].sort();
      const ourPaths = [...new Set(ours.conflicts.filter((c) => !announced(c)).map((c) => c.path))].sort();
      if (gitPaths.join('\n') !== ourPaths.join('\n')) {
        failures.push(`${label}: conflicted paths git [${gitPaths.join(', ')}] ours ${JSON.stringify(ours.conflicts)}`);
      }
    }
    if (process.env.MERGE_VERBOSE) {
      console.log(`merges ${merges.length}, conflicted ${conflicted}, reasons ${JSON.stringify(Object.fromEntries(reasons))}`);
      for (const failure of gitFailed) console.log(`git failed: ${failure}`);
      for (const label of messageOnly) console.log(`git clean, conflict only in a message: ${label}`);
    }
    expect(failures.slice(0, 10)).toEqual([]);
    // A run that compared nothing (git failing on every case) proves nothing: most merges must be
    // compared, both clean and conflicted ones.
    expect(compared, `compared ${compared} of ${merges.length}; git failed on ${gitFailed.length}`).toBeGreaterThanOrEqual(Math.floor(RUNS * 0.9));
    expect(conflicted).toBeGreaterThan(RUNS / 10);
    expect(compared - conflicted).toBeGreaterThan(RUNS / 10);
  });
});
