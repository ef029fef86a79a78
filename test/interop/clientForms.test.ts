/**
 * Differential tests of git client forms the other interop suites do not reach: each runs once
 * against Treehouse and once against `git http-backend` serving the same history, and the
 * outcomes must agree (exit status, what the client reports, the server's refs afterwards).
 *
 * - a push deleting a branch that is not there (git answers it as done, with a warning);
 * - `git fetch --negotiate-only` and `push.negotiate`, which send haves without wants under
 *   `wait-for-done` (protocol v2) and expect the common commits back, never a pack;
 * - `--force-with-lease`, stale and current;
 * - push options (`git push -o`), which Treehouse accepts and does not act on, within bounds.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsync, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { PEERS, type PeerName } from '../support/gitPeers.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let backend: GitHttpBackend;
let projectId = '';
const work = scratchDir('treehouse-client-forms-');
const seed = join(work.path, 'seed');

function url(peer: PeerName): string {
  if (peer === 'git') return `${backend.url}/shared.git`;
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

const refsOf = (peer: PeerName) => gitAsyncOk(['ls-remote', url(peer)]);

/** A clone of `peer` with one commit of its own on top of main. */
async function cloneWithCommit(peer: PeerName, name: string): Promise<string> {
  const dir = join(work.path, `${name}-${peer}`);
  await gitAsyncOk(['clone', '-q', url(peer), dir]);
  writeFileSync(join(dir, `${name}.txt`), `${name}\n`);
  git(['add', '-A'], { cwd: dir });
  git(['commit', '-q', '-m', name], {
    cwd: dir,
    env: {
      GIT_AUTHOR_DATE: '1700000000 +0000',
      GIT_COMMITTER_DATE: '1700000000 +0000',
    },
  });
  return dir;
}

async function eventCount(): Promise<number> {
  const listed = await server.call('GET', '/api/v1/events?limit=1000');
  expect(listed.status).toBe(200);
  return listed.body.events.length;
}

beforeAll(async () => {
  server = await startTestServer();
  backend = await startGitHttpBackend(join(work.path, 'served'));
  const created = await server.call('POST', '/api/v1/projects', {
    title: 'Client forms',
    source: {
      kind: 'files',
      files: [{ path: 'index.html', content: '<h1>start</h1>\n' }],
    },
  });
  expect(created.status).toBe(201);
  projectId = created.body.project.id;
  await gitAsyncOk(['clone', '-q', url('treehouse'), seed]);
  for (const [index, name] of ['a', 'b', 'c', 'd'].entries()) {
    writeFileSync(join(seed, `${name}.txt`), `${name}\n`);
    git(['add', '-A'], { cwd: seed });
    git(['commit', '-q', '-m', name], {
      cwd: seed,
      env: {
        GIT_AUTHOR_DATE: `${1_600_000_000 + index} +0000`,
        GIT_COMMITTER_DATE: `${1_600_000_000 + index} +0000`,
      },
    });
  }
  git(['branch', 'side', 'HEAD~2'], { cwd: seed });
  initBareRepo(join(work.path, 'served', 'shared.git'));
  // Off by default in git; Treehouse advertises push options, so its peer does too.
  git(['config', 'receive.advertisePushOptions', 'true'], { cwd: join(work.path, 'served', 'shared.git') });
  for (const peer of PEERS) await gitAsyncOk(['push', '-q', url(peer), 'main', 'side'], { cwd: seed });
  expect(await refsOf('treehouse')).toBe(await refsOf('git'));
});

afterAll(async () => {
  await server?.close();
  await backend?.close();
  work.remove();
});

describe('git client forms, Treehouse against git http-backend', () => {
  it('deletes a branch that is not there as git does: done, with a warning, nothing changed', async () => {
    const events = await eventCount();
    for (const peer of PEERS) {
      const before = await refsOf(peer);
      const pushed = await gitAsync(['push', url(peer), ':refs/heads/not-there'], { cwd: seed });
      expect(pushed.status, `${peer}:\n${pushed.output}`).toBe(0);
      expect(pushed.output).toContain('deleting a non-existent ref');
      expect(pushed.output).toMatch(/\[deleted\]\s+not-there/);
      expect(await refsOf(peer)).toBe(before);
    }
    // No branch moved, so no event either.
    expect(await eventCount()).toBe(events);
    // In one push beside a real update, which goes through.
    for (const peer of PEERS) {
      const pushed = await gitAsync(['push', url(peer), ':refs/heads/not-there', 'main:refs/heads/beside'], { cwd: seed });
      expect(pushed.status, `${peer}:\n${pushed.output}`).toBe(0);
    }
    expect(await refsOf('treehouse')).toBe(await refsOf('git'));
    // One event: the branch created beside it.
    expect(await eventCount()).toBe(events + 1);
    // A delete that names the old id the client thinks the missing branch had is refused by both.
    const main = git(['rev-parse', 'main'], { cwd: seed }).trim();
    for (const peer of PEERS) {
      const pushed = await gitAsync(['push', `--force-with-lease=refs/heads/not-there:${main}`, url(peer), ':refs/heads/not-there'], { cwd: seed });
      expect(pushed.status, `${peer}:\n${pushed.output}`).not.toBe(0);
    }
    expect(await refsOf('treehouse')).toBe(await refsOf('git'));
  });

  it('answers git fetch --negotiate-only (haves, no wants, wait-for-done) with the common commits', async () => {
    const commons: Record<PeerName, string[]> = { treehouse: [], git: [] };
    for (const peer of PEERS) {
      const dir = await cloneWithCommit(peer, 'negotiate');
      const negotiated = await gitAsync(['-c', 'protocol.version=2', 'fetch', '--negotiate-only', '--negotiation-tip=HEAD', 'origin'], { cwd: dir });
      expect(negotiated.status, `${peer}:\n${negotiated.output}`).toBe(0);
      expect(negotiated.output).not.toContain('wait-for-done');
      commons[peer] = negotiated.stdout.trim().split('\n').filter(Boolean).sort();
    }
    expect(commons.git.length).toBeGreaterThan(0);
    expect(commons.treehouse).toEqual(commons.git);
  });

  it('pushes with push.negotiate, negotiating first as with git', async () => {
    for (const peer of PEERS) {
      const dir = await cloneWithCommit(peer, 'pushneg');
      const pushed = await gitAsync(['-c', 'protocol.version=2', '-c', 'push.negotiate=true', 'push', 'origin', 'HEAD:refs/heads/negotiated'], { cwd: dir });
      expect(pushed.status, `${peer}:\n${pushed.output}`).toBe(0);
      expect(pushed.output).not.toContain('negotiation failed');
    }
    expect(await refsOf('treehouse')).toBe(await refsOf('git'));
  });

  it('honours --force-with-lease: a stale lease is refused, a current one pushes', async () => {
    const older = git(['rev-parse', 'main~1'], { cwd: seed }).trim();
    for (const peer of PEERS) {
      const dir = await cloneWithCommit(peer, 'lease');
      const stale = await gitAsync(['push', `--force-with-lease=main:${older}`, 'origin', 'HEAD:main'], { cwd: dir });
      expect(stale.status, `${peer}:\n${stale.output}`).not.toBe(0);
      expect(stale.output).toContain('stale info');
      const current = await gitAsync(['push', '--force-with-lease=main', 'origin', 'HEAD:refs/heads/leased'], { cwd: dir });
      expect(current.status, `${peer}:\n${current.output}`).toBe(0);
    }
    expect(await refsOf('treehouse')).toBe(await refsOf('git'));
  });

  it('accepts push options (git push -o), as a git server advertising them does', async () => {
    for (const peer of PEERS) {
      const dir = await cloneWithCommit(peer, 'options');
      const pushed = await gitAsync(['push', '-o', 'ci.skip', '-o', 'merge_request.create', 'origin', 'HEAD:refs/heads/with-options'], { cwd: dir });
      expect(pushed.status, `${peer}:\n${pushed.output}`).toBe(0);
      const deleted = await gitAsync(['push', '-o', 'ci.skip', 'origin', ':refs/heads/with-options'], { cwd: dir });
      expect(deleted.status, `${peer}:\n${deleted.output}`).toBe(0);
      // A push.pushOption in the client's config is sent with every push.
      const configured = await gitAsync(['-c', 'push.pushOption=ci.skip', 'push', 'origin', 'HEAD:refs/heads/configured-options'], { cwd: dir });
      expect(configured.status, `${peer}:\n${configured.output}`).toBe(0);
    }
    expect(await refsOf('treehouse')).toBe(await refsOf('git'));
  });

  it('refuses more than 100 push options, or one over 1 KiB, and changes nothing', async () => {
    const dir = await cloneWithCommit('treehouse', 'too-many-options');
    const before = await refsOf('treehouse');
    const many = await gitAsync(['push', ...Array.from({ length: 101 }, (_, i) => ['-o', `option-${i}`]).flat(), 'origin', 'HEAD:refs/heads/many-options'], { cwd: dir });
    expect(many.status).not.toBe(0);
    expect(many.output).toContain('too many push options (at most 100)');
    const long = await gitAsync(['push', '-o', 'x'.repeat(1025), 'origin', 'HEAD:refs/heads/long-option'], { cwd: dir });
    expect(long.status).not.toBe(0);
    expect(long.output).toContain('a push option is longer than 1024 bytes');
    expect(await refsOf('treehouse')).toBe(before);
    // 100 options of 1 KiB each go through.
    const most = await gitAsync(['push', ...Array.from({ length: 100 }, (_, i) => ['-o', `${i}`.padEnd(1024, 'x')]).flat(), 'origin', 'HEAD:refs/heads/most-options'], {
      cwd: dir,
    });
    expect(most.status, most.output).toBe(0);
  });
});
