/**
 * Differential test of the git smart-HTTP export against git itself: every operation runs once
 * against Treehouse and once against `git http-backend` serving a bare repository with the same
 * history (pushed from one clone, so the ids are identical), with protocol v0 and v2, and the
 * outcomes must agree: exit status, `git rev-list --all`, `.git/shallow` and `git fsck --strict`
 * of the client, and for pushes the server's refs afterwards.
 *
 * Covers shallow fetches (`--depth`, fetching and pulling into a shallow clone, `--unshallow`,
 * `--deepen`, `--shallow-since`, `--shallow-exclude`), pushes from shallow clones (one that
 * connects, one that cannot), errors git shows as `remote error:` and refused pushes with
 * `remote:` guidance.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
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
const work = scratchDir('treehouse-shallow-diff-');
const backendRoot = join(work.path, 'served');
const seed = join(work.path, 'seed');
/** Committer times of the seeded history: an hour apart, starting a day from now. */
const firstTime = Math.floor(Date.now() / 1000) + 86_400;
let clock = 0;
const history: Record<string, string> = {};

function url(peer: PeerName, repo = 'shared'): string {
  if (peer === 'git') return `${backend.url}/${repo}.git`;
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

/** The next commit time of the seeded history, as git's "<seconds> +0000". */
function tick(): Record<string, string> {
  const date = `${firstTime + 3600 * clock++} +0000`;
  return { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
}

function commitFiles(dir: string, name: string, files: Record<string, string>, env = tick()): string {
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  git(['add', '-A'], { cwd: dir });
  git(['commit', '-q', '--allow-empty', '-m', name], { cwd: dir, env });
  return (history[name] = git(['rev-parse', 'HEAD'], { cwd: dir }).trim());
}

interface ClientState {
  status: number;
  revList: string[];
  shallow: string[];
  fsck: number;
}

async function clientState(dir: string, status: number): Promise<ClientState> {
  if (!existsSync(join(dir, '.git'))) return { status, revList: [], shallow: [], fsck: -1 };
  const revList = (await gitAsync(['rev-list', '--all'], { cwd: dir })).stdout.trim().split('\n').filter(Boolean);
  const shallowFile = join(dir, '.git', 'shallow');
  const shallow = existsSync(shallowFile) ? readFileSync(shallowFile, 'utf8').trim().split('\n').filter(Boolean) : [];
  const fsck = (await gitAsync(['fsck', '--strict', '--no-progress'], { cwd: dir })).status;
  return { status, revList, shallow, fsck };
}

async function refsOf(peer: PeerName, repo = 'shared'): Promise<string> {
  return gitAsyncOk(['ls-remote', url(peer, repo)]);
}

const dirOf = (peer: PeerName, protocol: Protocol, name: string) => join(work.path, `${name}-${peer}-v${protocol}`);

/**
 * Runs one operation against both peers with one protocol and returns both outcomes; `run`
 * answers the git result (status and output) and the client directory to inspect.
 */
async function differential(
  protocol: Protocol,
  run: (peer: PeerName) => Promise<{ status: number; output: string; dir: string }>,
): Promise<Record<PeerName, ClientState & { output: string }>> {
  const outcomes = {} as Record<PeerName, ClientState & { output: string }>;
  for (const peer of PEERS) {
    const { status, output, dir } = await run(peer);
    outcomes[peer] = { ...(await clientState(dir, status)), output };
  }
  const strip = ({ output: _output, ...rest }: ClientState & { output: string }) => rest;
  expect(strip(outcomes.treehouse), `protocol v${protocol}; git said:\n${outcomes.git.output}\nTreehouse said:\n${outcomes.treehouse.output}`).toEqual(
    strip(outcomes.git),
  );
  return outcomes;
}

async function cloneDepth1(peer: PeerName, protocol: Protocol, name: string): Promise<string> {
  const dir = dirOf(peer, protocol, name);
  await gitAsyncOk(withProtocol(protocol, ['clone', '-q', '--depth', '1', '--no-single-branch', url(peer), dir]));
  return dir;
}

/** Pushes the seed's main (and any other given refs) to both peers. */
async function publish(...refs: string[]) {
  for (const peer of PEERS) await gitAsyncOk(['push', '-q', url(peer), ...refs], { cwd: seed });
}

beforeAll(async () => {
  server = await startTestServer();
  backend = await startGitHttpBackend(backendRoot);
  const created = await server.call('POST', '/api/v1/projects', {
    title: 'Shallow differential',
    source: { kind: 'files', files: [{ path: 'index.html', content: '<h1>start</h1>\n' }] },
  });
  expect(created.status).toBe(201);
  projectId = created.body.project.id;

  // History: I - A - B - C - M - D - E on main, with side (A - S1 - S2 merged at M - S3), feature
  // (E - F1) and first (the root I).
  await gitAsyncOk(['clone', '-q', url('treehouse'), seed]);
  history.I = git(['rev-parse', 'HEAD'], { cwd: seed }).trim();
  git(['branch', 'first'], { cwd: seed });
  commitFiles(seed, 'A', { 'a.txt': 'a\n' });
  git(['checkout', '-q', '-b', 'side'], { cwd: seed });
  commitFiles(seed, 'S1', { 's.txt': 's1\n' });
  git(['checkout', '-q', 'main'], { cwd: seed });
  commitFiles(seed, 'B', { 'b.txt': 'b\n' });
  git(['checkout', '-q', 'side'], { cwd: seed });
  commitFiles(seed, 'S2', { 's.txt': 's2\n' });
  git(['checkout', '-q', 'main'], { cwd: seed });
  commitFiles(seed, 'C', { 'c.txt': 'c\n' });
  git(['merge', '-q', '--no-ff', '-m', 'M', 'side'], { cwd: seed, env: tick() });
  history.M = git(['rev-parse', 'HEAD'], { cwd: seed }).trim();
  commitFiles(seed, 'D', { 'a.txt': 'a, changed\n' });
  commitFiles(seed, 'E', { 'sub.txt': 'e\n' });
  git(['checkout', '-q', 'side'], { cwd: seed });
  commitFiles(seed, 'S3', { 's.txt': 's3\n' });
  git(['checkout', '-q', '-b', 'feature', 'main'], { cwd: seed });
  commitFiles(seed, 'F1', { 'f.txt': 'f\n' });
  git(['checkout', '-q', 'main'], { cwd: seed });

  initBareRepo(join(backendRoot, 'shared.git'));
  await gitAsyncOk(['push', '-q', url('treehouse'), 'main', 'side', 'feature', 'first'], { cwd: seed });
  await gitAsyncOk(['push', '-q', url('git'), 'main', 'side', 'feature', 'first'], { cwd: seed });
  expect(await refsOf('treehouse')).toBe(await refsOf('git'));
});

afterAll(async () => {
  await server?.close();
  await backend?.close();
  work.remove();
});

describe.each(PROTOCOLS)('shallow fetches over protocol v%s, Treehouse against git http-backend', (protocol) => {
  it('clone --depth 1', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'depth1');
      return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', '--depth', '1', '--no-single-branch', url(peer), dir]))), dir };
    });
    expect(outcome.git.status).toBe(0);
    // The root commit is a branch tip at depth 1: git calls it shallow too.
    expect(outcome.git.shallow).toContain(history.I);
  });

  it('fetch --depth=3 on a depth-1 clone', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = await cloneDepth1(peer, protocol, 'depth3');
      return { ...(await gitAsync(withProtocol(protocol, ['fetch', '--depth=3']), { cwd: dir })), dir };
    });
    expect(outcome.git.status).toBe(0);
    expect(outcome.git.revList).toContain(history.M);
  });

  it('fetch --deepen=2 on a depth-1 clone', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = await cloneDepth1(peer, protocol, 'deepen2');
      return { ...(await gitAsync(withProtocol(protocol, ['fetch', '--deepen=2']), { cwd: dir })), dir };
    });
    expect(outcome.git.status).toBe(0);
    expect(outcome.git.revList).toContain(history.M);
  });

  it('fetch --unshallow on a depth-1 clone', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = await cloneDepth1(peer, protocol, 'unshallow');
      return { ...(await gitAsync(withProtocol(protocol, ['fetch', '--unshallow']), { cwd: dir })), dir };
    });
    expect(outcome.git.status).toBe(0);
    expect(outcome.git.shallow).toEqual([]);
  });

  it('clone --shallow-since=<date of C>', async () => {
    const since = git(['log', '-1', '--format=%ct', history.C], { cwd: seed }).trim();
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'since');
      return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', `--shallow-since=${since}`, '--no-single-branch', url(peer), dir]))), dir };
    });
    expect(outcome.git.status).toBe(0);
    // C is the oldest commit kept; M is a boundary too (its parent S2 is older), and git makes a
    // boundary commit parentless, so only what lies above M and C's own shallow line show.
    expect(outcome.git.shallow).toContain(history.C);
    expect(outcome.git.shallow).toContain(history.M);
    expect(outcome.git.revList).not.toContain(history.B);
  });

  it('clone --shallow-since=1970-01-01 (deepen-since 0): the whole history, not shallow', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'since-epoch');
      return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', '--shallow-since=1970-01-01T00:00:00Z', '--no-single-branch', url(peer), dir]))), dir };
    });
    expect(outcome.git.status).toBe(0);
    expect(outcome.git.shallow).toEqual([]);
    expect(outcome.git.revList).toContain(history.I);
  });

  it('clone --shallow-exclude=side', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'exclude');
      return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', '--shallow-exclude=side', '--single-branch', '--branch=main', url(peer), dir]))), dir };
    });
    expect(outcome.git.status).toBe(0);
    // M merges side, so it is the boundary (as is B, whose parent A side reaches too).
    expect(outcome.git.shallow.sort()).toEqual([history.B, history.M].sort());
    expect(outcome.git.revList).not.toContain(history.S2);
  });

  it('fetch --shallow-since and --shallow-exclude on depth-1 clones, and clone --shallow-exclude of every branch', async () => {
    const since = git(['log', '-1', '--format=%ct', history.B], { cwd: seed }).trim();
    for (const [name, args] of [
      ['fetch-since', ['fetch', `--shallow-since=${since}`]],
      ['fetch-exclude', ['fetch', '--shallow-exclude=first']],
    ] as const) {
      const outcome = await differential(protocol, async (peer) => {
        const dir = await cloneDepth1(peer, protocol, name);
        return { ...(await gitAsync(withProtocol(protocol, [...args]), { cwd: dir })), dir };
      });
      expect(outcome.git.status).toBe(0);
    }
    const all = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'exclude-all');
      return { ...(await gitAsync(withProtocol(protocol, ['clone', '-q', '--shallow-exclude=side', '--no-single-branch', url(peer), dir]))), dir };
    });
    expect(all.git.status).toBe(0);
  });

  it('fetch --depth=2 makes a full clone shallow', async () => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'full-then-depth');
      await gitAsyncOk(withProtocol(protocol, ['clone', '-q', url(peer), dir]));
      return { ...(await gitAsync(withProtocol(protocol, ['fetch', '--depth=2']), { cwd: dir })), dir };
    });
    expect(outcome.git.status).toBe(0);
  });
});

describe('changes on the server, seen from shallow clones', () => {
  it('fetch and pull into depth-1 clones after new commits (v0 and v2)', async () => {
    const fetchDirs = new Map<string, string>();
    const pullDirs = new Map<string, string>();
    for (const protocol of PROTOCOLS) {
      for (const peer of PEERS) {
        fetchDirs.set(`${peer}${protocol}`, await cloneDepth1(peer, protocol, 'fetch-new'));
        pullDirs.set(`${peer}${protocol}`, await cloneDepth1(peer, protocol, 'pull-new'));
      }
    }
    commitFiles(seed, 'N1', { 'n.txt': 'n1\n' });
    commitFiles(seed, 'N2', { 'n.txt': 'n2\n' });
    await publish('main');
    for (const protocol of PROTOCOLS) {
      const fetched = await differential(protocol, async (peer) => {
        const dir = fetchDirs.get(`${peer}${protocol}`)!;
        return { ...(await gitAsync(withProtocol(protocol, ['fetch']), { cwd: dir })), dir };
      });
      expect(fetched.git.status).toBe(0);
      expect(fetched.git.revList).toContain(history.N2);
      const pulled = await differential(protocol, async (peer) => {
        const dir = pullDirs.get(`${peer}${protocol}`)!;
        return { ...(await gitAsync(withProtocol(protocol, ['pull', '-q', '--ff-only']), { cwd: dir })), dir };
      });
      expect(pulled.git.status).toBe(0);
      expect(git(['rev-parse', 'HEAD'], { cwd: pullDirs.get(`treehouse${protocol}`)! }).trim()).toBe(history.N2);
    }
  });
});

describe('pushes from shallow clones', () => {
  it.each(PROTOCOLS)('pushes a commit made on a depth-1 clone (protocol v%s)', async (protocol) => {
    // The same content, parent and dates on every client, so both peers receive the same commit id.
    const env = tick();
    const outcome = await differential(protocol, async (peer) => {
      const dir = await cloneDepth1(peer, protocol, 'push-shallow');
      writeFileSync(join(dir, 'pushed.txt'), `pushed over v${protocol}\n`);
      git(['add', 'pushed.txt'], { cwd: dir });
      git(['commit', '-q', '-m', `pushed from a shallow clone (v${protocol})`], { cwd: dir, env });
      return { ...(await gitAsync(withProtocol(protocol, ['push', 'origin', 'main']), { cwd: dir })), dir };
    });
    expect(outcome.git.status).toBe(0);
    expect(await refsOf('treehouse')).toBe(await refsOf('git'));
    const pushed = outcome.git.revList[0];
    expect((await server.call('GET', `/api/v1/projects/${projectId}/git/log?limit=1`)).body.commits[0].oid).toBe(pushed);
    await gitAsyncOk(['pull', '-q', '--ff-only', url('treehouse'), 'main'], { cwd: seed });
  });

  it.each(PROTOCOLS)('refuses, with a reason, a push from a shallow clone whose history it cannot connect (protocol v%s)', async (protocol) => {
    // "other" holds two commits on top of main that neither peer has; a depth-1 clone of it has
    // the second without its parent, and pushes it to both peers.
    const otherBare = join(backendRoot, `other${protocol}.git`);
    initBareRepo(otherBare);
    git(['checkout', '-q', '--detach'], { cwd: seed });
    commitFiles(seed, `X1-${protocol}`, { 'x.txt': 'x1\n' });
    commitFiles(seed, `X2-${protocol}`, { 'x.txt': 'x2\n' });
    await gitAsyncOk(['push', '-q', otherBare, 'HEAD:refs/heads/main'], { cwd: seed });
    git(['checkout', '-q', 'main'], { cwd: seed });
    const before = await refsOf('git');
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'push-island');
      await gitAsyncOk(withProtocol(protocol, ['clone', '-q', '--depth', '1', url('git', `other${protocol}`), dir]));
      return { ...(await gitAsync(withProtocol(protocol, ['push', url(peer), 'HEAD:refs/heads/island']), { cwd: dir })), dir };
    });
    expect(outcome.git.status).not.toBe(0);
    expect(outcome.git.output).toContain('shallow update not allowed');
    expect(outcome.treehouse.output).toContain('[remote rejected] HEAD -> island (shallow update not allowed)');
    expect(outcome.treehouse.output).toContain(`remote: refs/heads/island: the history below ${history[`X1-${protocol}`].slice(0, 7)} is not on Treehouse`);
    expect(outcome.treehouse.output).toContain('git fetch --unshallow');
    expect(await refsOf('git')).toBe(before);
    expect(await refsOf('treehouse')).toBe(before);
    // Nothing of the refused history was stored.
    expect((await server.call('GET', `/api/v1/projects/${projectId}/git/commits/${history[`X2-${protocol}`]}`)).status).toBe(404);
  });
});

describe('refused pushes', () => {
  it('refuses a forced non-fast-forward like a git server that denies them, and says what to do', async () => {
    git(['config', 'receive.denyNonFastForwards', 'true'], { cwd: join(backendRoot, 'shared.git') });
    const before = await refsOf('git');
    const env = tick();
    const outcome = await differential('0', async (peer) => {
      const dir = dirOf(peer, '0', 'push-rewrite');
      await gitAsyncOk(['clone', '-q', url(peer), dir]);
      git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: dir });
      git(['commit', '-q', '--allow-empty', '-m', 'rewrite'], { cwd: dir, env });
      return { ...(await gitAsync(['push', '--force', 'origin', 'main'], { cwd: dir })), dir };
    });
    expect(outcome.git.status).not.toBe(0);
    expect(outcome.git.output).toContain('remote: error: denying non-fast-forward');
    expect(outcome.treehouse.output).toContain('remote: refs/heads/main: Treehouse never rewrites history, forced or not');
    expect(await refsOf('treehouse')).toBe(before);
    expect(await refsOf('git')).toBe(before);
  });

  it('answers a push without commands with nothing at all, as git does', async () => {
    const answers: Array<{ status: number; body: string }> = [];
    for (const peer of PEERS) {
      const target = new URL(`${url(peer)}/git-receive-pack`);
      const authorization = `Basic ${Buffer.from(`${target.username || 'git'}:${target.password}`).toString('base64')}`;
      target.username = target.password = '';
      const response = await fetch(target, { method: 'POST', headers: { authorization, 'content-type': 'application/x-git-receive-pack-request' }, body: new Uint8Array(encodeFlush()) });
      answers.push({ status: response.status, body: Buffer.from(await response.arrayBuffer()).toString('latin1') });
    }
    expect(answers).toEqual([
      { status: 200, body: '' },
      { status: 200, body: '' },
    ]);
  });

  it('tells a pusher to commit or discard the uncommitted changes of the Treehouse working tree', async () => {
    const dir = join(work.path, 'push-dirty');
    await gitAsyncOk(['clone', '-q', url('treehouse'), dir]);
    const written = await server.call('POST', `/api/v1/projects/${projectId}/files/batch`, { files: [{ path: 'draft.txt', content: 'not committed\n' }] });
    expect(written.status).toBe(200);
    git(['commit', '-q', '--allow-empty', '-m', 'onto a dirty branch'], { cwd: dir });
    const pushed = await gitAsync(['push', 'origin', 'main'], { cwd: dir });
    expect(pushed.status).not.toBe(0);
    expect(pushed.output).toContain('[remote rejected] main -> main (uncommitted changes)');
    expect(pushed.output).toContain(
      'remote: refs/heads/main: the branch has uncommitted changes in its Treehouse working tree; commit or discard them through the API',
    );
    expect((await server.call('DELETE', `/api/v1/projects/${projectId}/files/draft.txt`)).status).toBe(200);
  });
});

describe('errors git shows to its user', () => {
  const unknown = 'c0ffee'.repeat(6) + 'c0ff';

  it.each(PROTOCOLS)('answers a want of an unknown object so that git prints "remote error:" (protocol v%s)', async (protocol) => {
    const outcome = await differential(protocol, async (peer) => {
      const dir = dirOf(peer, protocol, 'unknown-want');
      await gitAsyncOk(['clone', '-q', url(peer), dir]);
      return { ...(await gitAsync(withProtocol(protocol, ['fetch', 'origin', unknown]), { cwd: dir })), dir };
    });
    expect(outcome.git.status).not.toBe(0);
    if (protocol === '2') {
      for (const peer of PEERS) expect(outcome[peer].output).toContain(`remote error: upload-pack: not our ref ${unknown}`);
    }
  });

  it('answers the same bytes as git to a raw v0 request wanting an unknown object', async () => {
    const body = Buffer.concat([encodePktLine(`want ${unknown} multi_ack_detailed side-band-64k\n`), encodeFlush(), encodePktLine('done\n')]);
    const answers: Array<{ status: number; body: string }> = [];
    for (const peer of PEERS) {
      const target = new URL(`${url(peer)}/git-upload-pack`);
      const authorization = `Basic ${Buffer.from(`${target.username}:${target.password}`).toString('base64')}`;
      target.username = target.password = '';
      const response = await fetch(target, { method: 'POST', headers: { authorization, 'content-type': 'application/x-git-upload-pack-request' }, body: new Uint8Array(body) });
      answers.push({ status: response.status, body: Buffer.from(await response.arrayBuffer()).toString('latin1') });
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[1]).toEqual({ status: 200, body: `0049ERR upload-pack: not our ref ${unknown}` });
  });
});
