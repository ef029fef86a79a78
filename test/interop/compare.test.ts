/**
 * GET git/compare against `git diff --histogram -M -U<n>` on the same commits: randomised pairs of
 * trees (adds, deletes, renames with and without edits, files copied in part to land near the
 * similarity thresholds, mode changes, type changes, binary files, files without a final newline,
 * CRLF, files turned into directories, non-ASCII names) are built with git, pushed to a test server
 * as one branch, and every file of every comparison — path, old path, status, ids, modes, binary,
 * counts, hunks and the missing-newline flags — must be git's. Also: a working tree's uncommitted
 * changes against `git diff --cached`, the `paths` filter against a pathspec, the truncation rule,
 * merge_base against `git merge-base`, and hostile parameters.
 */
import fc from 'fast-check';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitBytes, scratchDir } from '../support/git.js';
import { parseGitPatch } from '../support/gitDiff.js';
import { createClonedProject, fastImport, pushBranches, type ClonedProject, type HistoryFile } from '../support/history.js';
import { startTestServer, type TestServer } from '../support/server.js';

const SEED = Number(process.env.COMPARE_SEED ?? 5150);
const RUNS = Number(process.env.COMPARE_RUNS ?? 120);

let server: TestServer;
const work = scratchDir('treehouse-compare-');
beforeAll(async () => {
  // Hundreds of calls in a row: the per-key rate limit would answer some of them 429.
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

// ---------------------------------------------------------------------------------------------
// Random trees.

class Tape {
  private state: number;
  constructor(seed: number) {
    this.state = (seed | 1) >>> 0;
  }
  next(): number {
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
}

interface FileModel {
  lines: string[];
  mode: '100644' | '100755' | '120000';
  binary: boolean;
  crlf: boolean;
  noFinalNewline: boolean;
}

const DIRS = ['', '', 'x', 'y', 'y/z', 'lib/deep/er', 'd\u00e9j\u00e0'];
const NAMES = ['f', 'g.txt', 'h.ts', 'x', 'x-1', 'x.c', 'readme', '\u00e9', '\uffef', '\u{1f600}', 'A B'];
const CODE = ['', '}', '  }', '    return 1;', 'function f() {', '\tif (a) {', '\t\tcall();', 'const x = 1;', '# note'];

function render(file: FileModel): Buffer {
  if (file.mode === '120000') return Buffer.from(file.lines.join('/'), 'utf8');
  const eol = file.crlf ? '\r\n' : '\n';
  let text = file.lines.map((line) => line + eol).join('');
  if (file.noFinalNewline && text.length > 0) text = text.slice(0, -eol.length);
  return Buffer.from(file.binary ? `\0bin\n${text}` : text, 'utf8');
}

class Builder {
  private counter = 0;
  constructor(private readonly tape: Tape) {}
  path(): string {
    const dir = this.tape.pick(DIRS);
    const name = this.tape.pick(NAMES);
    return dir === '' ? name : `${dir}/${name}`;
  }
  lines(count: number): string[] {
    return Array.from({ length: count }, () => (this.tape.chance(35) ? this.tape.pick(CODE) : `line ${this.counter++}`));
  }
  file(): FileModel {
    const roll = this.tape.below(100);
    if (roll < 4) return { lines: [`target-${this.counter++}`], mode: '120000', binary: false, crlf: false, noFinalNewline: false };
    return {
      lines: this.lines(this.tape.chance(5) ? 0 : 1 + this.tape.below(40)),
      mode: this.tape.chance(10) ? '100755' : '100644',
      binary: roll < 9,
      crlf: roll >= 9 && roll < 14,
      noFinalNewline: this.tape.chance(15),
    };
  }
  edit(file: FileModel): FileModel {
    if (file.mode === '120000') return { ...file, lines: [`target-${this.counter++}`] };
    const lines = [...file.lines];
    for (let e = 1 + this.tape.below(3); e > 0; e--) lines.splice(this.tape.below(lines.length + 1), this.tape.below(3), ...this.lines(this.tape.below(3)));
    const edited = { ...file, lines };
    if (this.tape.chance(10)) edited.noFinalNewline = !edited.noFinalNewline;
    if (edited.lines.join('\n') === file.lines.join('\n') && edited.noFinalNewline === file.noFinalNewline) edited.lines.push(`appended ${this.counter++}`);
    return edited;
  }
  /** A new file sharing a random part of `file`'s lines, to land near the similarity thresholds. */
  partialCopy(file: FileModel): FileModel {
    const lines = file.lines.filter(() => this.tape.chance(70));
    lines.splice(this.tape.below(lines.length + 1), 0, ...this.lines(this.tape.below(6)));
    return { ...file, mode: file.mode === '120000' ? '100644' : file.mode, lines };
  }
}

type TreeModel = Map<string, FileModel>;

function blocked(tree: TreeModel, path: string): boolean {
  if (tree.has(path)) return true;
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) if (tree.has(parts.slice(0, i).join('/'))) return true;
  for (const existing of tree.keys()) if (existing.startsWith(`${path}/`)) return true;
  return false;
}

function scenario(seed: number): [TreeModel, TreeModel] {
  const tape = new Tape(seed);
  const builder = new Builder(tape);
  const before: TreeModel = new Map();
  for (let i = 3 + tape.below(12); i > 0; i--) {
    const path = builder.path();
    if (!blocked(before, path)) before.set(path, builder.file());
  }
  const after: TreeModel = new Map(before);
  for (const [path, file] of before) {
    const roll = tape.below(100);
    if (roll < 30) after.set(path, builder.edit(file));
    else if (roll < 38) after.delete(path);
    else if (roll < 52) {
      const target = builder.path();
      after.delete(path);
      if (blocked(after, target)) after.set(path, file);
      else after.set(target, tape.chance(40) ? builder.edit(file) : file);
    } else if (roll < 58 && file.mode !== '120000') after.set(path, { ...file, mode: file.mode === '100755' ? '100644' : '100755' });
    else if (roll < 61) after.set(path, file.mode === '120000' ? { ...builder.file(), mode: '100644', binary: false } : { lines: ['t'], mode: '120000', binary: false, crlf: false, noFinalNewline: false });
    else if (roll < 63) {
      after.delete(path);
      const inner = `${path}/${tape.pick(NAMES)}`;
      if (!blocked(after, inner)) after.set(inner, builder.file());
    } else if (roll < 66 && file.mode !== '120000') after.set(path, { ...file, binary: !file.binary });
  }
  for (let i = tape.below(4); i > 0; i--) {
    const path = builder.path();
    if (blocked(after, path)) continue;
    const existing = [...before.values()].filter((file) => file.mode !== '120000');
    after.set(path, existing.length > 0 && tape.chance(40) ? builder.partialCopy(tape.pick(existing)) : builder.file());
  }
  return [before, after];
}

function toFiles(tree: TreeModel): Map<string, HistoryFile> {
  return new Map([...tree].map(([path, file]) => [path, { mode: file.mode, content: render(file) }]));
}

// ---------------------------------------------------------------------------------------------
// git's answer, from `git diff --raw -z` (statuses, paths, ids, modes) and the patch (hunks).

interface ExpectedFile {
  path: string;
  old_path?: string;
  status: string;
  old_oid?: string;
  new_oid?: string;
  old_mode?: string;
  new_mode?: string;
  binary: boolean;
  additions: number;
  deletions: number;
  old_missing_newline: boolean;
  new_missing_newline: boolean;
  hunks: unknown[];
}

const STATUS: Record<string, string> = { A: 'added', D: 'deleted', M: 'modified', R: 'renamed', T: 'type_changed', C: 'copied' };

const binaryBlobs = new Map<string, boolean>();
function blobIsBinary(dir: string, oid: string): boolean {
  let binary = binaryBlobs.get(oid);
  if (binary === undefined) {
    binary = gitBytes(['cat-file', 'blob', oid], { cwd: dir }).subarray(0, 8000).includes(0);
    binaryBlobs.set(oid, binary);
  }
  return binary;
}

/** Turns one diff's raw records and patch sections into the expected files. */
function expectedFiles(dir: string, raw: string[], patches: ReturnType<typeof parseGitPatch>): ExpectedFile[] {
  const files: ExpectedFile[] = [];
  let p = 0;
  for (let i = 0; i < raw.length; ) {
    const header = raw[i++];
    const [oldMode, newMode, oldOid, newOid, statusField] = header.slice(1).split(' ');
    const status = statusField[0];
    const first = raw[i++];
    const second = status === 'R' || status === 'C' ? raw[i++] : undefined;
    // A type change is two patches in git's output: the deletion, then the creation.
    const sections = status === 'T' ? [patches[p++], patches[p++]] : [patches[p++]];
    const binary = sections.some((section) => section.binary);
    const file: ExpectedFile = {
      path: second ?? first,
      status: STATUS[status],
      binary,
      additions: binary ? 0 : sections.reduce((n, s) => n + s.patch.additions, 0),
      deletions: binary ? 0 : sections.reduce((n, s) => n + s.patch.deletions, 0),
      old_missing_newline: sections.some((s) => s.patch.oldMissingNewline),
      new_missing_newline: sections.some((s) => s.patch.newMissingNewline),
      hunks: binary ? [] : sections.flatMap((section) => section.patch.hunks),
    };
    if (second !== undefined) file.old_path = first;
    // git prints "Binary files … differ" only when the content changed; we flag the content itself
    // (a NUL in its first 8000 bytes, git's test), so a renamed or re-moded binary file is binary too.
    if (oldOid === newOid && !oldMode.startsWith('160')) file.binary = blobIsBinary(dir, oldOid);
    if (oldMode !== '000000') Object.assign(file, { old_oid: oldOid, old_mode: oldMode });
    if (newMode !== '000000') Object.assign(file, { new_oid: newOid, new_mode: newMode });
    files.push(file);
  }
  expect(p).toBe(patches.length);
  return files;
}

/** git diff of two revisions (or --cached against one), as the files compare should answer. */
function gitCompare(dir: string, args: string[], pathspec: string[] = []): ExpectedFile[] {
  // -U<n> would add the patch to the raw output.
  const rawArgs = args.filter((arg) => !arg.startsWith('-U'));
  const raw = gitBytes(['diff', '--raw', '-z', '--no-abbrev', '-M', ...rawArgs, '--', ...pathspec], { cwd: dir }).toString('utf8').split('\0');
  raw.pop();
  const patches = parseGitPatch(git(['diff', '--no-color', '--histogram', '-M', ...args, '--', ...pathspec], { cwd: dir }));
  return expectedFiles(dir, raw, patches);
}

/**
 * Each commit of `heads` against its parent, with one `git diff-tree --stdin` for the raw records
 * and one for the patches (diff-tree prints each commit's id before its diff).
 */
function gitCompareParents(dir: string, heads: readonly string[], context: number, pathspec: string[] = []): Map<string, ExpectedFile[]> {
  const input = `${heads.join('\n')}\n`;
  const rawFields = gitBytes(['diff-tree', '-r', '-M', '--raw', '-z', '--no-abbrev', '--stdin', '--', ...pathspec], { cwd: dir, input }).toString('utf8').split('\0');
  const raw = new Map<string, string[]>(heads.map((head) => [head, []]));
  let current: string[] | null = null;
  for (const field of rawFields) {
    if (raw.has(field)) current = raw.get(field)!;
    else if (field !== '') current!.push(field);
  }
  const patchText = git(['diff-tree', '-r', '-M', '-p', '--no-color', '--histogram', `-U${context}`, '--stdin', '--', ...pathspec], { cwd: dir, input });
  const sections = new Map<string, string[]>(heads.map((head) => [head, []]));
  let lines: string[] | null = null;
  for (const line of patchText.split('\n')) {
    if (sections.has(line)) lines = sections.get(line)!;
    else lines?.push(line);
  }
  return new Map(heads.map((head) => [head, expectedFiles(dir, raw.get(head)!, parseGitPatch(sections.get(head)!.join('\n')))]));
}

function normalise(files: Array<Record<string, unknown>>): ExpectedFile[] {
  return files.map((file) => ({ ...(file as unknown as ExpectedFile), hunks: (file.hunks as unknown[] | undefined) ?? [] }));
}

async function compareApi(project: ClonedProject, query: Record<string, string | string[]>) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) for (const item of Array.isArray(value) ? value : [value]) search.append(key, item);
  return server.call('GET', `${project.base}/git/compare?${search}`);
}

// ---------------------------------------------------------------------------------------------

describe('GET git/compare against git diff --histogram -M', () => {
  let project: ClonedProject;
  const pairs: Array<[string, string]> = [];

  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'random'));
    const seeds = fc.sample(fc.nat(), { seed: SEED, numRuns: RUNS });
    const commits = seeds.flatMap((seed, i) => {
      const [before, after] = scenario(seed);
      return [
        { files: toFiles(before), parents: [i === 0 ? project.root : 2 * i - 1], time: 1_700_000_000 + 2 * i },
        { files: toFiles(after), parents: [2 * i], time: 1_700_000_001 + 2 * i },
      ];
    });
    const oids = fastImport(project.dir, commits);
    for (let i = 0; i < seeds.length; i++) pairs.push([oids[2 * i], oids[2 * i + 1]]);
    await pushBranches(project.dir, { main: oids[oids.length - 1] });
  });

  for (const context of [3, 0, 1, 20]) {
    it(`equals git's files, statuses and hunks with -U${context} on ${RUNS} random pairs`, async () => {
      const failures: string[] = [];
      let files = 0;
      const gitAnswers = gitCompareParents(project.dir, pairs.map(([, b]) => b), context);
      for (const [a, b] of pairs) {
        const expected = gitAnswers.get(b)!;
        const response = await compareApi(project, { base: a, head: b, context: String(context) });
        expect(response.status).toBe(200);
        files += expected.length;
        const ours = normalise(response.body.files);
        if (!isDeepStrictEqual(ours, expected)) {
          expect(ours, `${a}..${b}`).toEqual(expected);
          failures.push(`${a}..${b}`);
        }
        expect(response.body.truncated).toBe(false);
      }
      expect(failures).toEqual([]);
      expect(files).toBeGreaterThan(RUNS * 3);
    });
  }

  it('covers renames, type changes, binary files and mode changes', async () => {
    const statuses = new Map<string, number>();
    let binary = 0;
    let modeOnly = 0;
    for (const files of gitCompareParents(project.dir, pairs.map(([, b]) => b), 3).values()) {
      for (const file of files) {
        statuses.set(file.status, (statuses.get(file.status) ?? 0) + 1);
        if (file.binary) binary++;
        if (file.status === 'modified' && file.old_oid === file.new_oid) modeOnly++;
      }
    }
    for (const status of ['added', 'deleted', 'modified', 'renamed', 'type_changed']) expect(statuses.get(status), status).toBeGreaterThan(3);
    expect(binary).toBeGreaterThan(3);
    expect(modeOnly).toBeGreaterThan(3);
  });

  it('limits to whole path components as a pathspec does', async () => {
    let checked = 0;
    for (const paths of [['x'], ['y/z', 'x-1'], ['lib'], ['d\u00e9j\u00e0/']]) {
      const gitAnswers = gitCompareParents(project.dir, pairs.slice(0, 40).map(([, b]) => b), 3, paths);
      for (const [a, b] of pairs.slice(0, 40)) {
        const expected = gitAnswers.get(b)!;
        const response = await compareApi(project, { base: a, head: b, paths });
        expect(response.status).toBe(200);
        expect(normalise(response.body.files)).toEqual(expected);
        checked += expected.length;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('gives merge_base as git merge-base does, and null without shared history', async () => {
    const [a, b] = pairs[5];
    const response = await compareApi(project, { base: b, head: a, patch: 'false' });
    expect(response.body.merge_base).toBe(git(['merge-base', a, b], { cwd: project.dir }).trim());
    expect(response.body.base).toBe(b);
    expect(response.body.files.every((file: { hunks?: unknown }) => file.hunks === undefined)).toBe(true);
    const orphan = fastImport(project.dir, [{ files: new Map([['o.txt', { mode: '100644', content: Buffer.from('o\n') }]]), parents: [], time: 1_800_000_000 }])[0];
    await pushBranches(project.dir, { orphan });
    const unrelated = await compareApi(project, { base: 'main', head: 'orphan' });
    expect(unrelated.status).toBe(200);
    expect(unrelated.body.merge_base).toBeNull();
  });
});

describe('GET git/compare rename choices', () => {
  it('pairs a unique file name first (75 %) even when another deleted file is more similar, as git does', async () => {
    const project = await createClonedProject(server, join(work.path, 'basename'));
    const text = (lines: string[]) => ({ mode: '100644' as const, content: Buffer.from(lines.map((line) => `${line}\n`).join('')) });
    const shared = Array.from({ length: 18 }, (_, i) => `shared line ${String(i).padStart(2, '0')}`);
    const [before, after] = fastImport(project.dir, [
      {
        files: new Map([
          ['a/foo.c', text([...shared.slice(0, 16), 'foo 1', 'foo 2', 'foo 3', 'foo 4'].map((l) => l.padEnd(15)))],
          ['x/bar.c', text([...shared, 'new line 1', 'bar end'].map((l) => l.padEnd(15)))],
          ['same.txt', text(['identical'])],
        ]),
        parents: [project.root],
        time: 1_700_000_000,
      },
      {
        files: new Map([
          ['b/foo.c', text([...shared, 'new line 1', 'new line 2'].map((l) => l.padEnd(15)))],
          ['k/same.txt', text(['identical'])],
          ['z/other.txt', text(['identical'])],
        ]),
        parents: [0],
        time: 1_700_000_001,
      },
    ]);
    await pushBranches(project.dir, { main: after });
    const expected = gitCompare(project.dir, [before, after]);
    expect(expected.map((f) => `${f.status} ${f.old_path ?? ''} ${f.path}`)).toEqual(['renamed a/foo.c b/foo.c', 'renamed same.txt k/same.txt', 'deleted  x/bar.c', 'added  z/other.txt']);
    const response = await compareApi(project, { base: before, head: after });
    expect(normalise(response.body.files)).toEqual(expected);
  });
});

describe('GET git/compare of a working tree', () => {
  it("shows uncommitted changes as git diff --cached shows the same changes", async () => {
    const project = await createClonedProject(server, join(work.path, 'worktree'));
    const start = new Map<string, HistoryFile>([
      ['src/app.ts', { mode: '100644', content: Buffer.from('function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n') }],
      ['docs/guide.md', { mode: '100644', content: Buffer.from(Array.from({ length: 30 }, (_, i) => `guide line ${i}\n`).join('')) }],
      ['old.txt', { mode: '100644', content: Buffer.from('gone\n') }],
    ]);
    const [head] = fastImport(project.dir, [{ files: start, parents: [project.root], time: 1_700_000_000 }]);
    await pushBranches(project.dir, { main: head });
    git(['reset', '-q', '--hard', head], { cwd: project.dir });

    // The same changes through the API (uncommitted) and in the clone (staged).
    const newApp = 'function a() {\n  return 10;\n}\n\nfunction b() {\n  return 2;\n}\nfunction c() {}\n';
    const movedGuide = Array.from({ length: 30 }, (_, i) => (i === 7 ? 'changed\n' : `guide line ${i}\n`)).join('');
    const batch = await server.call('POST', `${project.base}/files/batch`, {
      files: [
        { path: 'src/app.ts', content: newApp },
        { path: 'manual/guide.md', content: movedGuide },
        { path: 'new.txt', content: 'no newline' },
      ],
      deletes: ['docs/guide.md', 'old.txt'],
    });
    expect(batch.status).toBe(200);
    writeFileSync(join(project.dir, 'src/app.ts'), newApp);
    mkdirSync(join(project.dir, 'manual'));
    writeFileSync(join(project.dir, 'manual/guide.md'), movedGuide);
    writeFileSync(join(project.dir, 'new.txt'), 'no newline');
    rmSync(join(project.dir, 'docs'), { recursive: true });
    rmSync(join(project.dir, 'old.txt'));
    git(['add', '-A'], { cwd: project.dir });

    const expected = gitCompare(project.dir, ['--cached', head]);
    // git diff --cached shows no id for a new side whose blob is only in the index; fill ours in.
    const response = await compareApi(project, { base: 'main', head: 'worktree:main' });
    expect(response.status).toBe(200);
    expect(response.body.head).toBe('worktree:main');
    expect(response.body.merge_base).toBe(head);
    expect(normalise(response.body.files)).toEqual(expected);
    expect(expected.map((file) => `${file.status} ${file.path}`)).toEqual(['renamed manual/guide.md', 'added new.txt', 'deleted old.txt', 'modified src/app.ts']);
    // Committed, the working tree is that commit.
    await server.call('POST', `${project.base}/git/commit`, {});
    const after = await compareApi(project, { base: 'main', head: 'worktree:main' });
    expect(after.body.files).toEqual([]);
  });
});

describe('GET git/compare limits', () => {
  it('gives hunks to the first 3,000 files and lists the rest with counts only', async () => {
    const project = await createClonedProject(server, join(work.path, 'many'));
    const files = new Map<string, HistoryFile>();
    for (let i = 0; i < 3005; i++) files.set(`d${Math.floor(i / 500)}/f${String(i).padStart(4, '0')}.txt`, { mode: '100644', content: Buffer.from(`file ${i}\n`) });
    const [many] = fastImport(project.dir, [{ files, parents: [project.root], time: 1_700_000_000 }]);
    await pushBranches(project.dir, { main: many });
    const response = await compareApi(project, { base: project.root, head: 'main', context: '0' });
    expect(response.status).toBe(200);
    expect(response.body.truncated).toBe(true);
    expect(response.body.files).toHaveLength(3005);
    expect(response.body.files.filter((file: { hunks?: unknown }) => file.hunks).length).toBe(3000);
    expect(response.body.files[2999].hunks).toHaveLength(1);
    expect(response.body.files[3000].hunks).toBeUndefined();
    expect(response.body.files[3004]).toMatchObject({ status: 'added', additions: 1, deletions: 0 });
    const limited = await compareApi(project, { base: project.root, head: 'main', paths: 'd0' });
    expect(limited.body.truncated).toBe(false);
    expect(limited.body.files).toHaveLength(500);
  });

  it('stops giving hunks once the patch would pass 10 MiB', async () => {
    const project = await createClonedProject(server, join(work.path, 'big'));
    const big = (tag: string) => Buffer.from(Array.from({ length: 90_000 }, (_, i) => `${tag} ${i} ${'x'.repeat(50)}\n`).join(''));
    const files = new Map<string, HistoryFile>([
      ['a.txt', { mode: '100644', content: big('a') }],
      ['b.txt', { mode: '100644', content: big('b') }],
      ['c.txt', { mode: '100644', content: Buffer.from('small\n') }],
    ]);
    const [head] = fastImport(project.dir, [{ files, parents: [project.root], time: 1_700_000_000 }]);
    await pushBranches(project.dir, { main: head });
    const response = await compareApi(project, { base: project.root, head: 'main' });
    expect(response.status).toBe(200);
    expect(response.body.truncated).toBe(true);
    const [a, b, c] = response.body.files;
    expect(a.hunks).toHaveLength(1);
    expect(b.hunks).toBeUndefined();
    expect(b.additions).toBe(90_000);
    expect(c.hunks).toBeUndefined();
  });
});

describe('GET git/compare hostile input', () => {
  let project: ClonedProject;
  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'hostile'));
  });

  it.each([
    [{ base: 'main', head: 'nope' }, 404],
    [{ base: '../../etc/passwd', head: 'main' }, 404],
    [{ base: 'worktree:nope', head: 'main' }, 404],
    [{ base: 'worktree:', head: 'main' }, 404],
    [{ base: '0000000', head: 'main' }, 404],
    [{ base: 'main', head: 'main', context: '21' }, 400],
    [{ base: 'main', head: 'main', context: '-1' }, 400],
    [{ base: 'main', head: 'main', context: '1e9' }, 400],
    [{ base: 'main', head: 'main', context: '2.5' }, 400],
    [{ base: 'main', head: 'main', patch: 'maybe' }, 400],
    [{ base: 'main' }, 400],
    [{ base: 'x'.repeat(301), head: 'main' }, 400],
    [{ base: 'main', head: 'main', paths: '../secret' }, 400],
    [{ base: 'main', head: 'main', paths: '/etc' }, 400],
    [{ base: 'main', head: 'main', paths: 'a//b' }, 400],
    [{ base: 'main', head: 'main', paths: '.git/config' }, 400],
    [{ base: 'main', head: 'main', paths: Array.from({ length: 101 }, (_, i) => `p${i}`) }, 400],
  ])('answers %j with %i in the envelope', async (query, status) => {
    const response = await compareApi(project, query as Record<string, string>);
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(response.body.error.code).toBe(status === 404 ? 'not_found' : 'invalid_request');
  });

  it('needs a key, and is listed in the OpenAPI document', async () => {
    const response = await server.call('GET', `${project.base}/git/compare?base=main&head=main`, undefined, { key: null });
    expect(response.status).toBe(401);
    const openapi = await server.call('GET', '/api/v1/openapi.json', undefined, { key: null });
    expect(Object.keys(openapi.body.paths['/api/v1/projects/{id}/git/compare'])).toEqual(['get']);
  });
});

