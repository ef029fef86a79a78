/**
 * Linked repositories against git's own `git http-backend`: every branch change is pushed to the
 * same-named upstream branch from a durable queue; a diverged upstream is never forced; the queue
 * survives a restart; credentials are used and never shown.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

const ALLOW = { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' };
const PASSWORD = 'linked-repo-token';
const work = scratchDir('treehouse-sync-');
const root = join(work.path, 'repos');
let backend: GitHttpBackend;
let authBackend: GitHttpBackend;
let server: TestServer;
let repoCount = 0;

beforeAll(async () => {
  backend = await startGitHttpBackend(root);
  authBackend = await startGitHttpBackend(root, { password: PASSWORD });
  server = await startTestServer({ env: ALLOW });
});

afterAll(async () => {
  await Promise.all([server?.close(), backend?.close(), authBackend?.close()]);
  work.remove();
});

/** A new empty bare repository under the backends' root; returns its name. */
function newUpstream(): string {
  const name = `up-${++repoCount}.git`;
  initBareRepo(join(root, name));
  return name;
}

const upstreamRef = (name: string, ref: string) => {
  try {
    return git(['rev-parse', '--verify', '-q', ref], { cwd: join(root, name) }).trim();
  } catch {
    return null;
  }
};

async function writeAndCommit(target: TestServer, id: string, files: Record<string, string>, branch = 'main'): Promise<string> {
  const written = await target.call('POST', `/api/v1/projects/${id}/files/batch`, { branch, files: Object.entries(files).map(([path, content]) => ({ path, content })) });
  expect(written.status).toBe(200);
  const committed = await target.call('POST', `/api/v1/projects/${id}/git/commit`, { branch });
  expect(committed.status).toBe(201);
  return committed.body.commit.oid;
}

/** Polls the remote's sync status until `done` holds (bounded), and returns the last answer. */
async function waitForSync(target: TestServer, id: string, done: (sync: any) => boolean, timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await target.call('GET', `/api/v1/projects/${id}/git/remote`);
    expect(response.status).toBe(200);
    if (done(response.body.remote.sync)) return response.body.remote;
    if (Date.now() > deadline) throw new Error(`sync did not settle: ${JSON.stringify(response.body.remote.sync)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A new project linked at creation to a new empty upstream, once its first push is done: the upstream's name and the project's id. */
async function linkedAndSynced(title: string, files: Record<string, string>): Promise<{ name: string; id: string }> {
  const name = newUpstream();
  const created = await server.call('POST', '/api/v1/projects', {
    title,
    source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) },
    git_remote: { url: `${backend.url}/${name}` },
  });
  expect(created.status).toBe(201);
  const id = created.body.project.id;
  await waitForSync(server, id, syncedAt(await mainHead(server, id)));
  return { name, id };
}

const syncedAt = (oid: string) => (sync: any) => sync.status === 'synced' && sync.oid === oid;

async function mainHead(target: TestServer, id: string): Promise<string> {
  const branches = (await target.call('GET', `/api/v1/projects/${id}/git/branches`)).body.branches;
  return branches.find((b: { name: string }) => b.name === 'main').oid;
}

describe('linked repositories', () => {
  it('links at creation and pushes every commit, restore and new branch to the same-named upstream branch', async () => {
    const name = newUpstream();
    const created = await server.call('POST', '/api/v1/projects', {
      title: 'Linked',
      source: { kind: 'files', files: [{ path: 'index.html', content: '<h1>hi</h1>\n' }] },
      git_remote: { url: `${backend.url}/${name}` },
    });
    expect(created.status).toBe(201);
    const id = created.body.project.id;
    expect(created.body.project.git_remote).toMatchObject({ url: `${backend.url}/${name}`, sync: { status: 'pending' } });
    const first = await mainHead(server, id);
    const remote = await waitForSync(server, id, syncedAt(first));
    expect(remote.sync.error).toBeNull();
    expect(upstreamRef(name, 'refs/heads/main')).toBe(first);
    expect((await server.call('GET', `/api/v1/projects/${id}`)).body.project.git_remote).toEqual(remote);

    const second = await writeAndCommit(server, id, { 'about.html': 'about\n' });
    await waitForSync(server, id, syncedAt(second));
    expect(upstreamRef(name, 'refs/heads/main')).toBe(second);
    git(['fsck', '--strict'], { cwd: join(root, name) });

    const restored = await server.call('POST', `/api/v1/projects/${id}/git/restore`, { oid: first });
    expect(restored.status).toBe(201);
    await waitForSync(server, id, syncedAt(restored.body.commit.oid));
    expect(upstreamRef(name, 'refs/heads/main')).toBe(restored.body.commit.oid);

    expect((await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: 'feature/x' })).status).toBe(201);
    const onBranch = await writeAndCommit(server, id, { 'x.txt': 'x\n' }, 'feature/x');
    await waitForSync(server, id, syncedAt(onBranch));
    expect(upstreamRef(name, 'refs/heads/feature/x')).toBe(onBranch);
    expect(git(['log', '--format=%H', 'feature/x'], { cwd: join(root, name) }).trim().split('\n')).toEqual(
      (await server.call('GET', `/api/v1/projects/${id}/git/log?branch=feature/x`)).body.commits.map((c: { oid: string }) => c.oid),
    );
  });

  it('pushes to where a redirect of the first request moved the upstream, as git push does', async () => {
    const name = newUpstream();
    // The old name answers its info/refs with a redirect to the new one (a renamed repository).
    const moving = await startGitHttpBackend(root, {
      beforeGit: (request, response) => {
        if (request.method !== 'GET' || !request.url?.startsWith('/old-name.git/')) return;
        response.writeHead(301, { location: `/${name}${request.url.slice('/old-name.git'.length)}` }).end();
        return 'answered';
      },
    });
    try {
      const created = await server.call('POST', '/api/v1/projects', {
        title: 'Linked through a redirect',
        source: { kind: 'files', files: [{ path: 'index.html', content: '<h1>moved</h1>\n' }] },
        git_remote: { url: `${moving.url}/old-name.git` },
      });
      expect(created.status).toBe(201);
      const id = created.body.project.id;
      await waitForSync(server, id, syncedAt(await mainHead(server, id)));
      const next = await writeAndCommit(server, id, { 'next.txt': 'next\n' });
      await waitForSync(server, id, syncedAt(next));
      expect(upstreamRef(name, 'refs/heads/main')).toBe(next);
      // Each push asked the old name once, then went to the new one.
      expect(moving.log.filter((line) => line.startsWith('POST /old-name.git'))).toEqual([]);
      expect(moving.log.filter((line) => line.startsWith(`POST /${name}/git-receive-pack`)).length).toBeGreaterThanOrEqual(2);
      git(['fsck', '--strict'], { cwd: join(root, name) });
    } finally {
      await moving.close();
    }
  });

  it('pushes the stored deltas (LMDB: pack-ready forms), thin against what the upstream holds, as git would, and the upstream stays fsck-clean', async () => {
    const name = newUpstream();
    // Packs are kept as sent (not unpacked into loose objects), so what arrived can be read back.
    git(['config', 'receive.unpackLimit', '1'], { cwd: join(root, name) });
    const version = (round: number) => Array.from({ length: 400 }, (_, line) => `line ${line} of a long file${line === round * 7 ? ` edited in round ${round}` : ''}`).join('\n') + '\n';
    const created = await server.call('POST', '/api/v1/projects', { title: 'Deltas', source: { kind: 'files', files: [{ path: 'long.txt', content: version(0) }] } });
    const id = created.body.project.id;
    for (let round = 1; round <= 4; round++) await writeAndCommit(server, id, { 'long.txt': version(round) });
    // The deflate cache makes each version a delta against the one it replaced.
    await server.th.deflateCache.idle();
    expect((await server.call('PUT', `/api/v1/projects/${id}/git/remote`, { url: `${backend.url}/${name}` })).status).toBe(200);
    await waitForSync(server, id, syncedAt(await mainHead(server, id)));
    const packs = () => readdirSync(join(root, name, 'objects', 'pack')).filter((file) => file.endsWith('.idx')).map((file) => join(root, name, 'objects', 'pack', file));
    // verify-pack -v: "<id> <type> <size> <size-in-pack> <offset> <depth> <base>" for a delta.
    const deltasIn = (idx: string) => git(['verify-pack', '-v', idx]).split('\n').filter((line) => /^[0-9a-f]{40} blob .* [0-9a-f]{40}$/.test(line));
    expect(packs()).toHaveLength(1);
    // A store without pack-ready forms (PostgreSQL) has no stored deltas to send: every object whole.
    const forms = server.th.store.packForms;
    if (forms) expect(deltasIn(packs()[0]).length).toBeGreaterThanOrEqual(3);
    else expect(deltasIn(packs()[0])).toEqual([]);
    git(['fsck', '--strict'], { cwd: join(root, name) });

    // One more edit: a thin pack whose one blob is a delta on the version the upstream has.
    const before = new Set(packs());
    await server.th.deflateCache.idle();
    const head = await writeAndCommit(server, id, { 'long.txt': version(5) });
    await server.th.deflateCache.idle();
    await server.call('POST', `/api/v1/projects/${id}/git/remote/sync`);
    await waitForSync(server, id, syncedAt(head));
    const added = packs().filter((idx) => !before.has(idx));
    expect(added).toHaveLength(1);
    // index-pack --fix-thin completes a thin pack with the bases it named: the new blob is a delta on one.
    const blob = git(['rev-parse', `${head}:long.txt`], { cwd: join(root, name) }).trim();
    // Made while sending on both backends: a thin delta on what the upstream has.
    expect(deltasIn(added[0]).some((line) => line.startsWith(blob))).toBe(true);
    expect(upstreamRef(name, 'refs/heads/main')).toBe(head);
    git(['fsck', '--strict'], { cwd: join(root, name) });
  });

  it('forgets the queued pushes and sync state of a deleted project with it', async () => {
    const { name, id } = await linkedAndSynced('Deleted later', { 'index.html': 'soon gone\n' });
    const syncRecords = async () => (await server.th.store.read(async (tx) => tx.listRecords('remote-sync/'))).filter((r) => r.key.includes(id));
    expect((await syncRecords()).map((r) => r.key)).toEqual([`remote-sync/state/${id}`]);
    expect((await server.call('DELETE', `/api/v1/projects/${id}`)).status).toBe(200);
    expect(await syncRecords()).toEqual([]);
  });

  it('pushes what stock git pushed to the project, and links with PUT using a token that is never shown', async () => {
    const name = newUpstream();
    const created = await server.call('POST', '/api/v1/projects', { title: 'Put link', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
    const id = created.body.project.id;
    expect(created.body.project.git_remote).toBeNull();
    expect((await server.call('GET', `/api/v1/projects/${id}/git/remote`)).status).toBe(404);

    const missingToken = await server.call('PUT', `/api/v1/projects/${id}/git/remote`, { url: `${authBackend.url}/${name}` });
    expect(missingToken.status).toBe(200);
    const refused = await waitForSync(server, id, (sync) => sync.status === 'error');
    expect(refused.sync.error).toMatch(/requires authentication/);

    const linked = await server.call('PUT', `/api/v1/projects/${id}/git/remote`, { url: `${authBackend.url}/${name}`, username: 'bot', token: PASSWORD });
    expect(linked.status).toBe(200);
    expect(linked.body.remote).toMatchObject({ url: `${authBackend.url}/${name}`, sync: { status: 'pending' } });
    expect(Object.keys(linked.body.remote).sort()).toEqual(['linked_at', 'sync', 'url']);
    await waitForSync(server, id, syncedAt(await mainHead(server, id)));
    const stored = (await server.th.store.read((tx) => tx.getRecord<{ git_remote: { username: string; token_sealed: string } }>(`project/${id}`)))!;
    expect(stored.git_remote.username).toBe('bot');
    expect(stored.git_remote.token_sealed).not.toContain(PASSWORD);
    expect(server.th.projects.unsealToken(stored.git_remote.token_sealed)).toBe(PASSWORD);

    // Some API history first, then several commits in one push (git packs them newest first).
    await writeAndCommit(server, id, { 'b.txt': 'b\n' });
    await waitForSync(server, id, syncedAt(await writeAndCommit(server, id, { 'c.txt': 'c\n' })));
    const clone = join(work.path, `clone-${id}`);
    await gitAsyncOk(['clone', '-q', `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${id}.git`, clone]);
    for (const file of ['pushed-1.txt', 'pushed-2.txt', 'pushed-3.txt']) {
      writeFileSync(join(clone, file), `${file}\n`);
      git(['add', file], { cwd: clone });
      git(['commit', '-q', '-m', `Add ${file}`], { cwd: clone });
    }
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: clone });
    const pushed = git(['rev-parse', 'HEAD'], { cwd: clone }).trim();
    await waitForSync(server, id, syncedAt(pushed));
    expect(upstreamRef(name, 'refs/heads/main')).toBe(pushed);

    // Credentials in the URL move out of it; neither form is ever returned.
    const inUrl = await server.call('PUT', `/api/v1/projects/${id}/git/remote`, { url: authBackend.url.replace('http://', `http://bot:${PASSWORD}@`) + `/${name}` });
    expect(inUrl.status).toBe(200);
    expect(inUrl.body.remote.url).toBe(`${authBackend.url}/${name}`);
    await waitForSync(server, id, syncedAt(pushed));
    for (const path of [`/api/v1/projects/${id}`, `/api/v1/projects/${id}/git/remote`]) {
      expect(JSON.stringify((await server.call('GET', path)).body)).not.toContain(PASSWORD);
    }

    const sync = await server.call('POST', `/api/v1/projects/${id}/git/remote/sync`);
    expect(sync.status).toBe(202);
    expect(sync.body.remote.sync.status).toBe('pending');
    await waitForSync(server, id, syncedAt(pushed));

    const unlinked = await server.call('DELETE', `/api/v1/projects/${id}/git/remote`);
    expect(unlinked.status).toBe(200);
    expect(unlinked.body.remote.url).toBe(`${authBackend.url}/${name}`);
    expect((await server.call('GET', `/api/v1/projects/${id}/git/remote`)).status).toBe(404);
    expect((await server.call('POST', `/api/v1/projects/${id}/git/remote/sync`)).status).toBe(404);
    expect((await server.call('GET', `/api/v1/projects/${id}`)).body.project.git_remote).toBeNull();
  });

  it('never force-pushes: an upstream that moved on is reported as diverged and left unchanged', async () => {
    const { name, id } = await linkedAndSynced('Diverge', { 'a.txt': 'a\n' });

    // Someone else pushes to the upstream directly.
    const other = join(work.path, `other-${id}`);
    git(['clone', '-q', join(root, name), other]);
    writeFileSync(join(other, 'theirs.txt'), 'theirs\n');
    git(['add', 'theirs.txt'], { cwd: other });
    git(['commit', '-q', '-m', 'Upstream change'], { cwd: other });
    git(['push', '-q', 'origin', 'main'], { cwd: other });
    const theirs = git(['rev-parse', 'HEAD'], { cwd: other }).trim();

    const ours = await writeAndCommit(server, id, { 'ours.txt': 'ours\n' });
    const remote = await waitForSync(server, id, (sync) => sync.status === 'diverged');
    expect(remote.sync.oid).toBe(ours);
    expect(remote.sync.error).toContain(theirs);
    expect(upstreamRef(name, 'refs/heads/main')).toBe(theirs);

    // A forced sync request does not force either.
    expect((await server.call('POST', `/api/v1/projects/${id}/git/remote/sync`)).status).toBe(202);
    await waitForSync(server, id, (sync) => sync.status === 'diverged');
    expect(upstreamRef(name, 'refs/heads/main')).toBe(theirs);
  });

  it('pushes no branch another node holds a live claim on, keeps that claim for a change queued meanwhile, and takes the branch over once the claim lapses', async () => {
    const { name, id } = await linkedAndSynced('Claims', { 'a.txt': 'a\n' });
    // What a node that is pushing (or died pushing) leaves on the queue: entries under its claim.
    // This node's worker is stopped while they are made, so they are not pushed first.
    await server.th.remoteSync.stop();
    const queueKey = (branch: string) => `remote-sync/queue/${id}/${branch}`;
    const claimBy = (branch: string, until: number) =>
      server.th.store.write(async (tx) => {
        const entry = await tx.getRecord<Record<string, unknown>>(queueKey(branch));
        tx.putRecord(queueKey(branch), { ...entry, claim: { token: `claim-of-${branch}`, node: 'another-node', until } });
      });
    const held = 'held';
    expect((await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: held })).status).toBe(201);
    const mainAfter = await writeAndCommit(server, id, { 'main.txt': 'main\n' });
    for (let tries = 0; (await server.th.store.read((tx) => tx.listRecords(`remote-sync/queue/${id}/`))).length < 2; tries++) {
      expect(tries).toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    // A live claim (another node pushing now) on `held`, a lapsed one (a node that died) on main.
    await claimBy(held, Date.now() + 60 * 60_000);
    await claimBy('main', Date.now() - 1);
    // A change of `held` queued while its push is under way keeps the push's claim.
    const heldAfter = await writeAndCommit(server, id, { 'held.txt': 'held\n' }, held);
    for (let tries = 0; ((await server.th.store.read((tx) => tx.getRecord<{ oid: string }>(queueKey(held)))))?.oid !== heldAfter; tries++) {
      expect(tries).toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    server.th.remoteSync.start();
    await waitForSync(server, id, syncedAt(mainAfter));
    expect(upstreamRef(name, 'refs/heads/main')).toBe(mainAfter);
    // Main was pushed; `held` was not, and its entry still carries the other node's claim.
    expect(upstreamRef(name, `refs/heads/${held}`)).toBeNull();
    const waiting = await server.th.store.read((tx) => tx.getRecord<{ oid: string; claim: { token: string } }>(queueKey(held)));
    expect(waiting).toMatchObject({ oid: heldAfter, claim: { token: `claim-of-${held}` } });
    // The claim lapses (its node stopped renewing it): the branch is pushed by this node.
    await claimBy(held, Date.now() - 1);
    server.th.remoteSync.kick();
    await waitForSync(server, id, syncedAt(heldAfter));
    expect(upstreamRef(name, `refs/heads/${held}`)).toBe(heldAfter);
    expect(await server.th.store.read((tx) => tx.listRecords(`remote-sync/queue/${id}/`))).toEqual([]);
    git(['fsck', '--strict'], { cwd: join(root, name) });
  });

  it('queues a commit\'s push in the commit\'s own transaction: once it is answered, the sync state names it', async () => {
    const { name, id } = await linkedAndSynced('Queued with the commit', { 'a.txt': 'a\n' });
    for (let round = 0; round < 5; round++) {
      const head = await writeAndCommit(server, id, { [`f${round}.txt`]: `${round}\n` });
      // Asked at once: never the earlier push's "synced", nor a state the commit's push has not reached.
      const { sync } = (await server.call('GET', `/api/v1/projects/${id}/git/remote`)).body.remote;
      expect(sync.oid, `round ${round}`).toBe(head);
      expect(['pending', 'synced']).toContain(sync.status);
      const events = (await server.call('GET', '/api/v1/events?limit=1000')).body.events.filter((event: any) => event.project_id === id);
      const committed = events.findIndex((event: any) => event.type === 'commit.created' && event.data.oid === head);
      expect(events[committed + 1]).toMatchObject({ type: 'sync.status', data: { branch: 'main', status: 'pending', oid: head } });
      expect(Number(events[committed + 1].id)).toBe(Number(events[committed].id) + 1);
    }
    await waitForSync(server, id, (sync) => sync.status === 'synced');
    expect(upstreamRef(name, 'refs/heads/main')).toBe(await mainHead(server, id));
  });

  it('keeps queued pushes across a restart and completes them once the upstream is back', async () => {
    const name = newUpstream();
    const dataDir = scratchDir('treehouse-sync-data-');
    const down = await startGitHttpBackend(root);
    const port = Number(new URL(down.url).port);
    let first: TestServer | undefined = await startTestServer({ env: ALLOW, dataDir: dataDir.path });
    let second: TestServer | undefined;
    let back: GitHttpBackend | undefined;
    let upstreamDown = false;
    try {
      const created = await first.call('POST', '/api/v1/projects', {
        title: 'Restart',
        source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] },
        git_remote: { url: `${down.url}/${name}` },
      });
      const id = created.body.project.id;
      await waitForSync(first, id, syncedAt(await mainHead(first, id)));

      await down.close();
      upstreamDown = true;
      const queued = await writeAndCommit(first, id, { 'b.txt': 'b\n' });
      const failing = await waitForSync(first, id, (sync) => sync.status === 'pending' && sync.oid === queued && sync.error !== null);
      expect(failing.sync.error).toMatch(/could not be reached/);
      await first.close();
      first = undefined;

      back = await startGitHttpBackend(root, { port });
      second = await startTestServer({ env: ALLOW, dataDir: dataDir.path });
      await waitForSync(second, id, syncedAt(queued));
      expect(upstreamRef(name, 'refs/heads/main')).toBe(queued);
    } finally {
      await first?.close();
      if (!upstreamDown) await down.close();
      await second?.close();
      await back?.close();
      dataDir.remove();
    }
  });
});
