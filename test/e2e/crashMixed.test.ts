/**
 * kill -9 in the middle of everything a busy project does at once: API writes and commits on main,
 * `git push`es to a branch, merges of that branch into main, and collections (a second of grace,
 * every 20 new versions: a writer's commit makes 3-4). The server process (as `npm start` runs it) is killed at a different
 * moment each round and started again on the same data directory: every commit answered 201 is on
 * main, the pushed branch is at the last push git reported done (or at the one in flight when the
 * process died), and a clone passes `fsck --strict` and `index-pack --strict`.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SourceTree, writeFilesToDirectory } from '../../fixtures/sourceTree.js';
import { strictClone } from '../support/clones.js';
import { gitAsyncOk, scratchDir } from '../support/git.js';
import { remoteUrl } from '../support/history.js';
import { serverProcesses } from '../support/process.js';

const ROUNDS = 3;
const work = scratchDir('treehouse-crash-mixed-');
const servers = serverProcesses();
const start = servers.start;
afterAll(async () => {
  await servers.killAll();
  work.remove();
});

describe('kill -9 under a mixed load', () => {
  it('loses no acknowledged commit, push or merge, and serves fsck-clean clones after each restart', async () => {
    const env = { TREEHOUSE_DATA_DIR: join(work.path, 'data'), TREEHOUSE_RATE_PER_SECOND: '0', TREEHOUSE_GC_GRACE_SECONDS: '1', TREEHOUSE_GC_NEW_OBJECTS: '20' };
    let server = await start(env);
    const key = (await server.waitFor(/API key for team default: (th_\S+)/))[1];
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}/api/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
    const tree = new SourceTree({ files: 1_000 });
    const id = (await call('POST', '/projects', { title: 'Crash' })).body.project.id as string;
    expect((await call('POST', `/projects/${id}/files/batch`, { files: [...tree.files()].map((file) => ({ path: file.path, content: file.content.toString('utf8') })) })).status).toBe(200);
    expect((await call('POST', `/projects/${id}/git/commit`, { message: 'Seed' })).status).toBe(201);
    // Read at each call: the server restarts on another port.
    const remote = () => remoteUrl({ url: server.url, key }, id);
    const pushClone = join(work.path, 'push');
    await gitAsyncOk(['clone', '-q', remote(), pushClone]);
    await gitAsyncOk(['checkout', '-q', '-b', 'pushes'], { cwd: pushClone });

    const acknowledged: string[] = [];
    let pushRound = 0;
    for (let round = 0; round < ROUNDS; round++) {
      let killed = false;
      let inFlight = '';
      let pushedInRound = '';
      const failures: string[] = [];
      const loop = async (name: string, body: () => Promise<void>) => {
        while (!killed) {
          try {
            await body();
          } catch (error) {
            // Once the process is killed, whatever was under way fails: that is the point.
            if (!killed) failures.push(`${name}: ${(error as Error).message.slice(0, 300)}`);
          }
        }
      };
      const writers = Array.from({ length: 2 }, (_, writer) =>
        loop(`writer ${writer}`, async () => {
          const name = `load/w${writer}/r${round}-${Math.random().toString(36).slice(2, 8)}.txt`;
          const written = await call('POST', `/projects/${id}/files/batch`, { files: [{ path: name, content: `${name}\n` }] });
          if (written.status !== 200 && !killed) failures.push(`write ${written.status}`);
          const committed = await call('POST', `/projects/${id}/git/commit`, { message: name });
          if (committed.status === 201) acknowledged.push(committed.body.commit.oid);
          else if (committed.status !== 200 && !killed) failures.push(`commit ${committed.status}`);
        }),
      );
      const pusher = loop('push', async () => {
        writeFilesToDirectory(pushClone, tree.changeFiles(20, 800_000 + pushRound++));
        await gitAsyncOk(['commit', '-qam', `push ${pushRound}`], { cwd: pushClone });
        inFlight = (await gitAsyncOk(['rev-parse', 'HEAD'], { cwd: pushClone })).trim();
        await gitAsyncOk(['push', '-q', remote(), 'pushes'], { cwd: pushClone });
        pushedInRound = inFlight;
      });
      const merger = loop('merge', async () => {
        const merged = await call('POST', `/projects/${id}/git/merge`, { source: 'pushes', target: 'main' });
        if (merged.status === 201) acknowledged.push(merged.body.merge.oid);
        else if (![200, 404, 409].includes(merged.status) && !killed) failures.push(`merge ${merged.status}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      });
      // Long enough for pushes to land; a different moment each round.
      await new Promise((resolve) => setTimeout(resolve, 3_000 + round * 700));
      killed = true;
      server.child.kill('SIGKILL');
      await server.exited;
      await Promise.all([...writers, pusher, merger]);
      expect(failures).toEqual([]);
      expect(pushedInRound, 'a push finished before the kill').not.toBe('');

      server = await start(env);
      const clone = join(work.path, `clone-${round}`);
      await strictClone(remote(), clone, work.path);
      const onMain = new Set((await gitAsyncOk(['rev-list', 'main'], { cwd: clone })).split('\n').filter(Boolean));
      expect(acknowledged.filter((oid) => !onMain.has(oid))).toEqual([]);
      const pushed = (await gitAsyncOk(['rev-parse', 'pushes'], { cwd: clone })).trim();
      expect([pushedInRound, inFlight]).toContain(pushed);
      // The next round pushes on top of what the server has.
      await gitAsyncOk(['reset', '-q', '--hard', pushed], { cwd: pushClone });
    }
    expect(acknowledged.length).toBeGreaterThan(ROUNDS);
  }, 180_000);
});
