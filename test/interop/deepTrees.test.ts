/**
 * Tree depth (README "Tree depth"): git's core.maxTreeDepth, 4,096 path components, is enforced on
 * API paths, moves, pushes and seeds, and every walk of a tree is iterative, so a tree as deep as the
 * limit works end to end and a deeper one stored before the limit existed still lists, lints and clones.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCommit } from '../../src/git/commit.js';
import { oidFromHex, oidToHex } from '../../src/git/oid.js';
import { encodeTree } from '../../src/git/tree.js';
import { resetWorkingTree } from '../../src/repo/worktree/moveWorkingTree.js';
import { git, gitAsync, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { WorkingTree } from '../../src/repo/worktree/workingTree.js';

const work = scratchDir('treehouse-deep-');
const reposRoot = join(work.path, 'repos');
const deepRepo = join(work.path, 'deep.git');
let deepCommit: string;
let server: TestServer;
let backend: GitHttpBackend;
beforeAll(async () => {
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  backend = await startGitHttpBackend(reposRoot);
  // One history for the tests that push: a root commit with a file exactly DEPTH_MAX deep, all
  // of its trees made by git fast-import.
  git(['init', '-q', '--bare', deepRepo]);
  const stream = [
    'commit refs/heads/deep',
    'committer Pusher <pusher@example.com> 1700000000 +0000',
    'data 4',
    'deep',
    `M 100644 inline ${deepPath(DEPTH_MAX)}`,
    'data 13',
    'at the limit',
    'M 100644 inline a.txt',
    'data 2',
    'a',
    '',
  ].join('\n');
  git(['fast-import', '--quiet'], { cwd: deepRepo, input: stream });
  deepCommit = git(['rev-parse', 'deep'], { cwd: deepRepo }).trim();
});
afterAll(async () => {
  await Promise.all([server?.close(), backend?.close()]);
  work.remove();
});

/** git's core.maxTreeDepth default (git 2.47+): the most path components a name may have. */
const DEPTH_MAX = 4096;
const author = ['-c', 'user.name=Pusher', '-c', 'user.email=pusher@example.com'];
/** A path of `components` components: "a/a/…/f". */
const deepPath = (components: number, leaf = 'f') => [...Array(components - 1).fill('a'), leaf].join('/');

function remoteUrl(projectId: string): string {
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

async function api(method: string, path: string, body?: unknown, expected = 200) {
  const response = await server.call(method, path, body);
  expect(response.status, JSON.stringify(response.body).slice(0, 500)).toBe(expected);
  return response.body;
}

async function newProject(files: Record<string, string> = { 'a.txt': 'a\n' }): Promise<string> {
  const created = await api('POST', '/api/v1/projects', { title: 'Deep', source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) } }, 201);
  return created.project.id;
}

/** A bare clone (a checkout could not create paths longer than PATH_MAX), checked by git fsck --strict. */
async function cloneAndFsck(id: string, name: string): Promise<string> {
  const dir = join(work.path, name);
  await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', '--bare', remoteUrl(id), dir]);
  git(['fsck', '--strict', '--no-dangling'], { cwd: dir });
  return dir;
}

describe('tree depth', () => {
  it('refuses API paths and moves that would be deeper than 4,096 components, writing nothing', async () => {
    const id = await newProject();
    const base = `/api/v1/projects/${id}`;
    const refused = await server.call('POST', `${base}/files/batch`, { files: [{ path: deepPath(5000), content: 'x' }] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('invalid_request');

    // A directory pushed with git whose files are exactly at the limit: it may move sideways, not down.
    await gitAsyncOk(['push', '-q', remoteUrl(id), 'deep:refs/heads/deep'], { cwd: deepRepo });
    const tooDeep = await server.call('POST', `${base}/files/move`, { branch: 'deep', from: 'a', to: 'b/a' });
    expect(tooDeep.status, JSON.stringify(tooDeep.body).slice(0, 300)).toBe(400);
    expect(tooDeep.body.error.message).toContain(String(DEPTH_MAX));
    expect((await api('GET', `${base}/files?branch=deep`)).files.map((file: { path: string }) => file.path)).toEqual(['a.txt', deepPath(DEPTH_MAX)]);
    await api('POST', `${base}/files/move`, { branch: 'deep', from: 'a', to: 'c' });
    expect((await api('GET', `${base}/files?branch=deep`)).files.map((file: { path: string }) => file.path)).toEqual(['a.txt', `c/${deepPath(DEPTH_MAX - 1)}`]);
  });

  it('takes the deepest path the 4,096-byte path limit allows through the API, lint, commit and clone', async () => {
    const id = await newProject({ 'index.js': 'export const a = 1;\n' });
    const base = `/api/v1/projects/${id}`;
    const path = deepPath(2047, 'f.js');
    const deepest = deepPath(2048, 'g');
    expect(Buffer.byteLength(path)).toBe(4096);
    await api('POST', `${base}/files/batch`, { files: [{ path, content: 'export const deep = 1;\n' }] });
    expect((await api('GET', `${base}/files`)).files.map((file: { path: string }) => file.path)).toEqual([path, 'index.js']);
    expect((await api('GET', `${base}/file?path=${encodeURIComponent(path)}`)).content).toBe('export const deep = 1;\n');
    expect(await api('POST', `${base}/lint`, {})).toMatchObject({ success: true, totalFiles: 2 });
    await api('POST', `${base}/files/batch`, { files: [{ path: deepest, content: 'g\n' }] });
    const committed = (await api('POST', `${base}/git/commit`, { message: 'deep' }, 201)).commit.oid as string;
    const dir = await cloneAndFsck(id, 'api-deep');
    expect(git(['rev-parse', 'HEAD'], { cwd: dir }).trim()).toBe(committed);
    expect(git(['ls-tree', '-r', '--name-only', 'HEAD'], { cwd: dir }).trim().split('\n')).toEqual([path, deepest, 'index.js'].sort());
  });

  it('takes a pushed tree exactly 4,096 deep end to end, and refuses one a level deeper', async () => {
    const id = await newProject();
    const base = `/api/v1/projects/${id}`;
    await gitAsyncOk(['push', '-q', remoteUrl(id), 'deep:refs/heads/deep'], { cwd: deepRepo });
    const deepest = deepPath(DEPTH_MAX);
    expect((await api('GET', `${base}/files?branch=deep`)).files.map((file: { path: string }) => file.path)).toEqual(['a.txt', deepest]);
    expect(await api('POST', `${base}/lint`, { branch: 'deep' })).toMatchObject({ success: true });
    await api('POST', `${base}/files/batch`, { branch: 'deep', files: [{ path: 'b.txt', content: 'b\n' }] });
    const committed = (await api('POST', `${base}/git/commit`, { branch: 'deep' }, 201)).commit.oid as string;
    const cloned = await cloneAndFsck(id, 'push-clone');
    expect(git(['rev-parse', 'deep~1'], { cwd: cloned }).trim()).toBe(deepCommit);
    expect(git(['rev-parse', 'deep'], { cwd: cloned }).trim()).toBe(committed);
    const dir = cloned;

    // One more level: the same tree under "x/". The push is refused whole and the branch stays.
    const root = git(['rev-parse', 'deep^{tree}'], { cwd: dir }).trim();
    const wrapped = git(['mktree'], { cwd: dir, input: `040000 tree ${root}\tx\n` }).trim();
    const deeper = git([...author, 'commit-tree', wrapped, '-p', committed, '-m', 'too deep'], { cwd: dir }).trim();
    const refused = await gitAsync(['push', remoteUrl(id), `${deeper}:refs/heads/deep`], { cwd: dir });
    expect(refused.status).not.toBe(0);
    expect(refused.output).toContain('maxTreeDepth');
    expect((await api('GET', `${base}/git/log?branch=deep&limit=1`)).commits[0].oid).toBe(committed);

    // The same history as a git seed: refused (400), and no project is made.
    const upstream = join(reposRoot, 'too-deep.git');
    initBareRepo(upstream);
    git(['push', '-q', upstream, `${deeper}:refs/heads/main`], { cwd: dir });
    const before = (await api('GET', '/api/v1/projects?limit=200')).projects.length;
    const seeded = await server.call('POST', '/api/v1/projects', { title: 'Too deep', source: { kind: 'git', url: `${backend.url}/too-deep.git` } });
    expect(seeded.status).toBe(400);
    expect(seeded.body.error.message).toContain(String(DEPTH_MAX));
    expect((await api('GET', '/api/v1/projects?limit=200')).projects.length).toBe(before);
  });

  it('still lists, shows, lints, merges and clones a deeper tree stored before the limit', async () => {
    const id = await newProject();
    const base = `/api/v1/projects/${id}`;
    const depth = 5_000;
    const repo = server.th.projects.repo(await server.th.projects.get((await server.th.accounts.authenticate(server.key))!, id));
    const head = (await api('GET', `${base}/git/log?limit=1`)).commits[0].oid as string;
    // Stored as a push before the limit would have stored it, bypassing today's checks.
    const legacy = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      let tree = tx.putObject('tree', encodeTree([{ name: 'f.txt', mode: '100644', oid: tx.putObject('blob', Buffer.from('bottom\n')) }]));
      for (let level = 1; level < depth; level++) tree = tx.putObject('tree', encodeTree([{ name: 'a', mode: '40000', oid: tree }]));
      const root = tx.putObject('tree', encodeTree([{ name: 'a', mode: '40000', oid: tree }, { name: 'a.txt', mode: '100644', oid: tx.putObject('blob', Buffer.from('a\n')) }]));
      const signature = { name: 'Old', email: 'old@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      const commit = tx.putObject('commit', encodeCommit({ tree: root, parents: [oidFromHex(head)], author: signature, committer: signature, extraHeaders: [], message: 'legacy\n' }));
      await tx.casRef('refs/heads/main', oidFromHex(head), commit);
      await resetWorkingTree(tx, 'main', root);
      return oidToHex(commit);
    });
    const deepest = `${deepPath(depth + 1, 'f.txt')}`;
    expect((await api('GET', `${base}/files`)).files.map((file: { path: string }) => file.path)).toEqual(['a.txt', deepest]);
    expect((await api('GET', `${base}/git/commits/${legacy}?content=false`)).commit.files.map((file: { path: string }) => file.path)).toEqual(['a.txt', deepest]);
    expect(await api('POST', `${base}/lint`, {})).toMatchObject({ success: true });
    await api('POST', `${base}/git/branches`, { name: 'side' }, 201);
    await api('POST', `${base}/files/batch`, { branch: 'side', files: [{ path: 'side.txt', content: 's\n' }] });
    await api('POST', `${base}/git/commit`, { branch: 'side' }, 201);
    await api('POST', `${base}/files/batch`, { files: [{ path: 'main.txt', content: 'm\n' }] });
    await api('POST', `${base}/git/commit`, {}, 201);
    await api('POST', `${base}/git/merge`, { source: 'side' }, 201);
    const dir = join(work.path, 'legacy-clone');
    await gitAsyncOk(['clone', '-q', '--bare', remoteUrl(id), dir]);
    expect(git(['cat-file', '-t', legacy], { cwd: dir }).trim()).toBe('commit');
    expect(git(['rev-parse', 'HEAD'], { cwd: dir }).trim()).toBe((await api('GET', `${base}/git/log?limit=1`)).commits[0].oid);

    // A merge that would write paths that deep is refused, and nothing changes.
    const bottom = deepPath(depth, 'x');
    const writeAtBottom = (branch: string, name: string) =>
      repo.store.write(async (store) => {
        const tree = await WorkingTree.open(store.project(repo.project), branch);
        await tree.load([`${bottom.slice(0, -1)}${name}`]);
        tree.setFile(`${bottom.slice(0, -1)}${name}`, { oid: store.project(repo.project).putObject('blob', Buffer.from(name)), size: name.length, locked: false });
        tree.save();
      });
    await writeAtBottom('side', 's.txt');
    await api('POST', `${base}/git/commit`, { branch: 'side' }, 201);
    await writeAtBottom('main', 'm.txt');
    const mainHead = (await api('POST', `${base}/git/commit`, {}, 201)).commit.oid as string;
    const refused = await server.call('POST', `${base}/git/merge`, { source: 'side' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain(String(DEPTH_MAX));
    expect((await api('GET', `${base}/git/log?limit=1`)).commits[0].oid).toBe(mainHead);
  });
});
