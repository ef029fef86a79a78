import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFlush, encodePktLine } from '../../src/git/pktline.js';
import { git, gitAsync, gitAsyncOk, scratchDir } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const work = scratchDir('treehouse-interop-');
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
  work.remove();
});

const author = ['-c', 'user.name=Pusher', '-c', 'user.email=pusher@example.com'];

function remoteUrl(projectId: string, key = server.key): string {
  return `${server.url.replace('http://', `http://git:${key}@`)}/git/${projectId}.git`;
}

/** Runs git against the in-process server and returns {status, output} instead of throwing. */
const tryGit = (args: string[], cwd: string) => gitAsync(args, { cwd });

async function newProject(files: Record<string, string>) {
  const response = await server.call('POST', '/api/v1/projects', {
    title: 'Interop',
    source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  });
  expect(response.status).toBe(201);
  return response.body.project.id as string;
}

async function apiCommit(projectId: string, files: Record<string, string>, branch = 'main') {
  const written = await server.call('POST', `/api/v1/projects/${projectId}/files/batch`, { branch, files: Object.entries(files).map(([path, content]) => ({ path, content })) });
  expect(written.status).toBe(200);
  const committed = await server.call('POST', `/api/v1/projects/${projectId}/git/commit`, { branch });
  expect(committed.status).toBe(201);
  return committed.body.commit.oid as string;
}

describe('clone and fetch', () => {
  it.each([
    ['v0', ['-c', 'protocol.version=0']],
    ['v2', ['-c', 'protocol.version=2']],
  ])('clones with protocol %s, fetches new API commits, and fsck --strict is clean', async (_name, protocol) => {
    const id = await newProject({ 'index.html': '<h1>hi</h1>\n', 'src/app.ts': 'export {};\n' });
    const dir = join(work.path, `clone-${_name}`);
    await gitAsyncOk([...protocol, 'clone', '-q', remoteUrl(id), dir]);
    expect(git(['ls-files'], { cwd: dir }).trim().split('\n')).toEqual(['index.html', 'src/app.ts']);
    expect(git(['symbolic-ref', 'HEAD'], { cwd: dir }).trim()).toBe('refs/heads/main');
    git(['fsck', '--strict'], { cwd: dir });

    const second = await apiCommit(id, { 'src/app.ts': 'export const x = 1;\n', 'new/file.txt': 'new\n' });
    await gitAsyncOk([...protocol, 'fetch', '-q', 'origin'], { cwd: dir });
    expect(git(['rev-parse', 'origin/main'], { cwd: dir }).trim()).toBe(second);
    expect(git(['show', 'origin/main:new/file.txt'], { cwd: dir })).toBe('new\n');
    git(['fsck', '--strict'], { cwd: dir });
    const log = (await server.call('GET', `/api/v1/projects/${id}/git/log`)).body.commits.map((c: { oid: string }) => c.oid);
    expect(git(['log', '--format=%H', 'origin/main'], { cwd: dir }).trim().split('\n')).toEqual(log);
  });

  it('clones shallow with --depth 1 (v0 and v2)', async () => {
    const id = await newProject({ 'a.txt': '1\n' });
    await apiCommit(id, { 'a.txt': '2\n' });
    const head = await apiCommit(id, { 'a.txt': '3\n' });
    for (const version of ['0', '2']) {
      const dir = join(work.path, `shallow-${version}`);
      await gitAsyncOk(['-c', `protocol.version=${version}`, 'clone', '-q', '--depth', '1', remoteUrl(id), dir]);
      expect(git(['log', '--format=%H'], { cwd: dir }).trim().split('\n')).toEqual([head]);
      expect(git(['rev-parse', '--is-shallow-repository'], { cwd: dir }).trim()).toBe('true');
      git(['fsck', '--strict'], { cwd: dir });
    }
  });

  it('serves only objects reachable from the project refs', async () => {
    const id = await newProject({ 'a.txt': 'a\n' });
    await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: 'tmp' });
    const orphan = await apiCommit(id, { 'secret.txt': 'secret\n' }, 'tmp');
    await server.call('DELETE', `/api/v1/projects/${id}/git/branches/tmp`);
    const dir = join(work.path, 'reachable');
    await gitAsyncOk(['clone', '-q', remoteUrl(id), dir]);
    for (const version of ['0', '2']) {
      const fetched = await tryGit(['-c', `protocol.version=${version}`, 'fetch', 'origin', orphan], dir);
      expect(fetched.status).not.toBe(0);
    }
    expect((await tryGit(["cat-file", "-e", orphan], dir)).status).not.toBe(0);
  });

  it('asks for credentials and hides other teams', async () => {
    const id = await newProject({ 'a.txt': 'a\n' });
    const anonymous = await tryGit(['clone', '-q', `${server.url}/git/${id}.git`, join(work.path, 'anon')], work.path);
    expect(anonymous.status).not.toBe(0);
    expect(anonymous.output).toMatch(/Authentication failed|could not read Username|401/);
    await server.th.accounts.createTeam('strangers');
    const { key } = await server.th.accounts.createKey('strangers');
    const stranger = await tryGit(['clone', '-q', remoteUrl(id, key), join(work.path, 'stranger')], work.path);
    expect(stranger.status).not.toBe(0);
    expect(stranger.output).toMatch(/not found|404/);
  });

  it('takes the key as password with any user name, or as user name when the password is not a key (GitHub token forms)', async () => {
    const id = await newProject({ 'a.txt': 'a\n' });
    const base = server.url.replace('http://', '');
    const forms: Array<[string, boolean]> = [
      [`git:${server.key}`, true],
      [`oauth2:${server.key}`, true],
      [`${server.key}:x-oauth-basic`, true],
      [`${server.key}:`, true],
      // A password that is a key decides, even a wrong one.
      [`${server.key}:th_${'x'.repeat(43)}`, false],
      ['git:x-oauth-basic', false],
    ];
    for (const [index, [userinfo, works]] of forms.entries()) {
      const cloned = await tryGit(['clone', '-q', `http://${userinfo}@${base}/git/${id}.git`, join(work.path, `form-${index}`)], work.path);
      expect(cloned.status === 0, `${userinfo.replace(server.key, '<key>')}: ${cloned.output}`).toBe(works);
    }
    // The API reads the header the same way.
    const listed = await fetch(`${server.url}/api/v1/projects/${id}`, { headers: { authorization: `Basic ${Buffer.from(`${server.key}:x-oauth-basic`).toString('base64')}` } });
    expect(listed.status).toBe(200);
  });
});

describe('push', () => {
  it('pushes fast-forwards and new branches, refuses rewrites, main deletion and dirty branches', async () => {
    const id = await newProject({ 'a.txt': 'a\n' });
    const dir = join(work.path, 'push');
    await gitAsyncOk(['clone', '-q', remoteUrl(id), dir]);
    writeFileSync(join(dir, 'pushed.txt'), 'from git\n');
    git(['add', 'pushed.txt'], { cwd: dir });
    git([...author, 'commit', '-q', '-m', 'Pushed by git'], { cwd: dir });
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: dir });
    const pushed = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
    expect((await server.call('GET', `/api/v1/projects/${id}/files/pushed.txt`)).body.content).toBe('from git\n');
    expect((await server.call('GET', `/api/v1/projects/${id}/git/log`)).body.commits[0]).toMatchObject({ oid: pushed, message: 'Pushed by git', author_id: null });

    await gitAsyncOk(['push', '-q', 'origin', 'main:feature/from-git'], { cwd: dir });
    const branches = (await server.call('GET', `/api/v1/projects/${id}/git/branches`)).body.branches;
    expect(branches).toContainEqual({ name: 'feature/from-git', oid: pushed });
    expect((await server.call('GET', `/api/v1/projects/${id}/files/pushed.txt?branch=feature%2Ffrom-git`)).status).toBe(200);

    git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: dir });
    git([...author, 'commit', '-q', '--allow-empty', '-m', 'rewrite'], { cwd: dir });
    for (const force of [[], ['--force']]) {
      const rejected = await tryGit(['push', ...force, 'origin', 'main'], dir);
      expect(rejected.status).not.toBe(0);
      expect(rejected.output).toMatch(/non-fast-forward|rejected/);
    }
    const deleteMain = await tryGit(['push', 'origin', ':main'], dir);
    expect(deleteMain.status).not.toBe(0);
    expect(deleteMain.output).toContain('deleting main is not allowed');
    expect((await server.call('GET', `/api/v1/projects/${id}/git/log?limit=1`)).body.commits[0].oid).toBe(pushed);

    await gitAsyncOk(['push', '-q', 'origin', ':feature/from-git'], { cwd: dir });
    expect((await server.call('GET', `/api/v1/projects/${id}/git/branches`)).body.branches.map((b: { name: string }) => b.name)).toEqual(['main']);

    git(['reset', '-q', '--hard', pushed], { cwd: dir });
    await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'dirty.txt', content: 'not committed' }] });
    git([...author, 'commit', '-q', '--allow-empty', '-m', 'onto a dirty branch'], { cwd: dir });
    const dirty = await tryGit(['push', 'origin', 'main'], dir);
    expect(dirty.status).not.toBe(0);
    expect(dirty.output).toContain('uncommitted changes');
    expect((await server.call('GET', `/api/v1/projects/${id}/files/dirty.txt`)).body.content).toBe('not committed');
  });

  it('refuses a pushed tree that git fsck --strict would refuse, moving no ref', async () => {
    const id = await newProject({ 'a.txt': 'a\n' });
    const dir = join(work.path, 'badtree');
    await gitAsyncOk(['clone', '-q', remoteUrl(id), dir]);
    const blob = git(['hash-object', '-w', '--stdin'], { cwd: dir, input: 'x' }).trim();
    const body = Buffer.concat([Buffer.from('100644 .GIT\0'), Buffer.from(blob, 'hex')]);
    const tree = git(['hash-object', '-w', '--literally', '-t', 'tree', '--stdin'], { cwd: dir, input: body }).trim();
    const head = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
    const commit = git(['commit-tree', tree, '-p', head, '-m', 'bad'], { cwd: dir }).trim();
    const pushed = await tryGit(['push', 'origin', `${commit}:refs/heads/main`], dir);
    expect(pushed.status).not.toBe(0);
    expect(pushed.output).toMatch(/hasDotgit|unpack/);
    expect((await server.call('GET', `/api/v1/projects/${id}/git/log?limit=1`)).body.commits[0].oid).toBe(head);
  });
});

describe('malformed protocol input', () => {
  it('answers garbage with a protocol error and stays healthy', async () => {
    const id = await newProject({ 'a.txt': 'a\n' });
    const auth = `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`;
    const bodies: Array<[string, Buffer, Record<string, string>]> = [
      ['git-upload-pack', Buffer.from('0003'), {}],
      ['git-upload-pack', Buffer.from('fff0want'), {}],
      ['git-upload-pack', Buffer.from('zzzz'), {}],
      ['git-upload-pack', Buffer.concat([encodePktLine(`want ${'ab'.repeat(20)}\n`), encodeFlush(), encodePktLine('done\n')]), {}],
      ['git-upload-pack', Buffer.concat([encodePktLine('command=fetch\n'), encodeFlush()]), { 'git-protocol': 'version=2' }],
      ['git-upload-pack', Buffer.concat([encodePktLine('command=evil\n'), encodeFlush()]), { 'git-protocol': 'version=2' }],
      ['git-receive-pack', Buffer.from('0003'), {}],
      ['git-receive-pack', Buffer.concat([encodePktLine(`${'0'.repeat(40)} ${'1'.repeat(40)} refs/heads/x\0report-status\n`), encodeFlush(), Buffer.from('PACKgarbage')]), {}],
    ];
    for (const [service, body, headers] of bodies) {
      const response = await fetch(`${server.url}/git/${id}.git/${service}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': `application/x-${service}-request`, ...headers },
        body: new Uint8Array(body),
      });
      const text = Buffer.from(await response.arrayBuffer()).toString('latin1');
      // Answered as git's http-backend does: 200, with an ERR pkt-line (on side-band 3 for a push) or a refusing report.
      expect(response.status).toBe(200);
      expect(text).toMatch(/^[0-9a-f]{4}(ERR |\x03)|ng refs\/heads\/x|unpack (?!ok)/);
    }
    expect((await server.call('GET', '/healthz', undefined, { key: null })).status).toBe(200);
    expect(existsSync(server.dataDir)).toBe(true);
    expect((await server.call('GET', `/api/v1/projects/${id}/git/branches`)).body.branches.map((b: { name: string }) => b.name)).toEqual(['main']);
  });
});
