/**
 * POST git/merge with `resolutions` against git itself: histories are built with git and pushed;
 * each conflicted merge is made over the API with a resolution per conflict, and in a clone with
 * `git merge`, the same resolution written into the working tree, `git add`/`git rm`, `git commit`.
 * The two merge commits must have the same tree and parents, and a clone of the server's result
 * must pass `git fsck --strict`.
 *
 * "The same resolution" in git: the conflict's unmerged entries (its path, and the versions git moved
 * aside to `<path>~<branch>`) are removed, and for `content` the file is written where git left it
 * (the conflict's path, or the moved-aside path when a directory took the path), keeping the mode
 * git gave it (a symlink is rewritten as a symlink to the content). `git merge` calls the target
 * side "HEAD" in those names where the API uses the target branch's name (as `git merge-tree` and
 * merge preview do), so a file kept under `<path>~HEAD` is renamed to `<path>~<target>`.
 */
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedGitEnv } from '../../fixtures/gitEnv.js';
import { git, gitAsyncOk, scratchDir } from '../support/git.js';
import { createClonedProject, fastImport, pushBranches, remoteUrl, type ClonedProject, type FileMode, type HistoryFile } from '../support/history.js';
import { projectState } from '../support/projectState.js';
import { Random } from '../support/randomHistory.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const work = scratchDir('treehouse-resolutions-');
let project: ClonedProject;
beforeAll(async () => {
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
  project = await createClonedProject(server, join(work.path, 'clone'));
});
afterAll(async () => {
  await server.close();
  work.remove();
});

const SEED = Number(process.env.RESOLUTIONS_SEED ?? 1618);
const RUNS = Number(process.env.RESOLUTIONS_RUNS ?? 30);

type Tree = Map<string, HistoryFile>;
type Resolution = { path: string; content: string } | { path: string; delete: true };

const file = (content: string | Buffer, mode: FileMode = '100644'): HistoryFile => ({ mode, content: Buffer.isBuffer(content) ? content : Buffer.from(content) });
const text = (...lines: string[]) => file(lines.map((line) => `${line}\n`).join(''));
const tree = (entries: Record<string, HistoryFile>): Tree => new Map(Object.entries(entries));

let nextTime = 1_700_000_000;
let caseNumber = 0;
/** Merge commits made over the API. */
let apiMerges = 0;

/** Pushes base, target and source commits as branches `t-N` and `s-N`; returns their names and ids. */
async function pushCase(base: Tree, target: Tree, source: Tree) {
  const n = caseNumber++;
  const time = (nextTime += 10);
  const [, targetOid, sourceOid] = fastImport(project.dir, [
    { files: base, parents: [project.root], time },
    { files: target, parents: [0], time: time + 1 },
    { files: source, parents: [0], time: time + 2 },
  ]);
  const names = { target: `t-${n}`, source: `s-${n}` };
  await pushBranches(project.dir, { [names.target]: targetOid, [names.source]: sourceOid });
  return { ...names, targetOid, sourceOid };
}

/** Unmerged paths of the clone's index. */
function unmerged(): string[] {
  const listed = git(['ls-files', '-u', '-z'], { cwd: project.dir }).split('\0').filter(Boolean);
  return [...new Set(listed.map((line) => line.slice(line.indexOf('\t') + 1)))].sort();
}

/** `git merge` of source into target in the clone, resolved as the API resolutions say; returns the commit. */
function mergeInGit(c: { target: string; source: string; targetOid: string; sourceOid: string }, resolutions: readonly Resolution[]): string {
  const dir = project.dir;
  git(['checkout', '-q', '-f', '-B', c.target, c.targetOid], { cwd: dir });
  git(['clean', '-q', '-f', '-d', '-x'], { cwd: dir });
  git(['branch', '-f', c.source, c.sourceOid], { cwd: dir });
  const merge = spawnSync('git', ['merge', '--no-edit', c.source], { cwd: dir, env: isolatedGitEnv() });
  expect(merge.status, `git merge: ${merge.stdout}${merge.stderr}`).toBe(1);
  const left = unmerged();
  for (const resolution of resolutions) {
    const entries = left.filter((path) => path === resolution.path || path.startsWith(`${resolution.path}~`));
    if ('delete' in resolution) {
      for (const path of entries) git(['rm', '-q', '-f', '--', path], { cwd: dir });
      continue;
    }
    // Where git left the file: the conflict's path, unless a directory now holds it.
    const directoryThere = git(['ls-files', '-z', '--', `${resolution.path}/`], { cwd: dir }).length > 0;
    const at = directoryThere ? entries.find((path) => path !== resolution.path)! : resolution.path;
    const full = join(dir, at);
    mkdirSync(dirname(full), { recursive: true });
    if (existsSync(full) && lstatSync(full).isSymbolicLink()) {
      unlinkSync(full);
      symlinkSync(resolution.content, full);
    } else {
      // Writing over the file keeps the mode git gave it (an executable stays one).
      writeFileSync(full, resolution.content);
    }
    git(['add', '--', at], { cwd: dir });
    for (const path of entries.filter((path) => path !== at)) git(['rm', '-q', '-f', '--', path], { cwd: dir });
    if (at.endsWith('~HEAD')) git(['mv', at, `${at.slice(0, -'HEAD'.length)}${c.target}`], { cwd: dir });
  }
  expect(unmerged(), 'git has conflicts no resolution covered').toEqual([]);
  git(['commit', '-q', '--no-edit'], { cwd: dir });
  return git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
}

/** The conflicted paths POST git/merge reports (changing nothing), then the merge with resolutions. */
async function mergeOverApi(c: { target: string; source: string }, resolve: (conflicts: Array<{ path: string; kind: string }>) => Resolution[]) {
  const before = await projectState(server, project.base, [c.target, c.source]);
  const conflicted = await server.call('POST', `${project.base}/git/merge`, { source: c.source, target: c.target });
  expect(conflicted.status, JSON.stringify(conflicted.body)).toBe(409);
  expect(await projectState(server, project.base, [c.target, c.source])).toEqual(before);
  const conflicts = conflicted.body.error.details.conflicts as Array<{ path: string; kind: string }>;
  const resolutions = resolve(conflicts);
  const merged = await server.call('POST', `${project.base}/git/merge`, { source: c.source, target: c.target, resolutions });
  return { conflicts, resolutions, merged };
}

/** Merges over the API and in git with the same resolutions and compares the two commits. */
async function expectSameAsGit(base: Tree, target: Tree, source: Tree, resolve: (conflicts: Array<{ path: string; kind: string }>) => Resolution[]) {
  const c = await pushCase(base, target, source);
  const { conflicts, resolutions, merged } = await mergeOverApi(c, resolve);
  expect(merged.status, JSON.stringify(merged.body)).toBe(201);
  apiMerges++;
  const shown = (await server.call('GET', `${project.base}/git/commits/${merged.body.merge.oid}?content=false`)).body.commit;
  const ours = mergeInGit(c, resolutions);
  expect(shown.parent_oids).toEqual([c.targetOid, c.sourceOid]);
  expect(git(['rev-parse', `${ours}^1`, `${ours}^2`], { cwd: project.dir }).trim().split('\n')).toEqual([c.targetOid, c.sourceOid]);
  expect(shown.tree_oid, `${c.target} <- ${c.source}: ${JSON.stringify(conflicts)} resolved ${JSON.stringify(resolutions)}`).toBe(git(['rev-parse', `${ours}^{tree}`], { cwd: project.dir }).trim());
  return conflicts;
}

const lines12 = (tag: string) => Array.from({ length: 12 }, (_, i) => `${tag} line ${i}`);
const edited = (tag: string, at: number, change: string) => text(...lines12(tag).map((line, i) => (i === at ? change : line)));

describe('POST git/merge with resolutions equals git merge with the same resolution', () => {
  it('content, add/add, modify/delete both ways, binary and executable conflicts', async () => {
    const base = tree({ 'doc.txt': text(...lines12('doc')), 'run.sh': file('echo base\n', '100755'), 'ours-deleted.txt': text('o'), 'theirs-deleted.txt': text('t'), 'img.bin': file(Buffer.from([0, 1, 2])) });
    const target = tree({ 'doc.txt': edited('doc', 5, 'main'), 'run.sh': file('echo main\n', '100755'), 'theirs-deleted.txt': text('t', 'main'), 'both.txt': text('main'), 'img.bin': file(Buffer.from([0, 1, 3])) });
    const source = tree({ 'doc.txt': edited('doc', 5, 'topic'), 'run.sh': file('echo topic\n', '100755'), 'ours-deleted.txt': text('o', 'topic'), 'both.txt': text('topic'), 'img.bin': file(Buffer.from([0, 1, 4])) });
    const conflicts = await expectSameAsGit(base, target, source, (found) =>
      found.map(({ path }) => (path === 'ours-deleted.txt' ? { path, delete: true } : { path, content: `resolved ${path}\n` })),
    );
    expect(conflicts).toEqual([
      { path: 'both.txt', kind: 'add/add' },
      { path: 'doc.txt', kind: 'content' },
      { path: 'img.bin', kind: 'binary' },
      { path: 'ours-deleted.txt', kind: 'modify/delete' },
      { path: 'run.sh', kind: 'content' },
      { path: 'theirs-deleted.txt', kind: 'modify/delete' },
    ]);
    // The same conflicts resolved the other way round.
    await expectSameAsGit(base, target, source, (found) => found.map(({ path }) => (path === 'ours-deleted.txt' ? { path, content: 'kept\n' } : { path, delete: true })));
  });

  it('file/directory: the file git moved aside takes the content, or goes', async () => {
    const base = tree({ d: text('file'), keep: text('k') });
    const fileInSource = { target: tree({ 'd/inner.txt': text('dir'), keep: text('k') }), source: tree({ d: text('file', 'topic'), keep: text('k') }) };
    const fileInTarget = { target: fileInSource.source, source: fileInSource.target };
    for (const sides of [fileInSource, fileInTarget]) {
      for (const resolution of [{ content: 'moved aside\n' }, { delete: true as const }]) {
        const conflicts = await expectSameAsGit(base, sides.target, sides.source, (found) => found.map(({ path }) => ({ path, ...resolution })));
        expect(conflicts).toEqual([{ path: 'd', kind: 'file/directory' }]);
      }
    }
  });

  it('a rename on one side and a delete or a change on the other', async () => {
    const base = tree({ 'old.txt': text(...lines12('r')), 'x.txt': text(...lines12('x')) });
    const renamedAndDeleted = { target: tree({ 'new.txt': text(...lines12('r')), 'x.txt': text(...lines12('x')) }), source: tree({ 'x.txt': text(...lines12('x')) }) };
    const conflicts = await expectSameAsGit(base, renamedAndDeleted.target, renamedAndDeleted.source, (found) => found.map(({ path }) => ({ path, content: 'after rename\n' })));
    expect(conflicts).toEqual([{ path: 'new.txt', kind: 'modify/delete' }]);
    const renamedAndEdited = { target: tree({ 'new.txt': edited('r', 3, 'main'), 'x.txt': text(...lines12('x')) }), source: tree({ 'old.txt': edited('r', 3, 'topic'), 'x.txt': text(...lines12('x')) }) };
    await expectSameAsGit(base, renamedAndEdited.target, renamedAndEdited.source, (found) => found.map(({ path }) => ({ path, delete: true })));
  });

  it('a file against a symlink (distinct types): content stays at the path, as the symlink it is there', async () => {
    const base = tree({ link: text('plain'), other: text('o') });
    const target = tree({ link: text('plain', 'main'), other: text('o') });
    const source = tree({ link: file('other', '120000'), other: text('o') });
    for (const resolution of [{ content: 'other' }, { delete: true as const }]) {
      const conflicts = await expectSameAsGit(base, target, source, (found) => found.map(({ path }) => ({ path, ...resolution })));
      expect(conflicts.map((conflict) => conflict.path)).toEqual(['link']);
    }
  });

  it('a submodule both sides moved: delete resolves it; content is a 409 path_conflict that changes nothing', async () => {
    const gitlink = (hex: string) => file(hex, '160000');
    const base = tree({ sub: gitlink('1'.repeat(40)), a: text('a') });
    const target = tree({ sub: gitlink('2'.repeat(40)), a: text('a') });
    const source = tree({ sub: gitlink('3'.repeat(40)), a: text('a') });
    const c = await pushCase(base, target, source);
    const before = await projectState(server, project.base, [c.target, c.source]);
    const refused = await server.call('POST', `${project.base}/git/merge`, { source: c.source, target: c.target, resolutions: [{ path: 'sub', content: 'x' }] });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'path_conflict', details: { paths: ['sub'] } });
    expect(await projectState(server, project.base, [c.target, c.source])).toEqual(before);
    await expectSameAsGit(base, target, source, (found) => found.map(({ path }) => ({ path, delete: true })));
  });

  it('a conflict about a directory (directory rename split): delete keeps the merged tree there, content is a 409', async () => {
    const base = tree({ 'dir/a': text('a'), 'dir/b': text('b'), keep: text('k') });
    const target = tree({ 'x/a': text('a'), 'y/b': text('b'), keep: text('k') });
    const source = tree({ 'dir/a': text('a'), 'dir/b': text('b'), 'dir/c': text('c'), keep: text('k') });
    const c = await pushCase(base, target, source);
    const before = await projectState(server, project.base, [c.target, c.source]);
    const refused = await server.call('POST', `${project.base}/git/merge`, { source: c.source, target: c.target, resolutions: [{ path: 'dir', content: 'x' }] });
    expect(refused.body.error).toMatchObject({ code: 'path_conflict', details: { paths: ['dir'] } });
    expect(await projectState(server, project.base, [c.target, c.source])).toEqual(before);
    const conflicts = await expectSameAsGit(base, target, source, (found) => found.map(({ path }) => ({ path, delete: true })));
    expect(conflicts).toEqual([{ path: 'dir', kind: 'file/directory' }]);
  });

  it(`random conflicted merges (${RUNS} runs, seed ${SEED})`, async () => {
    const kinds = new Set<string>();
    let merges = 0;
    for (const seed of fc.sample(fc.nat(), { seed: SEED, numRuns: RUNS })) {
      const { base, target, source } = scenario(seed);
      const c = await pushCase(base, target, source);
      const preview = await server.call('POST', `${project.base}/git/merge/preview`, { source: c.source, target: c.target });
      expect(preview.status, JSON.stringify(preview.body)).toBe(200);
      if (preview.body.clean) continue;
      const random = new Random(seed);
      const { conflicts, resolutions, merged } = await mergeOverApi(c, (found) =>
        found.map(({ path }) => (random.chance(40) ? { path, delete: true } : { path, content: `resolved ${seed} ${path}\n` })),
      );
      conflicts.forEach((conflict) => kinds.add(conflict.kind));
      expect(merged.status, JSON.stringify(merged.body)).toBe(201);
      apiMerges++;
      const shown = (await server.call('GET', `${project.base}/git/commits/${merged.body.merge.oid}?content=false`)).body.commit;
      const ours = mergeInGit(c, resolutions);
      expect(shown.tree_oid, `seed ${seed}: ${JSON.stringify(conflicts)} resolved ${JSON.stringify(resolutions)}`).toBe(git(['rev-parse', `${ours}^{tree}`], { cwd: project.dir }).trim());
      expect(shown.parent_oids).toEqual([c.targetOid, c.sourceOid]);
      merges++;
    }
    // The sample must reach the kinds of conflict it is meant to exercise.
    expect(merges).toBeGreaterThan(RUNS / 3);
    expect([...kinds].sort()).toEqual(expect.arrayContaining(['add/add', 'content', 'file/directory', 'modify/delete']));
  });

  it('leaves a history that git fsck --strict accepts in a fresh clone', async () => {
    const clone = join(work.path, 'fsck');
    await gitAsyncOk(['clone', '-q', '--mirror', remoteUrl(server, project.id), clone]);
    git(['fsck', '--strict', '--no-dangling'], { cwd: clone });
    const merges = git(['rev-list', '--all', '--merges'], { cwd: clone }).trim().split('\n').filter(Boolean);
    expect(apiMerges).toBeGreaterThan(RUNS / 3);
    expect(merges.length).toBe(apiMerges);
  });
});

/** Random sides of a merge: edits in regions that overlap or not, deletes, mode changes, adds, root-level moves, a file replaced by a directory. */
function scenario(seed: number): { base: Tree; target: Tree; source: Tree } {
  const random = new Random(seed);
  let counter = 0;
  const fresh = (n: number) => Array.from({ length: n }, () => `line ${seed}-${counter++}`);
  const base: Tree = new Map();
  for (const path of ['a.txt', 'b.txt', 'src/c.ts', 'run.sh', 'bin/f.dat', 'd', '\u00e9.txt']) {
    if (!random.chance(75)) continue;
    if (path.endsWith('.dat')) base.set(path, file(Buffer.concat([Buffer.from([0, 1]), Buffer.from(fresh(2).join(''))])));
    else base.set(path, file(fresh(12).map((line) => `${line}\n`).join(''), path.endsWith('.sh') ? '100755' : '100644'));
  }
  const side = (): Tree => {
    const next: Tree = new Map(base);
    for (const [path, version] of base) {
      const roll = random.below(100);
      if (roll < 45) {
        if (path.endsWith('.dat')) next.set(path, file(Buffer.concat([Buffer.from([0, 9]), Buffer.from(fresh(1).join(''))])));
        else {
          const lines = version.content.toString('utf8').split('\n').slice(0, -1);
          const at = 4 * random.below(3) + random.below(2);
          lines.splice(at, 1 + random.below(2), ...fresh(1 + random.below(2)));
          next.set(path, file(lines.map((line) => `${line}\n`).join(''), version.mode));
        }
      } else if (roll < 53) next.delete(path);
      else if (roll < 58) next.set(path, { ...version, mode: version.mode === '100755' ? '100644' : '100755' });
      else if (roll < 63 && !path.includes('/')) {
        next.delete(path);
        next.set(`moved/${path}`, version);
      } else if (roll < 75 && path === 'd') {
        next.delete(path);
        next.set('d/inner.txt', text(...fresh(2)));
      }
    }
    if (random.chance(35)) next.set(random.pick(['new.txt', 'src/new.ts']), text(...fresh(3)));
    return next;
  };
  return { base, target: side(), source: side() };
}
