/**
 * Git seeds against git's own `git http-backend`: the upstream's history becomes main's history with
 * the same ids, over protocol v2 and (from a server that answers only v0) v0; refs may be branches or
 * tags; refused hosts, bad credentials and unknown refs are a 400 and create nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelta } from '../../src/git/delta.js';
import { PackWriter } from '../../src/git/pack.js';
import { encodePktLine } from '../../src/git/pktline.js';
import { git, gitAsync, gitAsyncOk, gitBytes, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

const work = scratchDir('treehouse-seed-');
const root = join(work.path, 'repos');
let backend: GitHttpBackend;
let v0Backend: GitHttpBackend;
let authBackend: GitHttpBackend;
let server: TestServer;
let strictServer: TestServer;
const PASSWORD = 'upstream-secret-token';

/** Commits made by the setup, by name. */
const upstream: Record<string, string> = {};

beforeAll(async () => {
  mkdirSync(root);
  const dir = join(work.path, 'build');
  git(['init', '-q', '--initial-branch=main', dir]);
  const commit = (files: Record<string, string>, message: string, date: string) => {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    git(['add', '-A'], { cwd: dir });
    git(['commit', '-q', '-m', message], { cwd: dir, env: { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } });
    return git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
  };
  upstream.first = commit({ 'index.html': '<h1>v1</h1>\n', 'package.json': '{"devDependencies":{"vite":"^5.0.0"}}\n' }, 'First', '2024-01-01T10:00:00Z');
  upstream.second = commit({ 'src/main.ts': 'console.log(1);\n', 'docs/a/b/c.md': 'deep\n' }, 'Second', '2024-01-02T10:00:00Z');
  git(['tag', '-a', 'v1', '-m', 'Release 1'], { cwd: dir, env: { GIT_COMMITTER_DATE: '2024-01-02T11:00:00Z' } });
  git(['checkout', '-q', '-b', 'feature'], { cwd: dir });
  upstream.feature = commit({ 'feature.txt': 'feature\n' }, 'Feature work', '2024-01-03T10:00:00Z');
  git(['checkout', '-q', 'main'], { cwd: dir });
  upstream.merge = commit({ 'index.html': '<h1>v2</h1>\n' }, 'Third', '2024-01-04T10:00:00Z');
  git(['merge', '-q', '--no-ff', '-m', 'Merge feature', 'feature'], { cwd: dir, env: { GIT_AUTHOR_DATE: '2024-01-05T10:00:00Z', GIT_COMMITTER_DATE: '2024-01-05T10:00:00Z' } });
  upstream.head = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
  git(['clone', '-q', '--bare', dir, join(root, 'site.git')]);

  backend = await startGitHttpBackend(root);
  v0Backend = await startGitHttpBackend(root, { protocolV2: false });
  authBackend = await startGitHttpBackend(root, { password: PASSWORD });
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  strictServer = await startTestServer();
});

afterAll(async () => {
  await Promise.all([server?.close(), strictServer?.close(), backend?.close(), v0Backend?.close(), authBackend?.close()]);
  work.remove();
});

const upstreamLog = (rev: string) => git(['log', '--format=%H', rev], { cwd: join(root, 'site.git') }).trim().split('\n');

async function apiLog(target: TestServer, id: string): Promise<string[]> {
  const response = await target.call('GET', `/api/v1/projects/${id}/git/log?limit=200`);
  expect(response.status).toBe(200);
  return response.body.commits.map((c: { oid: string }) => c.oid);
}

async function seed(target: TestServer, source: Record<string, unknown>) {
  return target.call('POST', '/api/v1/projects', { title: 'Seeded', source: { kind: 'git', ...source } });
}

async function projectCount(target: TestServer): Promise<number> {
  return (await target.call('GET', '/api/v1/projects?limit=200')).body.projects.length;
}

describe('git seeds', () => {
  it('clones the remote HEAD over protocol v2: same history, ids, tree and working tree', async () => {
    const before = backend.log.length;
    const created = await seed(server, { url: `${backend.url}/site.git` });
    expect(created.status).toBe(201);
    const id = created.body.project.id;
    expect(created.body.project.framework).toBe('vite');
    // v2: info/refs, ls-refs and fetch.
    expect(backend.log.slice(before).filter((line) => line.startsWith('POST')).length).toBe(2);

    expect(await apiLog(server, id)).toEqual(upstreamLog('main'));
    const head = (await server.call('GET', `/api/v1/projects/${id}/git/commits/${upstream.head}?content=false`)).body.commit;
    expect(head.tree_oid).toBe(git(['rev-parse', 'main^{tree}'], { cwd: join(root, 'site.git') }).trim());
    expect(head.parent_oids).toEqual([upstream.merge, upstream.feature]);
    expect(head.author_id).toBeNull();

    const files = (await server.call('GET', `/api/v1/projects/${id}/files`)).body.files.map((f: { path: string }) => f.path);
    expect(files).toEqual(['docs/a/b/c.md', 'feature.txt', 'index.html', 'package.json', 'src/main.ts']);
    expect((await server.call('GET', `/api/v1/projects/${id}/files/index.html`)).body.content).toBe('<h1>v2</h1>\n');
    const branches = (await server.call('GET', `/api/v1/projects/${id}/git/branches`)).body.branches;
    expect(branches).toEqual([{ name: 'main', oid: upstream.head }]);

    // The seeded project commits on top of the upstream history, and stock git agrees about all of it.
    await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'new.txt', content: 'new\n' }] });
    const next = await server.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'After seed' });
    expect(next.status).toBe(201);
    const clone = join(work.path, 'clone-of-seed');
    await gitAsyncOk(['clone', '-q', `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${id}.git`, clone]);
    git(['fsck', '--strict'], { cwd: clone });
    expect(git(['log', '--format=%H', 'HEAD~1'], { cwd: clone }).trim().split('\n')).toEqual(upstreamLog('main'));
  });

  it('seeds from a branch and from an annotated tag (peeled to its commit)', async () => {
    const branch = await seed(server, { url: `${backend.url}/site.git`, ref: 'feature' });
    expect(branch.status).toBe(201);
    expect(await apiLog(server, branch.body.project.id)).toEqual(upstreamLog('feature'));

    const tag = await seed(server, { url: `${backend.url}/site.git`, ref: 'v1' });
    expect(tag.status).toBe(201);
    const log = await apiLog(server, tag.body.project.id);
    expect(log[0]).toBe(upstream.second);
    expect(log).toEqual(upstreamLog('v1^{commit}'));
    const files = (await server.call('GET', `/api/v1/projects/${tag.body.project.id}/files`)).body.files.map((f: { path: string }) => f.path);
    expect(files).toEqual(['docs/a/b/c.md', 'index.html', 'package.json', 'src/main.ts']);

    const full = await seed(server, { url: `${backend.url}/site.git`, ref: 'refs/heads/feature' });
    expect(full.status).toBe(201);
    expect((await apiLog(server, full.body.project.id))[0]).toBe(upstream.feature);
  });

  it('falls back to protocol v0 when the server does not answer v2', async () => {
    const before = v0Backend.log.length;
    const created = await seed(server, { url: `${v0Backend.url}/site.git`, ref: 'v1' });
    expect(created.status).toBe(201);
    expect(v0Backend.log.slice(before).filter((line) => line.startsWith('POST')).length).toBe(1);
    expect(await apiLog(server, created.body.project.id)).toEqual(upstreamLog('v1^{commit}'));
    // A host name (not a literal) goes through the resolver and the pinned connection.
    const head = await seed(server, { url: `${v0Backend.url.replace('127.0.0.1', 'localhost')}/site.git` });
    expect(head.status).toBe(201);
    expect(await apiLog(server, head.body.project.id)).toEqual(upstreamLog('main'));
  });

  it('signs in with a token (as the Basic password), and refuses missing or wrong ones', async () => {
    const count = await projectCount(server);
    const missing = await seed(server, { url: `${authBackend.url}/site.git` });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('invalid_request');
    expect(missing.body.error.message).toMatch(/requires authentication/);
    const wrong = await seed(server, { url: `${authBackend.url}/site.git`, token: 'not-it' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toMatch(/refused the credentials/);
    expect(JSON.stringify(wrong.body)).not.toContain('not-it');
    expect(await projectCount(server)).toBe(count);

    const good = await seed(server, { url: `${authBackend.url}/site.git`, token: PASSWORD });
    expect(good.status).toBe(201);
    expect(await apiLog(server, good.body.project.id)).toEqual(upstreamLog('main'));
    // Credentials written into the URL are used the same way.
    const inUrl = await seed(server, { url: authBackend.url.replace('http://', `http://someone:${PASSWORD}@`) + '/site.git', ref: 'feature' });
    expect(inUrl.status).toBe(201);
    expect(JSON.stringify(inUrl.body)).not.toContain(PASSWORD);
  });

  it('follows redirects of the first request, as git does, keeping a token only on the same origin', async () => {
    // A moved repository (GitHub answers a renamed one this way): /old.git redirects to /site.git;
    // /loop.git to itself; /elsewhere.git to something that is not a repository's info/refs; and
    // /other-host.git to the same server under another name (localhost for 127.0.0.1).
    const answer = (location: string) => (request: { url?: string }, response: import('node:http').ServerResponse) => {
      const [path, query] = (request.url ?? '').split('?');
      response.writeHead(301, { location: location.replace('$PATH', path.replace(/^\/[^/]+\.git/, '')).replace('$QUERY', query ?? '') }).end();
      return 'answered' as const;
    };
    const redirects: Record<string, (request: { url?: string }, response: import('node:http').ServerResponse) => 'answered'> = {
      '/old.git/': answer('/site.git$PATH?$QUERY'),
      '/loop.git/': answer('/loop.git$PATH?$QUERY'),
      '/elsewhere.git/': answer('/site.git/somewhere-else'),
      '/ftp.git/': answer('ftp://127.0.0.1/site.git$PATH?$QUERY'),
      '/with-credentials.git/': answer('http://someone:secret@127.0.0.1:1/site.git$PATH?$QUERY'),
    };
    const moving = await startGitHttpBackend(root, {
      password: PASSWORD,
      beforeGit: (request, response) => {
        const prefix = Object.keys(redirects).find((key) => request.url?.startsWith(key));
        if (prefix && request.method === 'GET') return redirects[prefix](request, response);
        if (request.url?.startsWith('/other-host.git/')) {
          response.writeHead(302, { location: `${moving.url.replace('127.0.0.1', 'localhost')}/site.git${request.url.slice('/other-host.git'.length)}` }).end();
          return 'answered';
        }
      },
    });
    try {
      const count = await projectCount(server);
      const moved = await seed(server, { url: `${moving.url}/old.git`, token: PASSWORD });
      expect(moved.status, JSON.stringify(moved.body)).toBe(201);
      expect(await apiLog(server, moved.body.project.id)).toEqual(upstreamLog('main'));
      // git itself clones through the same redirect to the same history.
      const clone = join(work.path, 'redirected-clone');
      await gitAsyncOk(['clone', '-q', '--bare', moving.url.replace('http://', `http://git:${PASSWORD}@`) + '/old.git', clone]);
      expect(git(['rev-parse', 'main'], { cwd: clone }).trim()).toBe(upstream.head);

      const looping = await seed(server, { url: `${moving.url}/loop.git`, token: PASSWORD });
      expect(looping.status).toBe(400);
      expect(looping.body.error.message).toMatch(/redirected more than 5 times/);
      const elsewhere = await seed(server, { url: `${moving.url}/elsewhere.git`, token: PASSWORD });
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.error.message).toMatch(/not the same repository moved/);
      const ftp = await seed(server, { url: `${moving.url}/ftp.git`, token: PASSWORD });
      expect(ftp.status).toBe(400);
      expect(ftp.body.error.message).toMatch(/which is not http or https/);
      const withCredentials = await seed(server, { url: `${moving.url}/with-credentials.git`, token: PASSWORD });
      expect(withCredentials.status).toBe(400);
      expect(withCredentials.body.error.message).toMatch(/an address with credentials in it/);
      expect(JSON.stringify(withCredentials.body)).not.toContain('secret');
      // To another origin the token does not follow, so that remote asks for one.
      const otherHost = await seed(server, { url: `${moving.url}/other-host.git`, token: PASSWORD });
      expect(otherHost.status).toBe(400);
      expect(otherHost.body.error.message).toMatch(/redirected to http:\/\/localhost:\d+\/site\.git, which requires authentication .* not sent to another origin/);
      expect(JSON.stringify(otherHost.body)).not.toContain(PASSWORD);
      expect(moving.log.filter((line) => line.includes('other-host')).length).toBe(1);
      expect(await projectCount(server)).toBe(count + 1);
    } finally {
      await moving.close();
    }
  });

  it('answers 400 for an unknown ref, a missing repository, an unreachable host or a bad URL, and creates nothing', async () => {
    const count = await projectCount(server);
    const badRef = await seed(server, { url: `${backend.url}/site.git`, ref: 'no-such-branch' });
    expect(badRef.status).toBe(400);
    expect(badRef.body.error.message).toMatch(/no branch or tag named "no-such-branch"/);
    expect(badRef.body.error.details.issues[0].path).toBe('source.ref');

    const missing = await seed(server, { url: `${backend.url}/nothing-here.git` });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/No git repository was found/);

    const closed = await startGitHttpBackend(root);
    await closed.close();
    const unreachable = await seed(server, { url: `${closed.url}/site.git` });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.error.message).toMatch(/could not be reached/);

    for (const url of ['ftp://example.com/site.git', 'not a url', 'http://example.com/site.git?x=1', 'file:///etc/passwd']) {
      const bad = await seed(server, { url });
      expect(bad.status, url).toBe(400);
      expect(bad.body.error.code).toBe('invalid_request');
    }
    expect(await projectCount(server)).toBe(count);
  });

  it('refuses loopback, private and link-local hosts unless TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS is set', async () => {
    const port = new URL(backend.url).port;
    const requests = backend.log.length;
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]', '10.1.2.3', '192.168.0.1', '172.16.5.4', '169.254.169.254', '[fe80::1]', '[fd00::1]', '0.0.0.0', '2130706433']) {
      const refused = await seed(strictServer, { url: `http://${host}:${port}/site.git` });
      expect(refused.status, host).toBe(400);
      expect(refused.body.error.message, host).toMatch(/private, loopback or link-local/);
    }
    const linked = await strictServer.call('POST', '/api/v1/projects', { title: 'Linked', git_remote: { url: `${backend.url}/site.git` } });
    expect(linked.status).toBe(400);
    expect(linked.body.error.details.issues[0].path).toBe('git_remote.url');
    expect(await projectCount(strictServer)).toBe(0);
    // Refused before any connection was made.
    expect(backend.log.length).toBe(requests);
  });
});

/**
 * git's http-backend for the advertisement (protocol v0), but every fetch answered with `pack`
 * (side-band, after a NAK), whatever was asked: a pack git would not send.
 */
function craftedUpstream(pack: Buffer): Promise<GitHttpBackend> {
  return startGitHttpBackend(root, {
    protocolV2: false,
    beforeGit: async (request, response) => {
      if (request.method !== 'POST') return;
      for await (const _ of request);
      const sideband: Buffer[] = [encodePktLine('NAK\n')];
      for (let at = 0; at < pack.length; at += 60_000) sideband.push(encodePktLine(Buffer.concat([Buffer.from([1]), pack.subarray(at, at + 60_000)])));
      response.writeHead(200, { 'Content-Type': 'application/x-git-upload-pack-result' }).end(Buffer.concat([...sideband, Buffer.from('0000')]));
      return 'answered';
    },
  });
}

describe('git seeds of histories old gits wrote', () => {
  /**
   * A history whose first root tree spells a directory's mode "040000", as gits before 2009 did
   * (lodash's history on GitHub has two such trees): git clone takes it, `git fsck --strict` and a
   * strict receive-pack refuse it (zeroPaddedFilemode).
   */
  function zeroPaddedHistory(): { padded: string; paddedTree: string; head: string } {
    const dir = join(work.path, 'zero-build');
    git(['init', '-q', '--bare', '--initial-branch=main', dir]);
    const blob = (content: string) => git(['hash-object', '-w', '--stdin'], { cwd: dir, input: content }).trim();
    const treeOf = (entries: Array<[string, string, string]>) =>
      git(['hash-object', '-t', 'tree', '--literally', '-w', '--stdin'], {
        cwd: dir,
        input: Buffer.concat(entries.map(([mode, name, oid]) => Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.from(oid, 'hex')]))),
      }).trim();
    const sub = treeOf([['100644', 'a.txt', blob('a\n')]]);
    const paddedTree = treeOf([
      ['100644', 'README', blob('old\n')],
      ['040000', 'test', sub],
    ]);
    const env = { GIT_AUTHOR_DATE: '2008-06-01T10:00:00Z', GIT_COMMITTER_DATE: '2008-06-01T10:00:00Z' };
    const padded = git(['commit-tree', paddedTree, '-m', 'Written by an old git'], { cwd: dir, env }).trim();
    const tree = treeOf([
      ['100644', 'README', blob('new\n')],
      ['40000', 'test', sub],
    ]);
    const head = git(['commit-tree', tree, '-p', padded, '-m', 'Written by a new git'], { cwd: dir, env }).trim();
    git(['update-ref', 'refs/heads/main', head], { cwd: dir });
    git(['clone', '-q', '--bare', dir, join(root, 'zero-padded.git')]);
    return { padded, paddedTree, head };
  }

  it('seeds it as git clone takes it, keeps its trees byte for byte and reads them as git does; a push of one is refused as git refuses it', async () => {
    const { padded, paddedTree, head } = zeroPaddedHistory();
    const upstreamDir = join(root, 'zero-padded.git');
    const strict = await gitAsync(['fsck', '--strict'], { cwd: upstreamDir });
    expect(strict.status).not.toBe(0);
    expect(strict.output).toContain('zeroPaddedFilemode');
    const theirs = join(work.path, 'zero-git-clone');
    await gitAsyncOk(['clone', '-q', '--bare', `${backend.url}/zero-padded.git`, theirs]);

    const created = await seed(server, { url: `${backend.url}/zero-padded.git` });
    expect(created.status).toBe(201);
    const id = created.body.project.id;
    expect(await apiLog(server, id)).toEqual([head, padded]);
    const old = (await server.call('GET', `/api/v1/projects/${id}/git/commits/${padded}?content=false`)).body.commit;
    expect(old.tree_oid).toBe(paddedTree);
    // A branch at the old commit: its working tree is the padded tree, listed and changed like any.
    expect((await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: 'old', from: padded })).status).toBe(201);
    const files = (await server.call('GET', `/api/v1/projects/${id}/files?branch=old`)).body.files.map((f: { path: string }) => f.path);
    expect(files).toEqual(['README', 'test/a.txt']);
    expect((await server.call('GET', `/api/v1/projects/${id}/files/test/a.txt?branch=old`)).body.content).toBe('a\n');
    // A file into the padded directory too: found by name among the padded entries, not added twice.
    const changed = await server.call('POST', `/api/v1/projects/${id}/files/batch`, {
      branch: 'old',
      files: [
        { path: 'README', content: 'changed\n' },
        { path: 'test/b.txt', content: 'b\n' },
      ],
    });
    expect(changed.status).toBe(200);
    const after = (await server.call('GET', `/api/v1/projects/${id}/files?branch=old`)).body.files.map((f: { path: string }) => f.path);
    expect(after).toEqual(['README', 'test/a.txt', 'test/b.txt']);
    const next = await server.call('POST', `/api/v1/projects/${id}/git/commit`, { branch: 'old', message: 'On the old tree' });
    expect(next.status).toBe(201);

    // A clone brings the same objects as git's; git fsck finds what it finds upstream, and the new tree spells "40000".
    const ours = join(work.path, 'zero-our-clone');
    await gitAsyncOk(['clone', '-q', '--bare', `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${id}.git`, ours]);
    expect(git(['rev-parse', 'main', 'old^'], { cwd: ours }).trim().split('\n')).toEqual([head, padded]);
    const objects = (dir: string, rev: string) => git(['rev-list', '--objects', rev], { cwd: dir }).trim().split('\n').sort();
    expect(objects(ours, 'main')).toEqual(objects(theirs, 'main'));
    expect(gitBytes(['cat-file', 'tree', paddedTree], { cwd: ours }).toString('latin1')).toContain('040000 test');
    git(['fsck'], { cwd: ours });
    const nextTree = git(['rev-parse', `${next.body.commit.oid}^{tree}`], { cwd: ours }).trim();
    expect(gitBytes(['cat-file', 'tree', nextTree], { cwd: ours }).toString('latin1')).toMatch(/(^|[^0])40000 test\0/);
    expect(git(['ls-tree', '-r', '--name-only', nextTree], { cwd: ours }).trim().split('\n')).toEqual(['README', 'test/a.txt', 'test/b.txt']);

    // A push of the same history: git's strict receive-pack refuses it, and so does Treehouse.
    const mirror = join(work.path, 'zero-mirror.git');
    git(['init', '-q', '--bare', '--initial-branch=main', mirror]);
    git(['config', 'receive.fsckObjects', 'true'], { cwd: mirror });
    const gitPush = await gitAsync(['push', mirror, 'main:refs/heads/main'], { cwd: upstreamDir });
    expect(gitPush.status).not.toBe(0);
    expect(gitPush.output).toContain('zeroPaddedFilemode');
    const empty = await server.call('POST', '/api/v1/projects', { title: 'Push target' });
    const pushed = await gitAsync(['push', `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${empty.body.project.id}.git`, 'main:refs/heads/imported'], { cwd: upstreamDir });
    expect(pushed.status).not.toBe(0);
    expect(pushed.output).toContain('zeroPaddedFilemode');
    expect((await server.call('GET', `/api/v1/projects/${empty.body.project.id}/git/branches`)).body.branches.map((b: { name: string }) => b.name)).toEqual(['main']);
  });
});

describe('git seeds and storage', () => {
  /** Project numbers that hold stored objects while no project record uses them. */
  function orphanedNumbers(target: TestServer): Promise<number[]> {
    return target.th.store.read(async (tx) => {
      const last = (await tx.getRecord<number>('counter/project-seq')) ?? 0;
      const owned = new Set((await tx.listRecords<{ seq: number }>('project/')).map(({ value }) => value.seq));
      const orphaned: number[] = [];
      for (let seq = 1; seq <= last; seq++) if (!owned.has(seq) && (await tx.project(seq).findObjectsByPrefix('', 1)).length > 0) orphaned.push(seq);
      return orphaned;
    });
  }

  /** No project was added, and no number holds objects or a reservation. */
  async function expectNothingKept(target: TestServer, projectsBefore: number): Promise<void> {
    expect(await projectCount(target)).toBe(projectsBefore);
    expect(await orphanedNumbers(target)).toEqual([]);
    expect(await target.th.store.read(async (tx) => tx.listRecords('project-unowned/'))).toEqual([]);
  }

  it('stores nothing when the project cannot be created after its history was stored, and frees it all on delete', async () => {
    const first = await server.call('POST', '/api/v1/projects', { title: 'Taken', handle: 'taken-handle' });
    expect(first.status).toBe(201);
    // The handle is checked in the creating transaction, after the seed's objects are in.
    const refused = await server.call('POST', '/api/v1/projects', { title: 'Seeded', handle: 'taken-handle', source: { kind: 'git', url: `${backend.url}/site.git` } });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('handle_taken');
    expect(await orphanedNumbers(server)).toEqual([]);
    expect(await server.th.store.read(async (tx) => tx.listRecords('project-unowned/'))).toEqual([]);

    const seeded = await seed(server, { url: `${backend.url}/site.git` });
    expect(seeded.status).toBe(201);
    expect((await server.call('DELETE', `/api/v1/projects/${seeded.body.project.id}`)).status).toBe(200);
    // Its data is freed after the answer (src/service/projectDrops.ts).
    await server.th.projects.drops.idle();
    expect(await orphanedNumbers(server)).toEqual([]);
    expect(await server.th.store.read(async (tx) => tx.listRecords('project-unowned/'))).toEqual([]);
  });

  it('refuses a pack that fails to parse after its first blobs were stored meanwhile, and keeps none of them', async () => {
    // The advertisement is git's; the pack is 3,000 blobs (the checker's worker hands the first
    // runs to the store while it parses) and then a delta on a base nobody has.
    const writer = new PackWriter(3_001);
    const chunks = [writer.start()];
    for (let i = 0; i < 3_000; i++) chunks.push(writer.addObject('blob', Buffer.from(`blob ${i} ${randomBytes(8).toString('hex')}\n`)).bytes);
    chunks.push(writer.addRefDelta(randomBytes(20), createDelta(Buffer.from('a base nobody has\n'), Buffer.from('a base nobody has, changed\n'))).bytes);
    chunks.push(writer.finish());
    const pack = Buffer.concat(chunks);
    const crafted = await craftedUpstream(pack);
    try {
      // Watched, not replaced: how many runs the store was given (a store that keeps forms alone is).
      const store = server.th.store;
      const putFormsAlone = store.putFormsAlone?.bind(store);
      let runs = 0;
      if (putFormsAlone) {
        store.putFormsAlone = (...args) => {
          runs++;
          return putFormsAlone(...args);
        };
      }
      const before = await projectCount(server);
      const refused = await seed(server, { url: `${crafted.url}/site.git` }).finally(() => putFormsAlone && (store.putFormsAlone = putFormsAlone));
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(/The fetched pack was refused: .*could not be resolved/);
      expect(runs).toBe(putFormsAlone ? 1 : 0);
      await expectNothingKept(server, before);
    } finally {
      await crafted.close();
    }
  });

  it('refuses a history whose pack lacks a blob, found by the check once its trees were stored as they came, and keeps none of it', async () => {
    // 3,000 files (the pack goes to the checker's worker, which streams its objects), and a pack
    // made by git of every object but one blob.
    const dir = join(work.path, 'holes-build');
    git(['init', '-q', '--initial-branch=main', dir]);
    for (let i = 0; i < 3_000; i++) writeFileSync(join(dir, `f${i}.txt`), `file ${i}\n`);
    writeFileSync(join(dir, 'missing.txt'), 'the blob the pack leaves out\n');
    git(['add', '-A'], { cwd: dir });
    git(['commit', '-q', '-m', 'holes'], { cwd: dir });
    git(['clone', '-q', '--bare', dir, join(root, 'holes.git')]);
    const missing = git(['rev-parse', 'HEAD:missing.txt'], { cwd: dir }).trim();
    const ids = git(['rev-list', '--objects', 'HEAD'], { cwd: dir })
      .trim()
      .split('\n')
      .map((line) => line.slice(0, 40))
      .filter((id) => id !== missing);
    const pack = gitBytes(['pack-objects', '--stdout', '-q'], { cwd: dir, input: `${ids.join('\n')}\n` });
    const crafted = await craftedUpstream(pack);
    try {
      const before = await projectCount(server);
      const refused = await seed(server, { url: `${crafted.url}/holes.git` });
      expect(refused.status).toBe(400);
      // Named by the check's walk where the objects were streamed (LMDB), by the seed's own walk where not.
      expect(refused.body.error.message).toMatch(new RegExp(`The remote sent an incomplete history: (blob )?${missing} is missing\\.`));
      await expectNothingKept(server, before);
    } finally {
      await crafted.close();
    }
  });

  it('refuses a history that the rest of its pack check fails after it was stored, and keeps none of it', async () => {
    // Large enough for the checker's worker, which answers with the parsed objects first: the
    // history is stored while it runs fsck_finish() and refuses the .gitmodules.
    const dir = join(work.path, 'bad-modules-build');
    git(['init', '-q', '--initial-branch=main', dir]);
    writeFileSync(join(dir, 'noise.bin'), randomBytes(64 * 1024));
    writeFileSync(join(dir, '.gitmodules'), '[submodule "lib"]\n\tpath = lib\n\turl = --upload-pack=touch${IFS}pwned\n');
    git(['add', '-A'], { cwd: dir });
    git(['commit', '-q', '-m', 'bad modules'], { cwd: dir });
    git(['clone', '-q', '--bare', dir, join(root, 'bad-modules.git')]);
    const stored: number[] = [];
    server.th.store.onObjectsStored((project) => stored.push(project));
    const before = await projectCount(server);
    const refused = await seed(server, { url: `${backend.url}/bad-modules.git` });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/The fetched pack was refused: .*gitmodulesUrl/);
    expect(stored.length).toBeGreaterThan(0);
    await expectNothingKept(server, before);
  });
});
