/**
 * .gitmodules (and .gitattributes) contents are checked as `git fsck --strict` checks them, on
 * pushes, git seeds, API writes, moves, seeds and merges: what git's own receive-pack with
 * receive.fsckObjects refuses, Treehouse refuses, and nothing it accepts makes a clone fail fsck.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsync, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

const work = scratchDir('treehouse-gitmodules-');
const reposRoot = join(work.path, 'repos');
let server: TestServer;
let backend: GitHttpBackend;
beforeAll(async () => {
  mkdirSync(reposRoot);
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  backend = await startGitHttpBackend(reposRoot);
});
afterAll(async () => {
  await Promise.all([server?.close(), backend?.close()]);
  work.remove();
});

const author = ['-c', 'user.name=Pusher', '-c', 'user.email=pusher@example.com'];
const GOOD = '[submodule "lib"]\n\tpath = lib\n\turl = https://example.com/lib.git\n';
/** Contents git fsck --strict refuses, with the message id it reports. */
const BAD: Array<[string, string]> = [
  ['[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch$IFS/tmp/pwned\n', 'gitmodulesUrl'],
  ['[submodule "../../x"]\n\tpath = x\n\turl = https://example.com/x.git\n', 'gitmodulesName'],
  ['[submodule "x"]\n\tpath = --evil\n\turl = https://example.com/x.git\n', 'gitmodulesPath'],
  ['[submodule "x"]\n\tpath = x\n\tupdate = !sh -c evil\n', 'gitmodulesUpdate'],
  ['[submodule "x"]\n\tpath = x\n\turl = https::///nohost\n', 'gitmodulesUrl'],
];

function remoteUrl(projectId: string): string {
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

async function api(method: string, path: string, body?: unknown, expected = 200) {
  const response = await server.call(method, path, body);
  expect(response.status, JSON.stringify(response.body)).toBe(expected);
  return response.body;
}

async function newProject(files: Record<string, string> = { 'a.txt': 'a\n' }): Promise<string> {
  const created = await api('POST', '/api/v1/projects', { title: 'Modules', source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) } }, 201);
  return created.project.id;
}

/** A commit on top of HEAD in `dir` that adds `.gitmodules` with `content`. */
function commitGitmodules(dir: string, content: string, name = '.gitmodules'): string {
  writeFileSync(join(dir, name), content);
  git(['add', name], { cwd: dir });
  git([...author, 'commit', '-q', '-m', `${name}`], { cwd: dir });
  return git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
}

describe('.gitmodules checks', () => {
  it('refuse pushes git itself refuses with receive.fsckObjects, and take a good one', async () => {
    const id = await newProject();
    const dir = join(work.path, 'push');
    await gitAsyncOk(['clone', '-q', remoteUrl(id), dir]);
    const head = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
    // git's own receive-pack, checking objects as a careful server does.
    const mirror = join(work.path, 'mirror.git');
    initBareRepo(mirror);
    git(['config', 'receive.fsckObjects', 'true'], { cwd: mirror });
    await gitAsyncOk(['push', '-q', mirror, 'HEAD:refs/heads/main'], { cwd: dir });
    for (const [content, id_] of BAD) {
      git(['reset', '-q', '--hard', head], { cwd: dir });
      const bad = commitGitmodules(dir, content);
      const theirs = await gitAsync(['push', mirror, `${bad}:refs/heads/main`], { cwd: dir });
      expect(theirs.status, `git receive-pack took ${id_}`).not.toBe(0);
      expect(theirs.output).toContain(id_);
      const ours = await gitAsync(['push', 'origin', `${bad}:refs/heads/main`], { cwd: dir });
      expect(ours.status, `Treehouse took ${id_}`).not.toBe(0);
      expect(ours.output).toContain(id_);
    }
    // A directory named .gitmodules: gitmodulesBlob for both.
    git(['reset', '-q', '--hard', head], { cwd: dir });
    mkdirSync(join(dir, '.gitmodules'));
    commitGitmodules(dir, 'x\n', '.gitmodules/x');
    expect((await gitAsync(['push', mirror, 'HEAD:refs/heads/main'], { cwd: dir })).output).toContain('gitmodulesBlob');
    expect((await gitAsync(['push', 'origin', 'HEAD:refs/heads/main'], { cwd: dir })).output).toContain('gitmodulesBlob');
    expect((await api('GET', `/api/v1/projects/${id}/git/log?limit=1`)).commits[0].oid).toBe(head);

    git(['reset', '-q', '--hard', head], { cwd: dir });
    const good = commitGitmodules(dir, GOOD);
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: dir });
    expect((await api('GET', `/api/v1/projects/${id}/git/log?limit=1`)).commits[0].oid).toBe(good);
  });

  it('refuse API writes, moves and seeds of such contents (400, nothing written), and clones stay fsck-clean', async () => {
    const id = await newProject({ 'notes.txt': BAD[0][0] });
    const base = `/api/v1/projects/${id}`;
    const paths = async () => (await api('GET', `${base}/files`)).files.map((file: { path: string }) => file.path);
    for (const [content, id_] of BAD) {
      for (const path of ['.gitmodules', 'sub/dir/.gitmodules', '.GITMODULES', 'gitmod~1']) {
        const refused = await server.call('POST', `${base}/files/batch`, { files: [{ path: 'ok.txt', content: 'ok' }, { path, content }] });
        expect(refused.status, `${path} ${id_}`).toBe(400);
        expect(refused.body.error.details.issues).toEqual([{ path: 'files.1.content', message: expect.stringContaining(id_) }]);
      }
    }
    const moved = await server.call('POST', `${base}/files/move`, { from: 'notes.txt', to: '.gitmodules' });
    expect(moved.status).toBe(400);
    expect(moved.body.error.details.issues[0]).toMatchObject({ path: 'to', message: expect.stringContaining('gitmodulesUrl') });
    expect((await server.call('POST', `${base}/files/batch`, { files: [{ path: '.gitmodules/x', content: 'x' }] })).status).toBe(400);
    const longAttributes = await server.call('POST', `${base}/files/batch`, { files: [{ path: '.gitattributes', content: `*.txt ${'x'.repeat(3000)}\n` }] });
    expect(longAttributes.status).toBe(400);
    expect(longAttributes.body.error.message).toContain('gitattributesLineLength');
    expect(await paths()).toEqual(['notes.txt']);
    const seeded = await server.call('POST', '/api/v1/projects', { title: 'Bad seed', source: { kind: 'files', files: [{ path: '.gitmodules', content: BAD[1][0] }] } });
    expect(seeded.status).toBe(400);

    // Good contents are taken, and a clone checking every object agrees.
    await api('POST', `${base}/files/batch`, { files: [{ path: '.gitmodules', content: GOOD }, { path: '.gitattributes', content: '*.txt text\n' }] });
    await api('POST', `${base}/git/commit`, {}, 201);
    const clone = join(work.path, 'api-clone');
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', remoteUrl(id), clone]);
    git(['fsck', '--strict'], { cwd: clone });
  });

  it('refuse a merge whose rename gives .gitmodules content git refuses, changing nothing', async () => {
    const id = await newProject({ 'notes.txt': GOOD });
    const base = `/api/v1/projects/${id}`;
    await api('POST', `${base}/git/branches`, { name: 'side' }, 201);
    // Main renames the file to .gitmodules (its content is fine there); the side edits it into
    // something fine as notes.txt but not as .gitmodules. The merge carries the edit into .gitmodules.
    await api('POST', `${base}/files/move`, { from: 'notes.txt', to: '.gitmodules' });
    await api('POST', `${base}/git/commit`, { message: 'rename' }, 201);
    await api('POST', `${base}/files/batch`, { branch: 'side', files: [{ path: 'notes.txt', content: GOOD.replace('https://example.com/lib.git', '--upload-pack=evil') }] });
    await api('POST', `${base}/git/commit`, { branch: 'side', message: 'edit' }, 201);
    const head = (await api('GET', `${base}/git/log?limit=1`)).commits[0].oid;
    const refused = await server.call('POST', `${base}/git/merge`, { source: 'side' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('gitmodulesUrl');
    expect((await api('GET', `${base}/git/log?limit=1`)).commits[0].oid).toBe(head);
    expect((await api('GET', `${base}/files/.gitmodules`)).content).toBe(GOOD);
  });

  it('refuse a git seed whose history has such a .gitmodules', async () => {
    const build = join(work.path, 'seed-build');
    git(['init', '-q', '--initial-branch=main', build]);
    commitGitmodules(build, GOOD);
    commitGitmodules(build, BAD[0][0]);
    git(['clone', '-q', '--bare', build, join(reposRoot, 'bad-modules.git')]);
    const seeded = await server.call('POST', '/api/v1/projects', { title: 'Seed', source: { kind: 'git', url: `${backend.url}/bad-modules.git` } });
    expect(seeded.status).toBe(400);
    expect(seeded.body.error.message).toContain('gitmodulesUrl');
  });
});
