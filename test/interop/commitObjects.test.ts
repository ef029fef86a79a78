/**
 * Commit object lists (src/git/introducedObjects.ts), differential against git: a random history
 * with branches, merges, renames and type changes is pushed, and seeded from `git http-backend`.
 * Every commit that came in a pack is indexed; its list is exactly the objects `git diff-tree -r -t`
 * shows as new against the first parent (the whole tree for a root), each tree before its entries;
 * a clone planned from the lists sends exactly `git rev-list --objects --all`, as the tree walk does,
 * and the cloned repository is `git fsck --strict` clean.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OBJECT_RECORD_BYTES } from '../../src/git/introducedObjects.js';
import { oidFromHex, type Oid } from '../../src/git/oid.js';
import { planPack } from '../../src/repo/wire/packObjects.js';
import type { ProjectReads } from '../../src/store/asyncTypes.js';
import { git, gitAsyncOk, scratchDir } from '../support/git.js';
import { createClonedProject, fastImport, pushBranches, remoteUrl, type ClonedProject } from '../support/history.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { randomHistory } from '../support/randomHistory.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let backend: GitHttpBackend;
let project: ClonedProject;
let pushed: string[] = [];
const work = scratchDir('treehouse-commitobjects-');
const upstreamRoot = join(work.path, 'upstream');

beforeAll(async () => {
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  project = await createClonedProject(server, join(work.path, 'clone'));
  const history = randomHistory(31, { commits: 80, rootParent: project.root, startTime: 1_700_000_000 });
  pushed = fastImport(project.dir, history.commits);
  const tips = Object.fromEntries([...history.branches].map(([branch, index]) => [branch, pushed[index]]));
  await pushBranches(project.dir, tips);
  // A push is answered before its commits' object lists are stored.
  await server.th.git.idle();
  mkdirSync(upstreamRoot);
  git(['clone', '-q', '--bare', '--mirror', project.dir, join(upstreamRoot, 'seed.git')]);
  backend = await startGitHttpBackend(upstreamRoot);
});

afterAll(async () => {
  await Promise.all([server?.close(), backend?.close()]);
  work.remove();
});

async function projectNumber(id: string): Promise<number> {
  return (await server.th.store.read((tx) => tx.getRecord<{ seq: number }>(`project/${id}`)))!.seq;
}

async function read<T>(id: string, action: (tx: ProjectReads) => Promise<T>): Promise<T> {
  const seq = await projectNumber(id);
  return server.th.store.read((tx) => action(tx.project(seq)));
}

/** A list as "type id" lines, in its order. */
function records(list: Buffer): string[] {
  const out: string[] = [];
  for (let at = 0; at < list.length; at += OBJECT_RECORD_BYTES) out.push(`${list[at] === 2 ? 'tree' : 'blob'} ${list.toString('hex', at + 1, at + OBJECT_RECORD_BYTES)}`);
  return out;
}

/** What git says the commit brings over its first parent: its tree if that differs, and each new id diff-tree shows. */
function gitIntroduced(dir: string, commit: string): string[] {
  const tree = git(['rev-parse', `${commit}^{tree}`], { cwd: dir }).trim();
  const parents = git(['rev-list', '--parents', '-n', '1', commit], { cwd: dir }).trim().split(' ').slice(1);
  const parentTree = parents.length > 0 ? git(['rev-parse', `${parents[0]}^{tree}`], { cwd: dir }).trim() : null;
  if (tree === parentTree) return [];
  const lines = parentTree
    ? git(['diff-tree', '-r', '-t', '--no-renames', '--no-commit-id', parents[0], commit], { cwd: dir })
    : git(['ls-tree', '-r', '-t', commit], { cwd: dir }).replace(/^(\d+) (\w+) (\w+)\t/gm, ':000000 $1 0000000000000000000000000000000000000000 $3 A\t');
  const found = new Set([`tree ${tree}`]);
  for (const line of lines.split('\n').filter(Boolean)) {
    const [meta] = line.split('\t');
    const [, newMode, oldId, newId, status] = meta.split(' ');
    if (status === 'D' || newMode === '160000' || newId === oldId) continue;
    found.add(`${newMode === '040000' ? 'tree' : 'blob'} ${newId}`);
  }
  return [...found].sort();
}

function revListObjects(dir: string, refs: string[]): string[] {
  return git(['rev-list', '--objects', ...refs], { cwd: dir })
    .trim()
    .split('\n')
    .map((line) => line.slice(0, 40))
    .sort();
}

async function planned(tx: ProjectReads, wants: Oid[]): Promise<string[]> {
  const plan = await planPack(tx, { wants, haves: [] });
  return [...plan.objects].map((object) => object.oid.toString('hex')).sort();
}

/** The same reads with no commit object lists: the planner walks every tree. */
const withoutLists = (tx: ProjectReads): ProjectReads => new Proxy(tx, { get: (target, key) => (key === 'getCommitObjects' ? async () => undefined : Reflect.get(target, key)) });

describe('commit object lists', () => {
  it("index every pushed commit with exactly what git diff-tree shows new against the first parent, each tree before its entries", async () => {
    let compared = 0;
    let merges = 0;
    for (const commit of new Set(pushed)) {
      const list = await read(project.id, (tx) => tx.getCommitObjects(oidFromHex(commit)));
      expect(list, commit).toBeDefined();
      const ours = records(list!);
      expect(new Set(ours).size).toBe(ours.length);
      expect([...ours].sort()).toEqual(gitIntroduced(project.dir, commit));
      // A tree's entries come after it: every listed object but the root is named by a tree listed before it.
      const listedTrees = ours.filter((record) => record.startsWith('tree '));
      for (const [index, record] of ours.entries()) {
        if (index === 0) continue;
        const namers = listedTrees.slice(0, ours.slice(0, index).filter((earlier) => earlier.startsWith('tree ')).length);
        const id = record.slice(5);
        expect(namers.some((tree) => git(['ls-tree', tree.slice(5)], { cwd: project.dir }).includes(id)), `${commit} ${record}`).toBe(true);
      }
      compared++;
      if (git(['rev-list', '--parents', '-n', '1', commit], { cwd: project.dir }).trim().split(' ').length > 2) merges++;
    }
    expect(compared).toBeGreaterThanOrEqual(60);
    expect(merges).toBeGreaterThan(0);
  });

  it('plan a clone that sends exactly git rev-list --objects --all, as the tree walk does', async () => {
    const tips = await read(project.id, async (tx) => (await tx.listRefs('refs/heads/')).map((ref) => ref.oid));
    const expected = revListObjects(project.dir, ['--all']);
    const reads = server.th.store;
    const seq = await projectNumber(project.id);
    expect(await reads.read((tx) => planned(tx.project(seq), tips))).toEqual(expected);
    expect(await reads.read((tx) => planned(withoutLists(tx.project(seq)), tips))).toEqual(expected);
    const target = join(work.path, 'cloned.git');
    await gitAsyncOk(['clone', '-q', '--bare', remoteUrl(server, project.id), target]);
    git(['fsck', '--strict', '--no-dangling'], { cwd: target });
    expect(revListObjects(target, ['--all'])).toEqual(expected);
  });

  it('let the checker forget the lists of a seed that is not kept', async () => {
    // A pack too large to check inline: it goes to the checker's worker.
    const dir = join(work.path, 'large');
    git(['init', '-q', '--initial-branch=main', dir]);
    writeFileSync(join(dir, 'noise.bin'), randomBytes(256 * 1024));
    git(['add', '-A'], { cwd: dir });
    git(['commit', '-q', '-m', 'Large'], { cwd: dir });
    git(['clone', '-q', '--bare', dir, join(upstreamRoot, 'large.git')]);
    const handle = `taken-${Date.now()}`;
    expect((await server.call('POST', '/api/v1/projects', { title: 'First', handle })).status).toBe(201);
    // The history is fetched, checked and stored before the handle is found taken.
    const refused = await server.call('POST', '/api/v1/projects', { title: 'Second', handle, source: { kind: 'git', url: `${backend.url}/large.git` } });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    const checker = server.th.packChecker;
    expect(checker.started).toBe(true);
    for (let waited = 0; checker.jobsPending > 0; waited += 20) {
      // Far less than the minute the checker would wait for a receiver that never says.
      expect(waited).toBeLessThan(5_000);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });

  it('index a seeded history, whose clone is fsck-clean and complete', async () => {
    const created = await server.call('POST', '/api/v1/projects', { title: 'Seeded', source: { kind: 'git', url: `${backend.url}/seed.git` } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.project.id as string;
    // A seed is answered before its commits' object lists are stored.
    await server.th.creation.idle();
    const head = git(['rev-parse', 'HEAD'], { cwd: project.dir }).trim();
    const mainHistory = git(['rev-list', head], { cwd: project.dir }).trim().split('\n');
    for (const commit of mainHistory) {
      const list = await read(id, (tx) => tx.getCommitObjects(oidFromHex(commit)));
      expect(list, commit).toBeDefined();
      expect(records(list!).sort()).toEqual(gitIntroduced(project.dir, commit));
    }
    const target = join(work.path, 'seeded.git');
    await gitAsyncOk(['clone', '-q', '--bare', remoteUrl(server, id), target]);
    git(['fsck', '--strict', '--no-dangling'], { cwd: target });
    expect(revListObjects(target, ['--all'])).toEqual(revListObjects(project.dir, [head]));
  });
});
