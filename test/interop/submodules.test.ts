/**
 * Submodules (gitlinks, mode 160000) pushed by the real git CLI: listed as submodules with their
 * commit, never read as files (a clear 404, not a 500 about a missing blob), refused as the target
 * of a file write, and kept by move, merge and restore; clones show the same gitlinks.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsyncOk, scratchDir } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';

const work = scratchDir('treehouse-submodules-');
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
  work.remove();
});

const author = ['-c', 'user.name=Pusher', '-c', 'user.email=pusher@example.com'];
/** A commit of another repository: a gitlink names it, and this repository never has it. */
const SUBMODULE_COMMIT = 'a'.repeat(40);
const OTHER_COMMIT = 'b'.repeat(40);

function remoteUrl(projectId: string): string {
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

async function api(method: string, path: string, body?: unknown, expected = 200) {
  const response = await server.call(method, path, body);
  expect(response.status, JSON.stringify(response.body)).toBe(expected);
  return response.body;
}

/** `git ls-tree -r` lines "<mode> <type> <oid>\t<path>", sorted. */
const lsTree = (cwd: string, treeish: string) => git(['ls-tree', '-r', treeish], { cwd }).trim().split('\n').sort();

describe('submodules', () => {
  it('are listed with their commit, read as a clear 404, and kept by move, merge and restore', async () => {
    const id = (await api('POST', '/api/v1/projects', { title: 'Submodules', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } }, 201)).project.id as string;
    const base = `/api/v1/projects/${id}`;
    const dir = join(work.path, 'clone');
    await gitAsyncOk(['clone', '-q', remoteUrl(id), dir]);
    writeFileSync(join(dir, '.gitmodules'), '[submodule "sub"]\n\tpath = sub\n\turl = https://example.com/sub.git\n');
    git(['add', '.gitmodules'], { cwd: dir });
    git(['update-index', '--add', '--cacheinfo', `160000,${SUBMODULE_COMMIT},sub`], { cwd: dir });
    git([...author, 'commit', '-q', '-m', 'add a submodule'], { cwd: dir });
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: dir });
    const pushed = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();

    const listing = (await api('GET', `${base}/files?content=true`)).files;
    expect(listing.find((file: { path: string }) => file.path === 'sub')).toEqual({ path: 'sub', size: 0, locked: false, type: 'submodule', commit: SUBMODULE_COMMIT });
    const read = await server.call('GET', `${base}/files/sub`);
    expect(read.status).toBe(404);
    expect(read.body.error).toMatchObject({ code: 'not_found', details: { type: 'submodule', commit: SUBMODULE_COMMIT } });
    expect(read.body.error.message).toContain('submodule');
    const shown = (await api('GET', `${base}/git/commits/${pushed}`)).commit.files;
    expect(shown.find((file: { path: string }) => file.path === 'sub')).toEqual({ path: 'sub', size: 0, type: 'submodule', commit: SUBMODULE_COMMIT });

    // A file cannot replace it or sit inside it; nothing is written.
    for (const path of ['sub', 'sub/x.txt']) {
      const refused = await server.call('POST', `${base}/files/batch`, { files: [{ path, content: 'x' }] });
      expect(refused.status, path).toBe(409);
      expect(refused.body.error.code).toBe('path_conflict');
    }

    // Move keeps it a gitlink with its commit; merge and restore keep it too.
    await api('POST', `${base}/git/branches`, { name: 'side' }, 201);
    await api('POST', `${base}/files/move`, { branch: 'side', from: 'sub', to: 'lib/sub' });
    await api('POST', `${base}/files/batch`, { branch: 'side', files: [{ path: '.gitmodules', content: '[submodule "sub"]\n\tpath = lib/sub\n\turl = https://example.com/sub.git\n' }] });
    await api('POST', `${base}/git/commit`, { branch: 'side', message: 'move the submodule' }, 201);
    await api('POST', `${base}/files/batch`, { files: [{ path: 'a.txt', content: 'a2\n' }] });
    await api('POST', `${base}/git/commit`, { message: 'change a' }, 201);
    const merged = await api('POST', `${base}/git/merge`, { source: 'side' }, 201);
    expect((await api('GET', `${base}/files`)).files.find((file: { path: string }) => file.path === 'lib/sub')).toMatchObject({ type: 'submodule', commit: SUBMODULE_COMMIT });
    await api('POST', `${base}/git/restore`, { oid: pushed }, 201);
    expect((await api('GET', `${base}/files`)).files.find((file: { path: string }) => file.path === 'sub')).toMatchObject({ type: 'submodule', commit: SUBMODULE_COMMIT });

    await gitAsyncOk(['fetch', '-q', '--no-recurse-submodules', 'origin'], { cwd: dir });
    expect(lsTree(dir, merged.merge.oid)).toContain(`160000 commit ${SUBMODULE_COMMIT}\tlib/sub`);
    expect(lsTree(dir, 'origin/main')).toContain(`160000 commit ${SUBMODULE_COMMIT}\tsub`);
    expect(git(['rev-parse', 'origin/main^{tree}'], { cwd: dir }).trim()).toBe(git(['rev-parse', `${pushed}^{tree}`], { cwd: dir }).trim());
    const fresh = join(work.path, 'fresh');
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', remoteUrl(id), fresh]);
    git(['fsck', '--strict'], { cwd: fresh });

    // Both sides moving the gitlink to different commits is a conflict (merge-ort: a submodule
    // conflict), and nothing changes.
    git(['checkout', '-q', '-B', 'bump', 'origin/main'], { cwd: dir });
    git(['update-index', '--cacheinfo', `160000,${OTHER_COMMIT},sub`], { cwd: dir });
    git([...author, 'commit', '-q', '-m', 'bump to b'], { cwd: dir });
    await gitAsyncOk(['push', '-q', 'origin', 'bump'], { cwd: dir });
    git(['checkout', '-q', '-B', 'main', 'origin/main'], { cwd: dir });
    git(['update-index', '--cacheinfo', `160000,${'c'.repeat(40)},sub`], { cwd: dir });
    git([...author, 'commit', '-q', '-m', 'bump to c'], { cwd: dir });
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: dir });
    const head = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
    const conflicted = await server.call('POST', `${base}/git/merge`, { source: 'bump' });
    expect(conflicted.status).toBe(409);
    expect(conflicted.body.error.details.conflicts).toEqual([{ path: 'sub', kind: 'content' }]);
    expect((await api('GET', `${base}/git/log?limit=1`)).commits[0].oid).toBe(head);
  });

  it('are skipped by lint and deleted like files', async () => {
    const id = (await api('POST', '/api/v1/projects', { title: 'Submodule lint', source: { kind: 'files', files: [{ path: 'a.js', content: 'export const a = 1;\n' }] } }, 201)).project.id as string;
    const base = `/api/v1/projects/${id}`;
    const dir = join(work.path, 'lint');
    await gitAsyncOk(['clone', '-q', remoteUrl(id), dir]);
    git(['update-index', '--add', '--cacheinfo', `160000,${SUBMODULE_COMMIT},vendor/lib.js`], { cwd: dir });
    git([...author, 'commit', '-q', '-m', 'gitlink named like a script'], { cwd: dir });
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: dir });
    const linted = await api('POST', `${base}/lint`, {});
    expect(linted).toMatchObject({ success: true, totalFiles: 1, errors: [] });
    expect(await api('DELETE', `${base}/files/vendor/lib.js`)).toEqual({ path: 'vendor/lib.js' });
    expect((await api('GET', `${base}/files`)).files.map((file: { path: string }) => file.path)).toEqual(['a.js']);
  });
});
