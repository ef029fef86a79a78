/**
 * Partial clones (`git clone --filter=…`) differentially: every operation runs once against
 * Treehouse and once against `git http-backend` (uploadpack.allowFilter) serving the same history,
 * with protocol v0 and v2, and the client must end the same: exit status, every object it holds and
 * every one it lacks (`git rev-list --objects --all --missing=print`), `git fsck --strict`, and the
 * files of a checkout, which fetches the missing blobs by id (lazily, as git's promisor remote does).
 * Then the specs Treehouse refuses, and broken ones, over raw requests.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFlush, encodePktLine } from '../../src/git/pktline.js';
import { git, gitAsync, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { PEERS, PROTOCOLS, withProtocol, type PeerName, type Protocol } from '../support/gitPeers.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';


let server: TestServer;
let backend: GitHttpBackend;
let projectId = '';
let head = '';
const work = scratchDir('treehouse-partial-');
const backendRoot = join(work.path, 'served');
const seed = join(work.path, 'seed');
let clock = 0;

function url(peer: PeerName): string {
  if (peer === 'git') return `${backend.url}/shared.git`;
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

function commitFiles(name: string, files: Record<string, string>): string {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(seed, path, '..'), { recursive: true });
    writeFileSync(join(seed, path), content);
  }
  git(['add', '-A'], { cwd: seed });
  const date = `${1_700_000_000 + 3600 * clock++} +0000`;
  git(['commit', '-q', '-m', name], { cwd: seed, env: { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } });
  return git(['rev-parse', 'HEAD'], { cwd: seed }).trim();
}

/** Text of `lines` numbered lines: sizes on both sides of the blob:limit=4k tested below. */
const text = (tag: string, lines: number) => Array.from({ length: lines }, (_, i) => `${tag} line ${i}\n`).join('');

interface ClientState {
  status: number;
  /** Objects held ("<id>"), and missing ones ("?<id>"), sorted. */
  objects: string[];
  fsck: number;
  files: Record<string, string>;
}

async function clientState(dir: string, status: number, files: string[]): Promise<ClientState> {
  if (!existsSync(join(dir, '.git'))) return { status, objects: [], fsck: -1, files: {} };
  // Listing must not fetch what is missing: it would change what it lists.
  const listed = await gitAsync(['-c', 'fetch.negotiationAlgorithm=noop', 'rev-list', '--objects', '--all', '--missing=print'], { cwd: dir, env: { GIT_NO_LAZY_FETCH: '1' } });
  const objects = listed.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[0])
    .sort();
  const fsck = (await gitAsync(['fsck', '--strict', '--no-progress'], { cwd: dir, env: { GIT_NO_LAZY_FETCH: '1' } })).status;
  const contents: Record<string, string> = {};
  for (const file of files) if (existsSync(join(dir, file))) contents[file] = readFileSync(join(dir, file), 'utf8');
  return { status, objects, fsck, files: contents };
}

const dirOf = (peer: PeerName, protocol: Protocol, name: string) => join(work.path, `${name}-${peer}-v${protocol}`);

async function differential(
  protocol: Protocol,
  run: (peer: PeerName) => Promise<{ status: number; output: string; dir: string }>,
  files: string[] = [],
): Promise<Record<PeerName, ClientState>> {
  const outcomes = {} as Record<PeerName, ClientState & { output: string }>;
  for (const peer of PEERS) {
    const { status, output, dir } = await run(peer);
    outcomes[peer] = { ...(await clientState(dir, status, files)), output };
  }
  const strip = ({ output: _output, ...rest }: ClientState & { output: string }) => rest;
  expect(strip(outcomes.treehouse), `protocol v${protocol}; git said:\n${outcomes.git.output}\nTreehouse said:\n${outcomes.treehouse.output}`).toEqual(strip(outcomes.git));
  return outcomes;
}

const FILES = ['README.md', 'src/app.ts', 'src/big.txt', 'docs/guide/intro.md', 'assets/data.csv'];

beforeAll(async () => {
  server = await startTestServer();
  backend = await startGitHttpBackend(backendRoot);
  const created = await server.call('POST', '/api/v1/projects', { title: 'Partial clones', source: { kind: 'files', files: [{ path: 'README.md', content: 'start\n' }] } });
  expect(created.status).toBe(201);
  projectId = created.body.project.id;
  await gitAsyncOk(['clone', '-q', url('treehouse'), seed]);
  git(['config', 'user.name', 'Partial'], { cwd: seed });
  git(['config', 'user.email', 'partial@example.com'], { cwd: seed });
  // guide/ and docs/guide/ are one tree, one and two levels down: tree:<depth> counts it at the shallower.
  commitFiles('one', { 'src/app.ts': text('app', 20), 'src/big.txt': text('big', 400), 'docs/guide/intro.md': text('intro', 5), 'guide/intro.md': text('intro', 5) });
  commitFiles('two', { 'src/app.ts': text('app two', 30), 'assets/data.csv': text('row', 300) });
  git(['checkout', '-q', '-b', 'topic'], { cwd: seed });
  commitFiles('topic', { 'docs/guide/intro.md': text('topic intro', 8) });
  git(['checkout', '-q', 'main'], { cwd: seed });
  // The newest commit keeps the tree only two levels down: a walk meets it there first, and must
  // walk it again when an older commit shows it one level down.
  rmSync(join(seed, 'guide'), { recursive: true });
  head = commitFiles('three', { 'src/big.txt': text('big three', 420), 'README.md': 'three\n' });

  initBareRepo(join(backendRoot, 'shared.git'));
  git(['config', 'uploadpack.allowFilter', 'true'], { cwd: join(backendRoot, 'shared.git') });
  for (const peer of PEERS) await gitAsyncOk(['push', '-q', url(peer), 'main', 'topic'], { cwd: seed });
  expect(await gitAsyncOk(['ls-remote', url('treehouse')])).toBe(await gitAsyncOk(['ls-remote', url('git')]));
});

afterAll(async () => {
  await server?.close();
  await backend?.close();
  work.remove();
});

describe.each(PROTOCOLS)('partial clones over protocol v%s, Treehouse against git http-backend', (protocol) => {
  for (const filter of ['blob:none', 'blob:limit=4k', 'tree:0', 'tree:1', 'tree:2', 'tree:3']) {
    it(`clone --filter=${filter}, then a checkout that fetches what it lacks`, async () => {
      const name = filter.replace(/[:=]/g, '-');
      const cloned = await differential(protocol, async (peer) => {
        const dir = dirOf(peer, protocol, name);
        return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', '--no-checkout', `--filter=${filter}`, url(peer), dir]))), dir };
      });
      // The filter took effect: objects are missing, and every commit is there.
      expect(cloned.treehouse.status).toBe(0);
      expect(cloned.treehouse.objects.filter((id) => id.startsWith('?')).length).toBeGreaterThan(0);
      expect(cloned.treehouse.objects).toContain(head);
      const checkedOut = await differential(
        protocol,
        async (peer) => {
          const dir = dirOf(peer, protocol, name);
          return { ...(await gitAsync(withProtocol(protocol, ['checkout', '-q', 'main']), { cwd: dir })), dir };
        },
        FILES,
      );
      // Over v0 a blob by id is not ours to give (git's upload-pack without allowAnySHA1InWant):
      // a checkout that lacks one fails on both sides alike. Over v2 wants can be anything the
      // project stores.
      if (protocol === '2') {
        expect(checkedOut.treehouse.status).toBe(0);
        expect(checkedOut.treehouse.files['README.md']).toBe('three\n');
        expect(checkedOut.treehouse.files['src/big.txt']).toBe(text('big three', 420));
      }
    });
  }

  it('a clone without a filter after the partial ones (whose packs are kept apart) gets every object', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'whole');
      return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', '--no-checkout', url(peer), dir]))), dir };
    });
    expect(outcome.treehouse.objects.filter((id) => id.startsWith('?'))).toEqual([]);
  });

  it('fetch into a blob:none clone after new commits, with the filter it remembers', async () => {
    const before: Record<PeerName, string> = { treehouse: '', git: '' };
    await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'refetch');
      before[peer] = dir;
      return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', '--filter=blob:none', url(peer), dir]))), dir };
    });
    git(['checkout', '-q', 'topic'], { cwd: seed });
    commitFiles(`more v${protocol}`, { 'src/late.txt': text(`late ${protocol}`, 50), 'docs/guide/intro.md': text(`intro ${protocol}`, 9) });
    git(['checkout', '-q', 'main'], { cwd: seed });
    for (const peer of PEERS) await gitAsyncOk(['push', '-q', url(peer), 'topic'], { cwd: seed });
    await differential(protocol, async (peer) => ({ ...(await gitAsync(withProtocol(protocol, ['fetch', '-q', 'origin']), { cwd: before[peer] })), dir: before[peer] }));
  });
});

describe('pushing from a partial clone', () => {
  it('is taken by both servers alike: the pushed commit names stored blobs the clone never had', async () => {
    const outcomes: Record<PeerName, { status: number; refs: string; fsck: number }> = {} as never;
    for (const peer of PEERS) {
      const dir = join(work.path, `push-from-partial-${peer}`);
      await gitAsyncOk(['clone', '-q', '--filter=blob:none', '--branch', 'topic', url(peer), dir]);
      git(['config', 'user.name', 'Partial'], { cwd: dir });
      git(['config', 'user.email', 'partial@example.com'], { cwd: dir });
      // One file changed: the rest of the tree's blobs stay missing in the clone.
      writeFileSync(join(dir, 'README.md'), 'pushed from a partial clone\n');
      git(['commit', '-q', '-am', 'from a partial clone'], { cwd: dir, env: { GIT_AUTHOR_DATE: '1700100000 +0000', GIT_COMMITTER_DATE: '1700100000 +0000' } });
      const pushed = await gitAsync(['push', '-q', 'origin', 'HEAD:refs/heads/from-partial'], { cwd: dir });
      const fsck = (await gitAsync(['fsck', '--strict', '--no-progress'], { cwd: dir, env: { GIT_NO_LAZY_FETCH: '1' } })).status;
      outcomes[peer] = { status: pushed.status, refs: await gitAsyncOk(['ls-remote', url(peer)]), fsck };
    }
    expect(outcomes.treehouse).toEqual(outcomes.git);
    expect(outcomes.treehouse.status).toBe(0);
    expect(outcomes.treehouse.refs).toMatch(/refs\/heads\/from-partial/);
    // Our side is whole: a full clone of the pushed branch passes fsck.
    const full = join(work.path, 'full-after-partial-push');
    await gitAsyncOk(['clone', '-q', '--bare', url('treehouse'), full]);
    expect((await gitAsync(['fsck', '--strict', '--no-progress'], { cwd: full })).status).toBe(0);
  });
});

describe('filter specs Treehouse does not serve', () => {
  async function fetchV2(lines: string[]): Promise<{ status: number; text: string }> {
    const body = Buffer.concat([encodePktLine('command=fetch\n'), encodePktLine('object-format=sha1\n'), Buffer.from('0001'), ...lines.map((line) => encodePktLine(`${line}\n`)), encodeFlush()]);
    const response = await fetch(`${server.url}/git/${projectId}.git/git-upload-pack`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`, 'content-type': 'application/x-git-upload-pack-request', 'git-protocol': 'version=2' },
      body: new Uint8Array(body),
    });
    return { status: response.status, text: Buffer.from(await response.arrayBuffer()).toString('latin1') };
  }

  it('answers a clone with a filter it does not serve with the reason, as a remote error', async () => {
    const dir = join(work.path, 'sparse');
    const result = await gitAsync(['-c', 'protocol.version=2', 'clone', '-q', '--filter=sparse:oid=main:README.md', url('treehouse'), dir]);
    expect(result.status).not.toBe(0);
    expect(result.output).toMatch(/filter-spec "sparse:oid=main:README.md" is not supported here/);
  });

  it('refuses broken, unknown and repeated specs in the protocol error, and sends no pack', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['filter blob:limit=12q'], /invalid filter-spec "blob:limit=12q"/],
      [['filter blob:limit=99999999999999999g'], /invalid filter-spec/],
      [['filter sparse:oid=main:.sparse'], /not supported here/],
      [['filter combine:blob:none+tree:0'], /not supported here/],
      [['filter ' + 'x'.repeat(5000)], /invalid filter-spec: too long/],
      [['filter blob:none', 'filter tree:0'], /multiple filter-specs cannot be combined/],
      [['filter \u0000blob:none'], /invalid filter-spec/],
    ];
    for (const [filters, reason] of cases) {
      const answer = await fetchV2([`want ${head}`, ...filters, 'done']);
      expect(answer.text, filters.join(' | ')).toMatch(reason);
      expect(answer.text).toMatch(/ERR /);
      expect(answer.text).not.toMatch(/PACK/);
    }
    // A blob by id is served only over v2, where wants can be anything the project stores; an id it
    // does not store is not.
    const missing = await fetchV2([`want ${'ab'.repeat(20)}`, 'done']);
    expect(missing.text).toMatch(/not our ref/);
  });
});
