/**
 * File names are bytes (README "File names are bytes"): names that are not UTF-8, pushed by the
 * real git CLI, seeded from `git http-backend` or written with `path_base64`, keep their exact
 * bytes through API writes in the same directory, locks, move, delete, merge, restore, clone and
 * linked-repository sync; `git ls-tree -z` shows the same bytes on every side.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsyncOk, gitBytes, initBareRepo, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

const work = scratchDir('treehouse-names-');
const root = join(work.path, 'repos');
let server: TestServer;
let backend: GitHttpBackend;
beforeAll(async () => {
  mkdirSync(root);
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  backend = await startGitHttpBackend(root);
});
afterAll(async () => {
  await Promise.all([server?.close(), backend?.close()]);
  work.remove();
});

const author = ['-c', 'user.name=Pusher', '-c', 'user.email=pusher@example.com'];
const bytes = (latin1: string) => Buffer.from(latin1, 'latin1');
const b64 = (latin1: string) => bytes(latin1).toString('base64');
/** "café" in UTF-8, then a lone 0xff: valid and invalid bytes in one name. */
const MIXED = `caf${Buffer.from('\u00e9').toString('latin1')}\xff.txt`;
/** Names as git stores them, as latin1 strings (one character per byte). */
const PUSHED = ['caf\xe9.txt', 'd/x\xe9.txt', 'd/x\xe8.txt', `d/${MIXED}`, 'plain.txt'];

function remoteUrl(projectId: string): string {
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

/** `git ls-tree -r -z --name-only`, each path as latin1 (its bytes, one character each), sorted. */
function lsTree(cwd: string, treeish: string): string[] {
  return gitBytes(['ls-tree', '-r', '-z', '--name-only', treeish], { cwd })
    .toString('latin1')
    .split('\0')
    .filter((path) => path !== '')
    .sort();
}

/** Writes files whose names are bytes into a work tree (Linux takes any bytes but NUL and "/"). */
function writeByteNames(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    const path = Buffer.concat([Buffer.from(`${dir}/`), bytes(name)]);
    const slash = path.lastIndexOf(0x2f);
    mkdirSync(path.subarray(0, slash), { recursive: true });
    writeFileSync(path, content);
  }
}

/** A listing's entries as latin1 byte strings, from path_base64 when given, else from path. */
function listedNames(files: Array<{ path: string; path_base64?: string }>): string[] {
  return files.map((file) => (file.path_base64 ? Buffer.from(file.path_base64, 'base64') : Buffer.from(file.path, 'utf8')).toString('latin1')).sort();
}

async function api(method: string, path: string, body?: unknown, expected = 200) {
  const response = await server.call(method, path, body);
  expect(response.status, JSON.stringify(response.body)).toBe(expected);
  return response.body;
}

describe('names that are not UTF-8', () => {
  it('keep their bytes from a git push through API writes, locks, move, delete, merge, restore and clone', async () => {
    const id = (await api('POST', '/api/v1/projects', { title: 'Bytes' }, 201)).project.id as string;
    const base = `/api/v1/projects/${id}`;
    const dir = join(work.path, 'pushed');
    await gitAsyncOk(['clone', '-q', remoteUrl(id), dir]);
    writeByteNames(dir, { 'caf\xe9.txt': 'latin-1 cafe\n', 'd/x\xe9.txt': 'e9\n', 'd/x\xe8.txt': 'e8\n', [`d/${MIXED}`]: 'mixed\n', 'plain.txt': 'plain\n' });
    git(['add', '-A'], { cwd: dir });
    git([...author, 'commit', '-q', '-m', 'names as bytes'], { cwd: dir });
    expect(lsTree(dir, 'HEAD')).toEqual([...PUSHED].sort());
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: dir });
    const pushed = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();

    // Listed with the exact bytes in path_base64, and a display form in path.
    const listing = (await api('GET', `${base}/files`)).files;
    expect(listedNames(listing)).toEqual([...PUSHED].sort());
    expect(listing).toContainEqual({ path: 'caf\ufffd.txt', path_base64: b64('caf\xe9.txt'), size: 13, locked: false });
    expect(listing).toContainEqual({ path: 'plain.txt', size: 6, locked: false });
    expect((await api('GET', `${base}/file?path_base64=${encodeURIComponent(b64('caf\xe9.txt'))}`)).content).toBe('latin-1 cafe\n');
    expect(await api('GET', `${base}/file?path_base64=${encodeURIComponent(b64(`d/${MIXED}`))}`)).toMatchObject({
      path: 'd/caf\u00e9\ufffd.txt',
      path_base64: b64(`d/${MIXED}`),
      content: 'mixed\n',
    });
    expect((await api('GET', `${base}/file?path=plain.txt`)).content).toBe('plain\n');
    const prefixed = (await api('GET', `${base}/files?prefix_base64=${encodeURIComponent(b64('d/x\xe9'))}`)).files;
    expect(listedNames(prefixed)).toEqual(['d/x\xe9.txt']);
    // The display form names another file (none here): it never aliases the real one.
    expect((await server.call('GET', `${base}/files/caf%EF%BF%BD.txt`)).status).toBe(404);

    // Writes beside them, a new such name, and a lock, all by bytes.
    await api('POST', `${base}/files/batch`, {
      files: [
        { path: 'd/new.txt', content: 'new\n' },
        { path_base64: b64('d/y\xff.txt'), content: 'ff\n' },
        { path_base64: b64('d/x\xe9.txt'), content: 'e9 v2\n', locked: true },
      ],
    });
    const refused = await server.call('POST', `${base}/files/batch`, { files: [{ path_base64: b64('d/x\xe9.txt'), content: 'v3\n' }] });
    expect(refused.status).toBe(423);
    expect(refused.body.error.details).toEqual({ paths: ['d/x\ufffd.txt'], paths_base64: [b64('d/x\xe9.txt')] });
    await api('POST', `${base}/git/commit`, { message: 'beside' }, 201);

    await api('POST', `${base}/git/branches`, { name: 'side' }, 201);
    expect(await api('POST', `${base}/files/move`, { branch: 'side', from_base64: b64('d/x\xe8.txt'), to_base64: b64('e/x\xe8.txt') })).toEqual({
      from: 'd/x\ufffd.txt',
      from_base64: b64('d/x\xe8.txt'),
      to: 'e/x\ufffd.txt',
      to_base64: b64('e/x\xe8.txt'),
    });
    await api('POST', `${base}/git/commit`, { branch: 'side', message: 'move' }, 201);
    expect(await api('DELETE', `${base}/file?path_base64=${encodeURIComponent(b64(`d/${MIXED}`))}`)).toEqual({ path: 'd/caf\u00e9\ufffd.txt', path_base64: b64(`d/${MIXED}`) });
    await api('POST', `${base}/files/batch`, { files: [], deletes: [{ path_base64: b64('caf\xe9.txt') }] });
    await api('POST', `${base}/git/commit`, { message: 'deletes' }, 201);
    const merged = await api('POST', `${base}/git/merge`, { source: 'side' }, 201);

    const expectedMain = ['d/new.txt', 'd/x\xe9.txt', 'd/y\xff.txt', 'e/x\xe8.txt', 'plain.txt'];
    expect(listedNames((await api('GET', `${base}/files`)).files)).toEqual(expectedMain);
    const shown = (await api('GET', `${base}/git/commits/${merged.merge.oid}?content=false`)).commit.files;
    expect(listedNames(shown)).toEqual(expectedMain);
    expect(shown).toContainEqual({ path: 'd/y\ufffd.txt', path_base64: b64('d/y\xff.txt'), size: 3 });

    await api('POST', `${base}/git/branches`, { name: 'old' }, 201);
    await api('POST', `${base}/git/restore`, { branch: 'old', oid: pushed }, 201);

    // git sees the same bytes: fetched into the pushing clone and in a fresh, fsck-checked clone.
    await gitAsyncOk(['fetch', '-q', 'origin'], { cwd: dir });
    expect(lsTree(dir, 'origin/main')).toEqual(expectedMain);
    expect(git(['rev-parse', 'origin/old^{tree}'], { cwd: dir }).trim()).toBe(git(['rev-parse', `${pushed}^{tree}`], { cwd: dir }).trim());
    const fresh = join(work.path, 'fresh');
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', remoteUrl(id), fresh]);
    git(['fsck', '--strict'], { cwd: fresh });
    expect(lsTree(fresh, 'HEAD')).toEqual(expectedMain);
    const entries = gitBytes(['ls-tree', '-r', '-z', 'HEAD'], { cwd: fresh }).toString('latin1').split('\0').filter((line) => line !== '');
    const blobOf = (name: string) => entries.find((line) => line.endsWith(`\t${name}`))!.split(' ')[2].split('\t')[0];
    expect(git(['cat-file', 'blob', blobOf('d/y\xff.txt')], { cwd: fresh })).toBe('ff\n');
    expect(git(['cat-file', 'blob', blobOf('d/x\xe9.txt')], { cwd: fresh })).toBe('e9 v2\n');
  });

  it('keep their bytes through a git seed and a linked repository', async () => {
    const build = join(work.path, 'upstream-build');
    git(['init', '-q', '--initial-branch=main', build]);
    writeByteNames(build, { 'x\xe9.txt': 'e9\n', 'x\xe8.txt': 'e8\n', [MIXED]: 'mixed\n' });
    git(['add', '-A'], { cwd: build });
    git([...author, 'commit', '-q', '-m', 'upstream'], { cwd: build });
    git(['clone', '-q', '--bare', build, join(root, 'names.git')]);
    const seeded = await api('POST', '/api/v1/projects', { title: 'Seeded bytes', source: { kind: 'git', url: `${backend.url}/names.git` } }, 201);
    const id = seeded.project.id as string;
    const base = `/api/v1/projects/${id}`;
    expect(listedNames((await api('GET', `${base}/files`)).files)).toEqual(['x\xe8.txt', 'x\xe9.txt', MIXED].sort());

    // A write in the same directory, then a push to a linked repository.
    initBareRepo(join(root, 'linked.git'));
    await api('PUT', `${base}/git/remote`, { url: `${backend.url}/linked.git` });
    await api('POST', `${base}/files/batch`, { files: [{ path: 'added.txt', content: 'added\n' }] });
    const head = (await api('POST', `${base}/git/commit`, {}, 201)).commit.oid as string;
    const deadline = Date.now() + 15_000;
    while ((await api('GET', `${base}/git/remote`)).remote.sync.status !== 'synced') {
      if (Date.now() > deadline) throw new Error('sync did not finish');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const linked = join(root, 'linked.git');
    expect(git(['rev-parse', 'main'], { cwd: linked }).trim()).toBe(head);
    expect(lsTree(linked, 'main')).toEqual(['added.txt', 'x\xe8.txt', 'x\xe9.txt', MIXED].sort());
    git(['fsck', '--strict'], { cwd: linked });
  });
});
