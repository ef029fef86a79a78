/**
 * Repeat clones (src/repo/wire/clonePacks.ts): a clone of tips that were cloned before, whole or
 * to the same depth, is answered with the pack made then, which must be what the first clone got,
 * hold what a clone from git http-backend holds and pass git's strict checks, over protocol v2 and
 * v0. A fetch with haves and a fetch that deepens a shallow clone are planned as before; a clone of
 * tips that moved on grows the kept pack when every old tip is reached, else is planned whole; a
 * pack that had to deflate objects with no form yet while the client waited is not kept.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeHistoryRepo } from '../../fixtures/history.js';
import { parsePack } from '../../src/git/pack.js';
import { encodeFlush, encodePktLine } from '../../src/git/pktline.js';
import { git, gitAsyncOk, scratchDir } from '../support/git.js';
import { objectsOf, packOf, strictClone } from '../support/clones.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

const work = scratchDir('treehouse-clone-packs-');
const served = join(work.path, 'served');
const upstream = join(served, 'history.git');
let server: TestServer;
let backend: GitHttpBackend;
let projectId = '';

const urlOf = (on: TestServer, project: string) => `${on.url.replace('http://', `http://git:${on.key}@`)}/git/${project}.git`;
const counts = (on: TestServer) => ({ hits: on.th.clonePacks.hits, grown: on.th.clonePacks.grown, misses: on.th.clonePacks.misses });

/**
 * `work`, counting the store reads the server makes meanwhile (a spy on the real store): a clone
 * answered from a kept pack reads the refs and wants; a planned one reads the history and its forms.
 */
async function readsDuring<T>(on: TestServer, work: () => Promise<T>): Promise<{ result: T; reads: number }> {
  const store = on.th.store;
  const original = store.read;
  let reads = 0;
  store.read = ((action) => {
    reads++;
    return original.call(store, action);
  }) as typeof store.read;
  try {
    return { result: await work(), reads };
  } finally {
    store.read = original;
  }
}

/** The one pack a fresh bare clone holds, as it was received. */
const packBytes = (bareDir: string) => readFileSync(packOf(bareDir).path);

/** A strictly checked bare clone (test/support/clones.ts), and its pack's bytes. */
const strictClonePack = async (url: string, dir: string, config: string[] = []): Promise<Buffer> => readFileSync(await strictClone(url, dir, work.path, config));

beforeAll(async () => {
  await writeHistoryRepo(upstream, { commits: 120, files: 80, hotFiles: 3 });
  git(['repack', '-adf', '-q'], { cwd: upstream });
  backend = await startGitHttpBackend(served);
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  const created = await server.call('POST', '/api/v1/projects', { title: 'Clones', source: { kind: 'git', url: `${backend.url}/history.git` } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  projectId = created.body.project.id;
  await server.th.deflateCache.idle();
}, 120_000);

afterAll(async () => {
  await server?.close();
  await backend?.close();
  work.remove();
});

describe('a shallow clone', () => {
  it('of one depth gets the pack the first of that depth made: what git http-backend sends for it, and deepening it is planned', async () => {
    const url = urlOf(server, projectId);
    const before = counts(server);
    const first = await readsDuring(server, () => gitAsyncOk(['clone', '-q', '--bare', '--depth', '3', url, join(work.path, 'depth3-a.git')]));
    const second = await readsDuring(server, () => gitAsyncOk(['clone', '-q', '--bare', '--depth', '3', url, join(work.path, 'depth3-b.git')]));
    await gitAsyncOk(['clone', '-q', '--bare', '--depth', '2', url, join(work.path, 'depth2.git')]);
    expect(counts(server)).toEqual({ hits: before.hits + 1, grown: before.grown, misses: before.misses + 2 });
    expect(first.reads).toBeGreaterThan(second.reads);
    expect(second.reads).toBeLessThan(20);
    expect(packBytes(join(work.path, 'depth3-b.git')).equals(packBytes(join(work.path, 'depth3-a.git')))).toBe(true);

    const theirs = join(work.path, 'depth3-git.git');
    await gitAsyncOk(['clone', '-q', '--bare', '--depth', '3', `${backend.url}/history.git`, theirs]);
    for (const dir of ['depth3-a.git', 'depth3-b.git']) {
      await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: join(work.path, dir) });
      expect(objectsOf(join(work.path, dir))).toEqual(objectsOf(theirs));
      expect(readFileSync(join(work.path, dir, 'shallow'), 'utf8').split('\n').sort()).toEqual(readFileSync(join(theirs, 'shallow'), 'utf8').split('\n').sort());
    }
    // The client now has shallow commits: its fetch to deepen is planned, never a kept pack.
    const deepening = counts(server);
    await gitAsyncOk(['fetch', '-q', '--deepen', '2', 'origin', '+refs/heads/*:refs/heads/*'], { cwd: join(work.path, 'depth3-b.git') });
    expect(counts(server)).toEqual(deepening);
    await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: join(work.path, 'depth3-b.git') });
  }, 120_000);
});

describe('a repeat clone', () => {
  it('gets the first clone\'s pack, kept, over v2 and v0: the objects git http-backend serves, strict-checked', async () => {
    const before = counts(server);
    const keptBefore = server.th.clonePacks.bytesUsed;
    const { result: first, reads: planned } = await readsDuring(server, () => strictClonePack(urlOf(server, projectId), join(work.path, 'first.git')));
    expect(counts(server)).toEqual({ hits: before.hits, grown: before.grown, misses: before.misses + 1 });
    const { result: second, reads: keptV2 } = await readsDuring(server, () => strictClonePack(urlOf(server, projectId), join(work.path, 'second.git')));
    const { result: third, reads: keptV0 } = await readsDuring(server, () => strictClonePack(urlOf(server, projectId), join(work.path, 'third.git'), ['-c', 'protocol.version=0']));
    expect(counts(server)).toEqual({ hits: before.hits + 2, grown: before.grown, misses: before.misses + 1 });
    // Measured: 203 reads planned, 9 and 6 (advertisement, wants, haves) answered from the kept pack.
    expect(planned).toBeGreaterThan(50);
    expect(Math.max(keptV2, keptV0)).toBeLessThan(20);
    expect(second.equals(first)).toBe(true);
    expect(third.equals(first)).toBe(true);
    // The pack, and the ids of its objects (20 bytes each, for a later clone to grow it).
    expect(server.th.clonePacks.bytesUsed).toBe(keptBefore + first.length + 20 * first.readUInt32BE(8));

    const theirs = join(work.path, 'from-git.git');
    await gitAsyncOk(['clone', '-q', '--bare', `${backend.url}/history.git`, theirs]);
    for (const dir of ['first.git', 'second.git', 'third.git']) {
      expect(objectsOf(join(work.path, dir))).toEqual(objectsOf(theirs));
      expect(git(['for-each-ref'], { cwd: join(work.path, dir) })).toEqual(git(['for-each-ref'], { cwd: theirs }));
    }
  }, 120_000);

  it('comes unframed to a v0 client without side-band, with REF_DELTA bases for one that does not take OFS_DELTA', async () => {
    const head = git(['rev-parse', 'main'], { cwd: upstream }).trim();
    const post = async (capabilities: string) => {
      const request = Buffer.concat([encodePktLine(`want ${head}${capabilities}\n`), encodeFlush(), encodePktLine('done\n')]);
      const response = await fetch(`${server.url}/git/${projectId}.git/git-upload-pack`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`, 'content-type': 'application/x-git-upload-pack-request' },
        body: request,
      });
      expect(response.status).toBe(200);
      const answer = Buffer.from(await response.arrayBuffer());
      // "NAK", then the pack as it is.
      expect(answer.toString('latin1', 0, 8)).toBe('0008NAK\n');
      return answer.subarray(8);
    };
    const objectIds = (pack: Buffer) => parsePack(pack).objects.map((object) => object.oid.toString('hex')).sort().join('\n');
    const history = git(['rev-list', '--objects', head], { cwd: upstream }).trim().split('\n').map((line) => line.slice(0, 40)).sort().join('\n');
    const before = counts(server);
    // OFS_DELTA: the pack the git clients above got, side-band framing taken off.
    const { result: ofs, reads: ofsReads } = await readsDuring(server, () => post(' ofs-delta'));
    expect(ofs.equals(packBytes(join(work.path, 'first.git')))).toBe(true);
    // REF_DELTA: a pack of its own, planned once, then kept.
    const { result: planned } = await readsDuring(server, () => post(''));
    const { result: kept, reads: keptReads } = await readsDuring(server, () => post(''));
    expect(counts(server)).toEqual({ hits: before.hits + 2, grown: before.grown, misses: before.misses + 1 });
    expect(Math.max(ofsReads, keptReads)).toBeLessThan(20);
    expect(kept.equals(planned)).toBe(true);
    expect(kept.equals(ofs)).toBe(false);
    for (const pack of [ofs, kept]) expect(objectIds(pack)).toEqual(history);
  }, 60_000);

  it('is made anew once the tips move (the kept pack grown), and a fetch is never answered from a kept pack', async () => {
    await strictClonePack(urlOf(server, projectId), join(work.path, 'kept.git'));
    const before = counts(server);
    const written = await server.call('POST', `/api/v1/projects/${projectId}/files/batch`, { branch: 'main', files: [{ path: 'moved.txt', content: 'the tip moves\n' }] });
    expect(written.status).toBe(200);
    const committed = await server.call('POST', `/api/v1/projects/${projectId}/git/commit`, { branch: 'main' });
    expect(committed.status).toBe(201);
    await server.th.deflateCache.idle();

    await gitAsyncOk(['fetch', '-q', 'origin', '+refs/heads/*:refs/heads/*'], { cwd: join(work.path, 'kept.git') });
    expect(counts(server)).toEqual(before);
    expect(git(['rev-parse', 'main'], { cwd: join(work.path, 'kept.git') }).trim()).toBe(committed.body.commit.oid);

    const moved = await strictClonePack(urlOf(server, projectId), join(work.path, 'moved.git'));
    expect(counts(server)).toEqual({ hits: before.hits, grown: before.grown + 1, misses: before.misses });
    expect(git(['rev-parse', 'main'], { cwd: join(work.path, 'moved.git') }).trim()).toBe(committed.body.commit.oid);
    const again = await strictClonePack(urlOf(server, projectId), join(work.path, 'moved-again.git'));
    expect(again.equals(moved)).toBe(true);
    expect(counts(server)).toEqual({ hits: before.hits + 1, grown: before.grown + 1, misses: before.misses });
  }, 120_000);
});

describe('a clone of tips that moved on', () => {
  /** A commit of one file on `branch` through the API, its forms made; the commit's id. */
  const commitFile = async (branch: string, path: string): Promise<string> => {
    const written = await server.call('POST', `/api/v1/projects/${projectId}/files/batch`, { branch, files: [{ path, content: `${path} on ${branch}\n` }] });
    expect(written.status).toBe(200);
    const committed = await server.call('POST', `/api/v1/projects/${projectId}/git/commit`, { branch });
    expect(committed.status).toBe(201);
    await server.th.deflateCache.idle();
    return committed.body.commit.oid;
  };
  /** Every object the clone's pack holds, and every object its refs reach: the same, for a pack with nothing more than it should hold. */
  const heldAndReached = (dir: string) => ({
    held: git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], { cwd: dir }).trim().split('\n').sort().join('\n'),
    reached: objectsOf(dir).split('\n').filter(Boolean).map((line) => line.slice(0, 40)).sort().join('\n'),
  });
  const entriesOf = (pack: Buffer) => pack.subarray(12, pack.length - 20);

  it('grows the kept pack by the objects of the new commits: its entries first, strict-checked, nothing more than the tips reach, kept in turn', async () => {
    const url = urlOf(server, projectId);
    const base = await strictClonePack(url, join(work.path, 'grow-base.git'));
    const tip = await commitFile('main', 'grown.txt');
    const before = counts(server);
    const { result: grown, reads } = await readsDuring(server, () => strictClonePack(url, join(work.path, 'grown.git')));
    expect(counts(server)).toEqual({ hits: before.hits, grown: before.grown + 1, misses: before.misses });
    expect(git(['rev-parse', 'main'], { cwd: join(work.path, 'grown.git') }).trim()).toBe(tip);
    // The kept pack's entries as they were, then the commit, the root tree and the file.
    expect(entriesOf(grown).subarray(0, entriesOf(base).length).equals(entriesOf(base))).toBe(true);
    expect(grown.readUInt32BE(8)).toBe(base.readUInt32BE(8) + 3);
    // Planned whole, this history takes about 200 reads (the repeat clone above, the deleted branch below).
    expect(reads).toBeLessThan(50);
    const { held, reached } = heldAndReached(join(work.path, 'grown.git'));
    expect(held).toEqual(reached);
    const again = await strictClonePack(url, join(work.path, 'grown-again.git'));
    expect(again.equals(grown)).toBe(true);
    expect(counts(server)).toEqual({ hits: before.hits + 1, grown: before.grown + 1, misses: before.misses });
    // And grows again: a new branch from an older commit, and main moved on once more.
    const older = git(['rev-parse', 'main~5'], { cwd: join(work.path, 'grown.git') }).trim();
    const branched = await server.call('POST', `/api/v1/projects/${projectId}/git/branches`, { name: 'grow-side', from: older });
    expect(branched.status).toBe(201);
    await commitFile('grow-side', 'side.txt');
    await commitFile('main', 'grown-more.txt');
    const twice = await strictClonePack(url, join(work.path, 'grown-twice.git'));
    expect(entriesOf(twice).subarray(0, entriesOf(grown).length).equals(entriesOf(grown))).toBe(true);
    expect(twice.readUInt32BE(8)).toBe(grown.readUInt32BE(8) + 6);
    expect(heldAndReached(join(work.path, 'grown-twice.git')).held).toEqual(heldAndReached(join(work.path, 'grown-twice.git')).reached);
  }, 120_000);

  it('sends once an object the kept pack holds that the new commits bring back (a file restored as it was)', async () => {
    const url = urlOf(server, projectId);
    await commitFile('main', 'restored.txt');
    const removed = await server.call('POST', `/api/v1/projects/${projectId}/files/batch`, { branch: 'main', files: [], deletes: ['restored.txt'] });
    expect(removed.status).toBe(200);
    expect((await server.call('POST', `/api/v1/projects/${projectId}/git/commit`, { branch: 'main' })).status).toBe(201);
    await server.th.deflateCache.idle();
    const base = await strictClonePack(url, join(work.path, 'restore-base.git'));
    // The same content at the same path: the blob is in the kept pack, not in the tree of its tip.
    await commitFile('main', 'restored.txt');
    const before = counts(server);
    const grown = await strictClonePack(url, join(work.path, 'restored.git'));
    expect(counts(server)).toEqual({ hits: before.hits, grown: before.grown + 1, misses: before.misses });
    expect(entriesOf(grown).subarray(0, entriesOf(base).length).equals(entriesOf(base))).toBe(true);
    // The commit alone: its root tree and the blob are the ones from before the file was removed,
    // which went out once, in the kept pack's entries (twice, and git refuses the pack).
    expect(grown.readUInt32BE(8)).toBe(base.readUInt32BE(8) + 1);
    const { held, reached } = heldAndReached(join(work.path, 'restored.git'));
    expect(held).toEqual(reached);
  }, 120_000);

  it('is planned whole, not grown, when a tip of the kept pack is reached no more (a deleted branch): its objects reach no cloner', async () => {
    const url = urlOf(server, projectId);
    const unique = await commitFile('grow-side', 'secret.txt');
    await strictClonePack(url, join(work.path, 'deleted-base.git'));
    const deleted = await server.call('DELETE', `/api/v1/projects/${projectId}/git/branches/grow-side`);
    expect(deleted.status).toBe(200);
    await commitFile('main', 'after-delete.txt');
    const before = counts(server);
    const { reads } = await readsDuring(server, () => strictClonePack(url, join(work.path, 'after-delete.git')));
    expect(counts(server)).toEqual({ hits: before.hits, grown: before.grown, misses: before.misses + 1 });
    const dir = join(work.path, 'after-delete.git');
    expect(git(['for-each-ref', '--format=%(refname)'], { cwd: dir })).not.toContain('grow-side');
    const { held, reached } = heldAndReached(dir);
    expect(held).not.toContain(unique);
    expect(held).toEqual(reached);
    expect(reads).toBeGreaterThan(50);
  }, 120_000);
});

describe('a clone whose objects had no pack-ready form yet', () => {
  it('is not kept: the next clone of the same tips is planned again', async () => {
    const bare = await startTestServer();
    try {
      // No forms at all: every object of the pack is deflated while the client waits.
      await bare.th.deflateCache.stop();
      const created = await bare.call('POST', '/api/v1/projects', { title: 'Fresh', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }, { path: 'src/b.ts', content: 'export const b = 1;\n' }] } });
      expect(created.status).toBe(201);
      const url = urlOf(bare, created.body.project.id);
      const first = await strictClonePack(url, join(work.path, 'fresh-1.git'));
      const second = await strictClonePack(url, join(work.path, 'fresh-2.git'));
      expect(second.equals(first)).toBe(true);
      expect(counts(bare)).toEqual({ hits: 0, grown: 0, misses: 2 });
      expect(bare.th.clonePacks.bytesUsed).toBe(0);
    } finally {
      await bare.close();
    }
  }, 60_000);
});
