/**
 * Deltas on the wire (issue 13): a realistic history (fixtures/history.ts) packed by git, served
 * by `git http-backend` and seeded into Treehouse from it, then cloned and fetched from both. The
 * clones must hold the same objects, ours must come with git's deltas (no more than 1.15x the
 * bytes of git's own pack) and pass `index-pack --strict` and `fsck --strict`; fetches into an
 * existing clone must be thin when the client asks (REF_DELTA against what it holds) and never
 * name a base the client lacks when it does not; OFS_DELTA only for clients that offer it.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeHistoryRepo } from '../../fixtures/history.js';
import { OBJ_OFS_DELTA, OBJ_REF_DELTA, parsePack, type ParsedPack } from '../../src/git/pack.js';
import { encodeDelim, encodeFlush, encodePktLine } from '../../src/git/pktline.js';
import { FetchResponseReader } from '../../src/git/smartClient.js';
import { git, gitAsyncOk, gitBytes, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { objectsOf, packOf, strictClone } from '../support/clones.js';
import { startTestServer, type TestServer } from '../support/server.js';

const work = scratchDir('treehouse-delta-packs-');
const served = join(work.path, 'served');
const upstream = join(served, 'history.git');
let server: TestServer;
let backend: GitHttpBackend;
let projectId = '';

const treehouseUrl = () => `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
const gitUrl = () => `${backend.url}/history.git`;

/** `git verify-pack -v` lines of deltas: "<id> <type> <size> <packed size> <offset> <depth> <base>". */
function deltaDepths(packPath: string): number[] {
  const out = git(['verify-pack', '-v', packPath]);
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length === 7 && /^[0-9a-f]{40}$/.test(fields[0]))
    .map((fields) => Number(fields[5]));
}

/** `git verify-pack -v` entries by id: type, and for a delta its depth and base. */
function packEntries(packPath: string): Map<string, { type: string; depth: number; base: string | null }> {
  const entries = new Map<string, { type: string; depth: number; base: string | null }>();
  for (const line of git(['verify-pack', '-v', packPath]).split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (!/^[0-9a-f]{40}$/.test(fields[0]) || (fields.length !== 5 && fields.length !== 7)) continue;
    entries.set(fields[0], { type: fields[1], depth: fields.length === 7 ? Number(fields[5]) : 0, base: fields[6] ?? null });
  }
  return entries;
}

/** A source file of `lines` distinct lines. */
function moduleText(lines: number, seed: string): string {
  return Array.from({ length: lines }, (_, line) => `export const ${seed}${line} = ${(line * 2_654_435_761) >>> 0}; // line ${line} of ${seed}`).join('\n');
}

/** Lines of hex digests: nothing in them matches anything in another seed's. */
function noiseText(lines: number, seed: string): string {
  return Array.from({ length: lines }, (_, line) => createHash('sha256').update(`${seed}/${line}`).digest('hex')).join('\n');
}

/** Writes files on main and commits them, through the API. */
async function writeAndCommit(on: TestServer, project: string, files: Array<{ path: string; content: string }>): Promise<void> {
  const written = await on.call('POST', `/api/v1/projects/${project}/files/batch`, { branch: 'main', files });
  expect(written.status, JSON.stringify(written.body)).toBe(200);
  const committed = await on.call('POST', `/api/v1/projects/${project}/git/commit`, { branch: 'main' });
  expect(committed.status, JSON.stringify(committed.body)).toBe(201);
}

const blobOf = (bareDir: string, path: string) => git(['rev-parse', `main:${path}`], { cwd: bareDir }).trim();

/** Entry type codes of a pack, in pack order (the first byte of each entry's header). */
function entryTypes(pack: Buffer, parsed: ParsedPack): number[] {
  return parsed.objects.map((object) => (pack[object.offset] >> 4) & 7);
}

/** A v2 fetch straight to an upload-pack (Treehouse's unless `endpoint` says), with the given haves and capabilities; the pack it answers. */
async function fetchPack(wants: string[], haves: string[], capabilities: string[], endpoint?: string): Promise<Buffer> {
  const body = Buffer.concat([
    encodePktLine('command=fetch\n'),
    encodePktLine('object-format=sha1\n'),
    encodeDelim(),
    ...capabilities.map((name) => encodePktLine(`${name}\n`)),
    encodePktLine('no-progress\n'),
    ...wants.map((oid) => encodePktLine(`want ${oid}\n`)),
    ...haves.map((oid) => encodePktLine(`have ${oid}\n`)),
    encodePktLine('done\n'),
    encodeFlush(),
  ]);
  const response = await fetch(endpoint ?? `${server.url}/git/${projectId}.git/git-upload-pack`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`,
      'content-type': 'application/x-git-upload-pack-request',
      'git-protocol': 'version=2',
    },
    body,
  });
  expect(response.status).toBe(200);
  const reader = new FetchResponseReader(2, true, 1 << 30);
  reader.push(Buffer.from(await response.arrayBuffer()));
  return reader.end();
}

beforeAll(async () => {
  await writeHistoryRepo(upstream, { commits: 240, files: 160, hotFiles: 4 });
  // As a served repository usually is: packed by gc, deltas searched with git's defaults.
  git(['repack', '-adf', '-q'], { cwd: upstream });
  backend = await startGitHttpBackend(served);
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  const created = await server.call('POST', '/api/v1/projects', { title: 'Deltas', source: { kind: 'git', url: gitUrl() } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  projectId = created.body.project.id;
}, 120_000);

afterAll(async () => {
  await server?.close();
  await backend?.close();
  work.remove();
});

describe('clones of a history seeded from git', () => {
  it('hold the same objects as a clone from git http-backend, with git deltas, at most 1.15x its bytes, strict-checked', async () => {
    const ours = join(work.path, 'clone-treehouse.git');
    const theirs = join(work.path, 'clone-git.git');
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', '--bare', treehouseUrl(), ours]);
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', '--bare', gitUrl(), theirs]);
    expect(objectsOf(ours)).toEqual(objectsOf(theirs));
    await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: ours });

    const ourPack = packOf(ours);
    const gitPack = packOf(theirs);
    const depths = deltaDepths(ourPack.path);
    expect(depths.length).toBeGreaterThan(deltaDepths(gitPack.path).length * 0.9);
    expect(Math.max(...depths)).toBeLessThanOrEqual(50);
    expect(ourPack.bytes).toBeLessThanOrEqual(gitPack.bytes * 1.15);
    // index-pack --strict on the pack as received (the clone keeps it as sent).
    await gitAsyncOk(['index-pack', '--strict', '-o', join(work.path, 'received.idx'), ourPack.path], { cwd: ours });
  }, 120_000);

  it('a shallow clone of it gets whole objects where the bases stay behind, and passes fsck', async () => {
    const dir = join(work.path, 'shallow');
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', '--depth', '1', treehouseUrl(), dir]);
    await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: dir });
    expect(git(['rev-parse', 'HEAD'], { cwd: dir })).toBe(git(['rev-parse', 'main'], { cwd: upstream }));
  }, 60_000);
});

describe('fetches into an existing clone', () => {
  it('are thin (REF_DELTA against objects the client holds) when it asks, and complete without bases when it does not', async () => {
    const clone = join(work.path, 'worker');
    await gitAsyncOk(['clone', '-q', treehouseUrl(), clone]);
    const before = git(['rev-parse', 'HEAD'], { cwd: clone }).trim();
    // Small edits to files that exist, pushed by git as a thin pack of deltas.
    const files = git(['ls-files'], { cwd: clone }).trim().split('\n').filter((path) => path.endsWith('.ts')).slice(0, 6);
    for (const [round, path] of files.entries()) {
      const text = readFileSync(join(clone, path), 'utf8');
      writeFileSync(join(clone, path), text.replace(/\n/, `\n// edit ${round}\n`));
      git(['-c', 'user.email=delta@example.com', '-c', 'user.name=Delta', 'commit', '-qam', `edit ${round}`], { cwd: clone });
    }
    await gitAsyncOk(['push', '-q', 'origin', 'main'], { cwd: clone });
    const after = git(['rev-parse', 'HEAD'], { cwd: clone }).trim();

    const thin = await fetchPack([after], [before], ['thin-pack', 'ofs-delta']);
    const external: string[] = [];
    const parsedThin = parsePack(thin, {
      resolveExternal: (oid) => {
        external.push(oid.toString('hex'));
        const type = git(['cat-file', '-t', oid.toString('hex')], { cwd: clone }).trim() as 'blob' | 'tree';
        return { type, body: gitBytes(['cat-file', type, oid.toString('hex')], { cwd: clone }) };
      },
    });
    expect(external.length).toBeGreaterThan(0);
    expect(entryTypes(thin, parsedThin)).toContain(OBJ_REF_DELTA);

    // Without thin-pack every base is in the pack; without ofs-delta no entry names its base by offset.
    const full = await fetchPack([after], [before], []);
    const parsedFull = parsePack(full);
    expect(entryTypes(full, parsedFull)).not.toContain(OBJ_OFS_DELTA);
    expect(parsedFull.objects.map((object) => object.oid.toString('hex')).sort()).toEqual(parsedThin.objects.map((object) => object.oid.toString('hex')).sort());
    expect(full.length).toBeGreaterThan(thin.length);

    // And git itself fetches it into an older clone, strict-checked.
    const older = join(work.path, 'older');
    await gitAsyncOk(['clone', '-q', '--bare', gitUrl(), older]);
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'fetch', '-q', treehouseUrl(), 'main:main'], { cwd: older });
    expect(git(['rev-parse', 'main'], { cwd: older }).trim()).toBe(after);
    await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: older });
  }, 120_000);
});

describe('fetches of the newest commits of a seeded history', () => {
  it('are thin packs, with deltas against what the client holds, no larger than git upload-pack sends for the same wants and haves', async () => {
    const main = git(['rev-parse', 'main'], { cwd: upstream }).trim();
    const older = git(['rev-parse', 'main~10'], { cwd: upstream }).trim();
    const ours = await fetchPack([main], [older], ['thin-pack', 'ofs-delta']);
    const theirs = await fetchPack([main], [older], ['thin-pack', 'ofs-delta'], `${gitUrl()}/git-upload-pack`);
    const resolveExternal = (oid: Buffer) => {
      const type = git(['cat-file', '-t', oid.toString('hex')], { cwd: upstream }).trim() as 'blob' | 'tree';
      return { type, body: gitBytes(['cat-file', type, oid.toString('hex')], { cwd: upstream }) };
    };
    const ids = (pack: Buffer) => parsePack(pack, { resolveExternal }).objects.map((object) => object.oid.toString('hex')).sort();
    expect(ids(ours)).toEqual(ids(theirs));
    // The target is 1.2x; with deltas against the versions the client holds, ours is smaller than git's.
    expect(ours.length).toBeLessThanOrEqual(theirs.length);
  }, 60_000);
});

describe('fetches of a large file edited since the client\'s commit', () => {
  it('get a thin delta made on a worker (the stored form is whole), as small as git\'s pack, and complete with the client\'s objects', async () => {
    // 1.5 MB of lines; the second version grows, so git's repack keeps it whole and the first as a delta on it.
    const source = join(served, 'big-file.git');
    const checkout = join(work.path, 'big-file-checkout');
    git(['init', '-q', '--initial-branch=main', checkout]);
    const lines = Array.from({ length: 24_000 }, (_, index) => `line ${index}: ${(index * 2_654_435_761 >>> 0).toString(36)} of a large generated file`);
    writeFileSync(join(checkout, 'big.txt'), lines.join('\n'));
    git(['add', 'big.txt'], { cwd: checkout });
    git(['-c', 'user.email=big@example.com', '-c', 'user.name=Big', 'commit', '-qm', 'first'], { cwd: checkout });
    lines.splice(12_000, 3, 'three lines replaced', 'in the middle');
    lines.push(...Array.from({ length: 40 }, (_, index) => `appended line ${index}`));
    writeFileSync(join(checkout, 'big.txt'), lines.join('\n'));
    git(['-c', 'user.email=big@example.com', '-c', 'user.name=Big', 'commit', '-qam', 'second'], { cwd: checkout });
    git(['clone', '-q', '--bare', checkout, source]);
    git(['repack', '-adf', '-q'], { cwd: source });
    const [second, first] = git(['rev-list', 'main'], { cwd: source }).trim().split('\n');
    // The case this covers: the seed's pack (so our store) holds the new version whole.
    const newBlob = git(['rev-parse', 'main:big.txt'], { cwd: source }).trim();
    const newBlobLine = git(['verify-pack', '-v', packOf(source).path]).split('\n').find((line) => line.startsWith(newBlob))!;
    expect(newBlobLine.trim().split(/\s+/)).toHaveLength(5);
    const created = await server.call('POST', '/api/v1/projects', { title: 'Big file', source: { kind: 'git', url: `${backend.url}/big-file.git` } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const endpoint = `${server.url}/git/${created.body.project.id}.git/git-upload-pack`;

    const ours = await fetchPack([second], [first], ['thin-pack', 'ofs-delta'], endpoint);
    const theirs = await fetchPack([second], [first], ['thin-pack', 'ofs-delta'], `${backend.url}/big-file.git/git-upload-pack`);
    const resolveExternal = (oid: Buffer) => {
      const type = git(['cat-file', '-t', oid.toString('hex')], { cwd: source }).trim() as 'blob' | 'tree';
      return { type, body: gitBytes(['cat-file', type, oid.toString('hex')], { cwd: source }) };
    };
    const parsed = parsePack(ours, { resolveExternal });
    const ids = (pack: ParsedPack) => pack.objects.map((object) => object.oid.toString('hex')).sort();
    expect(ids(parsed)).toEqual(ids(parsePack(theirs, { resolveExternal })));
    // The 1.5 MB blob goes out as a REF_DELTA against the version the client holds.
    expect(entryTypes(ours, parsed)).toContain(OBJ_REF_DELTA);
    expect(ours.length).toBeLessThan(20_000);
    expect(ours.length).toBeLessThanOrEqual(theirs.length * 1.2);
  }, 120_000);
});

describe('histories written through the API', () => {
  it('go out with each edited file and directory as a delta against its previous version', async () => {
    const lines = Array.from({ length: 400 }, (_, index) => `export const value${index} = ${index * 7}; // a line of the module`);
    const created = await server.call('POST', '/api/v1/projects', {
      title: 'Edited',
      // Neighbours in every directory, so each tree is large enough to be worth a delta.
      source: {
        kind: 'files',
        files: [
          { path: 'src/deep/module.ts', content: lines.join('\n') },
          ...['', 'src/', 'src/deep/'].flatMap((dir) => Array.from({ length: 8 }, (_, index) => ({ path: `${dir}neighbour-${index}.txt`, content: `${dir} ${index}\n` }))),
        ],
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.project.id as string;
    const edits = 8;
    for (let round = 0; round < edits; round++) {
      lines[round * 40] = `export const value${round * 40} = ${round}; // edited in round ${round}`;
      const written = await server.call('POST', `/api/v1/projects/${id}/files/batch`, { branch: 'main', files: [{ path: 'src/deep/module.ts', content: lines.join('\n') }] });
      expect(written.status).toBe(200);
      expect((await server.call('POST', `/api/v1/projects/${id}/git/commit`, { branch: 'main' })).status).toBe(201);
    }
    // The forms are made in the background: wait until none is pending.
    for (let waited = 0; ; waited += 50) {
      const health = await fetch(`${server.url}/healthz`).then((response) => response.json() as Promise<{ deflate_backlog: number }>);
      if (health.deflate_backlog === 0) break;
      expect(waited).toBeLessThan(30_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const dir = join(work.path, 'edited.git');
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', '--bare', treehouseUrl().replace(projectId, id), dir]);
    await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: dir });
    // Every version of the file but the first, and of its two directories and the root, is a delta.
    const depths = deltaDepths(packOf(dir).path);
    expect(depths.length).toBeGreaterThanOrEqual(edits * 4);
    expect(Math.max(...depths)).toBeLessThanOrEqual(50);
  }, 60_000);
});

describe('objects no writer named a base for (the windowed search)', () => {
  const newProject = async (on: TestServer, title: string) => {
    const created = await on.call('POST', '/api/v1/projects', { title });
    expect(created.status).toBe(201);
    return created.body.project.id as string;
  };
  const urlOf = (on: TestServer, project: string) => `${on.url.replace('http://', `http://git:${on.key}@`)}/git/${project}.git`;

  it('store a near-copy written at another path as a delta on the original, which a clone carries (strict-checked)', async () => {
    const project = await newProject(server, 'Near copy');
    const text = moduleText(300, 'widget');
    await writeAndCommit(server, project, [{ path: 'src/widgets/button.ts', content: text }]);
    // Another directory and name, one line changed and a header added: no writer names a base.
    const copy = `// started from src/widgets/button.ts\n${text.replace('widget17 =', 'field17 =')}`;
    await writeAndCommit(server, project, [{ path: 'lib/forms/field-button.ts', content: copy }]);
    await server.th.deflateCache.idle();
    const dir = join(work.path, 'near-copy.git');
    const entries = packEntries(await strictClone(urlOf(server, project), dir, work.path));
    const [originalBlob, copyBlob] = [blobOf(dir, 'src/widgets/button.ts'), blobOf(dir, 'lib/forms/field-button.ts')];
    const [original, copied] = [entries.get(originalBlob)!, entries.get(copyBlob)!];
    // The copy on the original when the original had its form first; else (one batch, git's order:
    // the larger first) the other way round. Either way one is a delta on the other.
    const delta = copied.base ? copied : original;
    expect(delta.base).toBe(delta === copied ? originalBlob : copyBlob);
    expect(delta.depth).toBe(1);
  }, 60_000);

  it('keep every chain within 50 over a long line of similar files written at new paths', async () => {
    const project = await newProject(server, 'Long line');
    let text = moduleText(200, 'line');
    const rounds = 75;
    for (let round = 0; round < rounds; round++) {
      text = `${text}\n// added in round ${round}`;
      // One name hash for all (it reads a path's last 16 characters): each file sorts beside the ones before it.
      await writeAndCommit(server, project, [{ path: `copies/c${round}/the-shared-module.ts`, content: text }]);
      // A batch each: each file meets the ones before it in the window, as a history written over time does.
      await server.th.deflateCache.idle();
    }
    await server.th.deflateCache.idle();
    const dir = join(work.path, 'long-line.git');
    const entries = packEntries(await strictClone(urlOf(server, project), dir, work.path));
    const blobs = Array.from({ length: rounds }, (_, round) => entries.get(blobOf(dir, `copies/c${round}/the-shared-module.ts`))!);
    const depths = blobs.map((entry) => entry.depth);
    expect(depths.filter((depth) => depth > 0).length).toBeGreaterThanOrEqual(rounds - 1);
    // The chains grew as deep as allowed, and no deeper.
    expect(Math.max(...depths)).toBe(50);
    expect(Math.max(...deltaDepths(packOf(dir).path))).toBeLessThanOrEqual(50);
  }, 120_000);

  it('are searched at start too, when an earlier run stored them without forms (no hints: by type and size)', async () => {
    const data = scratchDir('treehouse-delta-backlog-');
    try {
      const first = await startTestServer({ dataDir: data.path });
      // No forms are made in this run: everything it stores is the next run's backlog.
      await first.th.deflateCache.stop();
      const project = await newProject(first, 'Backlog');
      const original = moduleText(250, 'backlog');
      await writeAndCommit(first, project, [{ path: 'one/original.ts', content: original }]);
      await writeAndCommit(first, project, [{ path: 'two/unrelated-name.md', content: `${original}\n// appended` }]);
      await first.close();

      const second = await startTestServer({ dataDir: data.path });
      try {
        await second.th.deflateCache.idle();
        expect(second.th.deflateCache.backlog).toBe(0);
        const dir = join(work.path, 'backlog.git');
        const entries = packEntries(await strictClone(urlOf(second, project), dir, work.path));
        const [original, appended] = [blobOf(dir, 'one/original.ts'), blobOf(dir, 'two/unrelated-name.md')];
        // One batch, in git's order: the larger first, whole, and the other a delta on it.
        expect(entries.get(appended)!.base).toBeNull();
        expect(entries.get(original)!.base).toBe(appended);
      } finally {
        await second.close();
      }
    } finally {
      data.remove();
    }
  }, 60_000);

  it('leave files over the window\'s size limit whole, however alike, and unrelated files of one name whole', async () => {
    const project = await newProject(server, 'Bounds');
    const big = moduleText(40_000, 'big');
    expect(big.length).toBeGreaterThan(2 * 1024 * 1024);
    for (let round = 0; round < 3; round++) await writeAndCommit(server, project, [{ path: `big${round}/data-${round}.txt`, content: `${big}\n// ${round}` }]);
    for (let round = 0; round < 20; round++) {
      await writeAndCommit(server, project, [{ path: `same${round}/index.ts`, content: noiseText(150, `unrelated ${round}`) }]);
    }
    await server.th.deflateCache.idle();
    const dir = join(work.path, 'bounds.git');
    const entries = packEntries(await strictClone(urlOf(server, project), dir, work.path));
    for (let round = 0; round < 3; round++) expect(entries.get(blobOf(dir, `big${round}/data-${round}.txt`))!.base).toBeNull();
    for (let round = 0; round < 20; round++) expect(entries.get(blobOf(dir, `same${round}/index.ts`))!.base).toBeNull();
  }, 120_000);
});

describe('pushes of packs with chains deeper than 50', () => {
  it('are stored (deep entries whole), read back, and cloned with chains of at most 50', async () => {
    const source = join(work.path, 'deep-source');
    git(['init', '-q', '--initial-branch=main', source]);
    const lines = Array.from({ length: 300 }, (_, index) => `line ${index} of a file edited in every commit`);
    // Asynchronous git: seconds of a blocked loop here would keep this process's fetch from noticing
    // that the server closed an idle keep-alive connection, and the next call would meet ECONNRESET.
    for (let round = 0; round < 120; round++) {
      lines[(round * 7) % lines.length] = `line edited in round ${round}`;
      writeFileSync(join(source, 'edited.txt'), lines.join('\n'));
      await gitAsyncOk(['add', 'edited.txt'], { cwd: source });
      await gitAsyncOk(['-c', 'user.email=deep@example.com', '-c', 'user.name=Deep', 'commit', '-qm', `round ${round}`], { cwd: source });
    }
    await gitAsyncOk(['repack', '-adf', '-q', '--depth=200', '--window=250'], { cwd: source });
    expect(Math.max(...deltaDepths(packOf(join(source, '.git')).path))).toBeGreaterThan(50);

    const created = await server.call('POST', '/api/v1/projects', { title: 'Deep chains' });
    expect(created.status).toBe(201);
    const url = treehouseUrl().replace(projectId, created.body.project.id as string);
    await gitAsyncOk(['push', '-q', url, 'main:refs/heads/deep'], { cwd: source });

    const read = await server.call('GET', `/api/v1/projects/${created.body.project.id}/file?path=edited.txt&branch=deep`);
    expect(read.status).toBe(200);
    expect(read.body.content).toBe(lines.join('\n'));
    const dir = join(work.path, 'deep-clone.git');
    await gitAsyncOk(['-c', 'transfer.fsckObjects=true', 'clone', '-q', '--bare', url, dir]);
    await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: dir });
    expect(git(['rev-list', '--objects', 'deep'], { cwd: dir })).toBe(git(['rev-list', '--objects', 'main'], { cwd: source }));
    expect(Math.max(...deltaDepths(packOf(dir).path))).toBeLessThanOrEqual(50);
  }, 120_000);
});


describe('a push of a history of its own (every parent in the pack, so its commits are held while it is checked)', () => {
  it('lands as the same push into git http-backend does: the same branch, the same objects, strict-checked', async () => {
    // Past receivePack's PACK_HELD_BYTES_MIN (256 KB), so the push streams into a hold.
    expect(packOf(upstream).bytes).toBeGreaterThan(256 * 1024);
    const created = await server.call('POST', '/api/v1/projects', { title: 'Pushed history' });
    expect(created.status).toBe(201);
    const project = created.body.project.id as string;
    git(['init', '-q', '--bare', join(served, 'pushed.git')]);
    await gitAsyncOk(['push', '-q', treehouseUrl().replace(projectId, project), 'main:refs/heads/imported'], { cwd: upstream });
    await gitAsyncOk(['push', '-q', `${backend.url}/pushed.git`, 'main:refs/heads/imported'], { cwd: upstream });
    const ours = join(work.path, 'pushed-treehouse.git');
    const theirs = join(work.path, 'pushed-git.git');
    await strictClone(treehouseUrl().replace(projectId, project), ours, work.path);
    await strictClone(`${backend.url}/pushed.git`, theirs, work.path);
    const tip = git(['rev-parse', 'main'], { cwd: upstream }).trim();
    expect(git(['rev-parse', 'imported'], { cwd: ours }).trim()).toBe(tip);
    expect(git(['rev-parse', 'imported'], { cwd: theirs }).trim()).toBe(tip);
    expect(git(['rev-list', '--objects', 'imported'], { cwd: ours })).toBe(git(['rev-list', '--objects', 'imported'], { cwd: theirs }));
    // Its commits indexed: the API's log of the branch walks them, parents as git has them.
    const log = await server.call('GET', `/api/v1/projects/${project}/git/log?branch=imported&limit=200`);
    expect(log.status).toBe(200);
    const parents = new Map((log.body.commits as Array<{ oid: string; parent_oids: string[] }>).map((c) => [c.oid, c.parent_oids]));
    expect(parents.size).toBe(200);
    for (const [oid, parentOids] of parents) expect(parentOids).toEqual(git(['rev-list', '--parents', '-n', '1', oid], { cwd: theirs }).trim().split(' ').slice(1));
  }, 120_000);
});
