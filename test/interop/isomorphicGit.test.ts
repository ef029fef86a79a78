/**
 * isomorphic-git as a second client of the smart-HTTP export, with its own http/node transport
 * (protocol v1, its own request layout: wants, shallows and deepen, haves and done in one
 * request): clone, shallow clone, fetches into the shallow clone, and pushes. What it leaves on
 * disk is then checked with the git CLI (`fsck --strict`, `rev-list`, `.git/shallow`).
 */
import fs, { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as isogit from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, scratchDir } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let projectId = '';
let url = '';
const work = scratchDir('treehouse-isogit-');
const author = { name: 'Iso Git', email: 'iso@example.com', timestamp: 1_700_000_000, timezoneOffset: 0 };
const onAuth = () => ({ username: 'git', password: server.key });

beforeAll(async () => {
  server = await startTestServer();
  const created = await server.call('POST', '/api/v1/projects', { title: 'isogit', source: { kind: 'files', files: [{ path: 'a.txt', content: '1\n' }] } });
  projectId = created.body.project.id;
  url = `${server.url}/git/${projectId}.git`;
  for (const content of ['2\n', '3\n', '4\n']) await apiCommit({ 'a.txt': content });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

async function apiCommit(files: Record<string, string>): Promise<string> {
  const written = await server.call('POST', `/api/v1/projects/${projectId}/files/batch`, { files: Object.entries(files).map(([path, content]) => ({ path, content })) });
  expect(written.status).toBe(200);
  const committed = await server.call('POST', `/api/v1/projects/${projectId}/git/commit`, {});
  expect(committed.status).toBe(201);
  return committed.body.commit.oid;
}

async function serverLog(): Promise<string[]> {
  return (await server.call('GET', `/api/v1/projects/${projectId}/git/log`)).body.commits.map((commit: { oid: string }) => commit.oid);
}

function shallowOf(dir: string): string[] {
  const file = join(dir, '.git', 'shallow');
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).sort() : [];
}

const revList = (dir: string, ref: string) => git(['rev-list', ref], { cwd: dir }).trim().split('\n');

describe('isomorphic-git against Treehouse', () => {
  it('clones the whole history, which git fsck --strict finds clean', async () => {
    const dir = join(work.path, 'full');
    await isogit.clone({ fs, http, dir, url, onAuth, singleBranch: true });
    expect(await isogit.resolveRef({ fs, dir, ref: 'HEAD' })).toBe((await serverLog())[0]);
    git(['fsck', '--strict'], { cwd: dir });
    expect(revList(dir, 'HEAD')).toEqual(await serverLog());
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('4\n');
  });

  it('clones with depth 1, then fetches into the shallow clone: new commits, a deeper depth, a relative deepening', async () => {
    const dir = join(work.path, 'shallow');
    await isogit.clone({ fs, http, dir, url, onAuth, singleBranch: true, depth: 1 });
    const log = await serverLog();
    expect(shallowOf(dir)).toEqual([log[0]]);
    expect(revList(dir, 'HEAD')).toEqual([log[0]]);

    // A new commit on the server, fetched with depth 1: the new tip is a boundary too, and the old
    // one stays shallow (nothing unshallows it), as with git's own client.
    const newer = await apiCommit({ 'b.txt': 'new\n' });
    await isogit.fetch({ fs, http, dir, onAuth, singleBranch: true, ref: 'main', depth: 1 });
    expect(await isogit.resolveRef({ fs, dir, ref: 'refs/remotes/origin/main' })).toBe(newer);
    expect(shallowOf(dir)).toEqual([log[0], newer].sort());

    // Deeper: three commits from the tip.
    await isogit.fetch({ fs, http, dir, onAuth, singleBranch: true, ref: 'main', depth: 3 });
    const now = await serverLog();
    expect(revList(dir, 'origin/main')).toEqual(now.slice(0, 3));
    expect(shallowOf(dir)).toEqual([now[2]]);

    // Relative: one more commit below the current boundary.
    await isogit.fetch({ fs, http, dir, onAuth, singleBranch: true, ref: 'main', depth: 1, relative: true });
    expect(revList(dir, 'origin/main')).toEqual(now.slice(0, 4));
    expect(shallowOf(dir)).toEqual([now[3]]);
    git(['fsck', '--strict'], { cwd: dir });
  });

  it('pushes a commit from a full clone and from a shallow clone', async () => {
    for (const [name, depth] of [['push-full', undefined], ['push-shallow', 1]] as const) {
      const dir = join(work.path, name);
      await isogit.clone({ fs, http, dir, url, onAuth, singleBranch: true, depth });
      writeFileSync(join(dir, `${name}.txt`), `pushed by isomorphic-git (${name})\n`);
      await isogit.add({ fs, dir, filepath: `${name}.txt` });
      const oid = await isogit.commit({ fs, dir, message: `isomorphic-git ${name}`, author });
      const result = await isogit.push({ fs, http, dir, onAuth, remote: 'origin', ref: 'main' });
      expect(result.ok).toBe(true);
      expect(result.refs['refs/heads/main']).toMatchObject({ ok: true });
      expect((await serverLog())[0]).toBe(oid);
      expect((await server.call('GET', `/api/v1/projects/${projectId}/files/${name}.txt`)).body.content).toBe(`pushed by isomorphic-git (${name})\n`);
    }
  });

  it('sees a refused push as refused, with the reason', async () => {
    const dir = join(work.path, 'push-refused');
    await isogit.clone({ fs, http, dir, url, onAuth, singleBranch: true });
    await server.call('POST', `/api/v1/projects/${projectId}/files/batch`, { files: [{ path: 'draft.txt', content: 'uncommitted\n' }] });
    writeFileSync(join(dir, 'c.txt'), 'c\n');
    await isogit.add({ fs, dir, filepath: 'c.txt' });
    await isogit.commit({ fs, dir, message: 'onto a dirty branch', author });
    const refused = await isogit.push({ fs, http, dir, onAuth, remote: 'origin', ref: 'main' }).catch((error: Error) => error);
    const text = refused instanceof Error ? refused.message : JSON.stringify(refused);
    expect(text).toContain('uncommitted changes');
    await server.call('DELETE', `/api/v1/projects/${projectId}/files/draft.txt`);
  });
});
