import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportToBareRepo } from '../../src/repo/wire/exportToBareRepo.js';
import { git, initBareRepo, scratchDir } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

async function project(files: Record<string, string>) {
  const created = await server.call('POST', '/api/v1/projects', {
    title: 'Merge',
    source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  });
  const id = created.body.project.id as string;
  const base = `/api/v1/projects/${id}`;
  const write = async (branch: string, files: Record<string, string>, deletes: string[] = []) => {
    const written = await server.call('POST', `${base}/files/batch`, { branch, deletes, files: Object.entries(files).map(([path, content]) => ({ path, content })) });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    const committed = await server.call('POST', `${base}/git/commit`, { branch });
    expect(committed.status).toBe(201);
    return committed.body.commit.oid as string;
  };
  const head = async (branch = 'main') =>
    (await server.call('GET', `${base}/git/branches`)).body.branches.find((b: { name: string }) => b.name === branch).oid as string;
  return { id, base, write, head };
}

const lines = (n: number, change: Record<number, string> = {}) => Array.from({ length: n }, (_, i) => change[i] ?? `line ${i}`).join('\n') + '\n';

describe('POST git/merge', () => {
  it('reports up to date, fast-forwards, and moves the working tree with the ref', async () => {
    const p = await project({ 'a.txt': 'a\n' });
    await server.call('POST', `${p.base}/git/branches`, { name: 'feature' });
    const upToDate = await server.call('POST', `${p.base}/git/merge`, { source: 'feature' });
    expect(upToDate.status).toBe(200);
    expect(upToDate.body).toEqual({ merge: { oid: await p.head(), fastForward: false, upToDate: true } });
    const featureHead = await p.write('feature', { 'b.txt': 'b\n' });
    const ff = await server.call('POST', `${p.base}/git/merge`, { source: 'feature', target: 'main' });
    expect(ff.status).toBe(200);
    expect(ff.body).toEqual({ merge: { oid: featureHead, fastForward: true } });
    expect(await p.head()).toBe(featureHead);
    expect((await server.call('GET', `${p.base}/files/b.txt`)).body.content).toBe('b\n');
  });

  it('writes a merge commit with two parents that equals git merge-tree, and fsck is clean', async () => {
    const p = await project({ 'doc.txt': lines(30), 'keep.txt': 'keep\n' });
    await server.call('POST', `${p.base}/git/branches`, { name: 'topic' });
    const mainHead = await p.write('main', { 'doc.txt': lines(30, { 2: 'main edit' }), 'main-only.txt': 'm\n' });
    const topicHead = await p.write('topic', { 'doc.txt': lines(30, { 25: 'topic edit' }) }, ['keep.txt']);
    const merged = await server.call('POST', `${p.base}/git/merge`, { source: 'topic' });
    expect(merged.status, JSON.stringify(merged.body)).toBe(201);
    expect(merged.body.merge.fastForward).toBe(false);
    const shown = await server.call('GET', `${p.base}/git/commits/${merged.body.merge.oid}`);
    expect(shown.body.commit.parent_oids).toEqual([mainHead, topicHead]);
    expect(shown.body.commit.message).toBe("Merge branch 'topic' into main");
    expect((await server.call('GET', `${p.base}/files/doc.txt`)).body.content).toBe(lines(30, { 2: 'main edit', 25: 'topic edit' }));
    expect((await server.call('GET', `${p.base}/files/keep.txt`)).status).toBe(404);

    const bare = scratchDir();
    try {
      initBareRepo(bare.path);
      await exportToBareRepo(server.th.projects.repo(await server.th.projects.get((await server.th.accounts.authenticate(server.key))!, p.id)), bare.path);
      git(['fsck', '--strict'], { cwd: bare.path });
      const gitTree = git(['merge-tree', '--write-tree', mainHead, topicHead], { cwd: bare.path }).trim();
      expect(shown.body.commit.tree_oid).toBe(gitTree);
    } finally {
      bare.remove();
    }
  });

  it('reports conflicts with their kinds and changes nothing', async () => {
    const p = await project({ 'doc.txt': lines(5), 'gone.txt': 'g\n' });
    await server.call('POST', `${p.base}/git/branches`, { name: 'other' });
    await p.write('main', { 'doc.txt': lines(5, { 2: 'ours' }), 'both.txt': 'main\n', 'gone.txt': 'changed\n' });
    await p.write('other', { 'doc.txt': lines(5, { 2: 'theirs' }), 'both.txt': 'other\n' }, ['gone.txt']);
    const before = await p.head();
    const refused = await server.call('POST', `${p.base}/git/merge`, { source: 'other' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('merge_conflict');
    expect(refused.body.error.details.conflicts).toEqual(
      expect.arrayContaining([
        { path: 'doc.txt', kind: 'content' },
        { path: 'both.txt', kind: 'add/add' },
        { path: 'gone.txt', kind: 'modify/delete' },
      ]),
    );
    expect(await p.head()).toBe(before);
    expect((await server.call('GET', `${p.base}/files/doc.txt`)).body.content).toBe(lines(5, { 2: 'ours' }));
  });

  it('refuses a dirty target, a locked file the merge would change, and unknown branches', async () => {
    const p = await project({ 'a.txt': 'a\n', 'l.txt': 'locked\n' });
    await server.call('POST', `${p.base}/git/branches`, { name: 'f' });
    await p.write('f', { 'l.txt': 'changed\n' });
    await server.call('POST', `${p.base}/files/batch`, { files: [{ path: 'dirty.txt', content: 'x' }] });
    const dirty = await server.call('POST', `${p.base}/git/merge`, { source: 'f' });
    expect(dirty.status).toBe(409);
    expect(dirty.body.error).toMatchObject({ code: 'uncommitted_changes', details: { paths: ['dirty.txt'] } });
    await server.call('DELETE', `${p.base}/files/dirty.txt`);
    await server.call('POST', `${p.base}/files/batch`, { files: [{ path: 'l.txt', content: 'locked\n', locked: true }] });
    const locked = await server.call('POST', `${p.base}/git/merge`, { source: 'f' });
    expect(locked.status).toBe(423);
    expect(locked.body.error).toMatchObject({ code: 'file_locked', details: { paths: ['l.txt'] } });
    expect((await server.call('POST', `${p.base}/git/merge`, { source: 'nope' })).status).toBe(404);
    expect((await server.call('POST', `${p.base}/git/merge`, { source: 'f', target: 'nope' })).status).toBe(404);
    expect((await server.call('POST', `${p.base}/git/merge`, {})).status).toBe(400);
  });
});
