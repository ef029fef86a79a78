/**
 * Several stateless nodes over one PostgreSQL database (issue 15): three server processes, as
 * `npm start` runs them, on a database of a cluster of this file's own (so it can be restarted),
 * with requests spread over them round-robin. The first key is made once for the cluster; 200
 * concurrent writers with expected_head on one branch lose no update; a commit made through one
 * node is cloned from another; an event made on one reaches a stream and a webhook on another;
 * kill -9 of a node mid-write loses no acknowledged write; a PostgreSQL restart under load is
 * answered 503 (never 500, never a hang) and the nodes recover without restarting; the rate limit
 * holds across nodes.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRecord } from '../../src/store/postgres/codec.js';
import { git, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { startGitHttpBackend } from '../support/httpBackend.js';
import { freshDatabase, launchPostgres, type PostgresCluster } from '../support/postgres.js';
import { repoRoot, startServerProcess, type ServerProcess } from '../support/process.js';
import { startTestServer } from '../support/server.js';
import { openEventStream } from '../support/sse.js';

const SECRET = 'the-secret-of-this-cluster';
const work = scratchDir('treehouse-multinode-');
let cluster: PostgresCluster;
let databaseUrl: string;
const nodes: ServerProcess[] = [];
/** Every process started, for the teardown (nodes replaced after a kill included). */
const started: ServerProcess[] = [];
let key = '';
let turn = 0;

function nodeEnv(name: string): Record<string, string> {
  return {
    TREEHOUSE_DATABASE_URL: databaseUrl,
    TREEHOUSE_SECRET: SECRET,
    TREEHOUSE_DATA_DIR: join(work.path, name),
    TREEHOUSE_RATE_PER_SECOND: '0',
    TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1',
  };
}

async function startNode(name: string, env: Record<string, string> = nodeEnv(name)): Promise<ServerProcess> {
  const node = await startServerProcess(env);
  started.push(node);
  return node;
}

/** The next node, round-robin. */
const next = (): ServerProcess => nodes[turn++ % nodes.length];

interface Answer {
  status: number;
  body: any;
}

/** One API call; a call not answered within `timeoutMs` rejects (a hang is a failure, not a wait). */
async function api(node: ServerProcess, method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<Answer> {
  const response = await fetch(`${node.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: kept as text.
  }
  return { status: response.status, body: parsed };
}

async function newProject(title: string): Promise<string> {
  const created = await api(next(), 'POST', '/projects', { title, source: { kind: 'files', files: [{ path: 'index.html', content: `<h1>${title}</h1>\n` }] } });
  expect(created.status).toBe(201);
  return created.body.project.id;
}

async function mainHead(node: ServerProcess, project: string): Promise<string> {
  const branches = await api(node, 'GET', `/projects/${project}/git/branches`);
  expect(branches.status).toBe(200);
  return branches.body.branches.find((branch: { name: string }) => branch.name === 'main').oid;
}

/** Every commit of main's log, newest first, paged through. */
async function fullLog(node: ServerProcess, project: string): Promise<Array<{ oid: string; message: string; parent_oids: string[] }>> {
  const commits = [];
  let cursor: string | null = null;
  do {
    const page: Answer = await api(node, 'GET', `/projects/${project}/git/log?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(page.status).toBe(200);
    commits.push(...page.body.commits);
    cursor = page.body.next_cursor;
  } while (cursor);
  return commits;
}

/** The paths of the branch's working tree under `prefix`. */
async function pathsUnder(node: ServerProcess, project: string, prefix: string): Promise<Set<string>> {
  const listed = await api(node, 'GET', `/projects/${project}/files?prefix=${encodeURIComponent(prefix)}`);
  expect(listed.status).toBe(200);
  return new Set(listed.body.files.map((file: { path: string }) => file.path));
}

beforeAll(async () => {
  cluster = await launchPostgres({ durable: false });
  databaseUrl = (await freshDatabase('multinode', cluster)).url;
  // Three nodes start at once on the empty database.
  nodes.push(...(await Promise.all(['a', 'b', 'c'].map((name) => startNode(name)))));
}, 180_000);

afterAll(async () => {
  for (const node of started) if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
  await Promise.all(started.map((node) => node.exited));
  await cluster?.stop();
  work.remove();
}, 60_000);

describe('three nodes over one database', () => {
  it('make the first key once for the cluster, however many nodes start at once', async () => {
    const printed = nodes.map((node) => node.output().match(/^API key for team default: (th_\S+)$/m)?.[1]).filter((found) => found !== undefined);
    expect(printed).toHaveLength(1);
    key = printed[0]!;
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
    try {
      const counts = await sql`SELECT count(*) FILTER (WHERE key LIKE 'team/%')::int AS teams, count(*) FILTER (WHERE key LIKE 'key/%')::int AS keys FROM treehouse_records`;
      expect(counts[0]).toEqual({ teams: 1, keys: 1 });
    } finally {
      await sql.end();
    }
    // The key works on every node.
    for (const node of nodes) expect((await api(node, 'GET', '/projects')).status).toBe(200);
  });

  it('refuse a key on every node once it is revoked, though each had let it in', async () => {
    const cli = (args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ['--import', 'tsx', join(repoRoot, 'src', 'cli.ts'), ...args], { cwd: repoRoot, env: { ...process.env, ...nodeEnv('cli') } }, (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
        ),
      );
    const created = (await cli(['keys', 'create', '--team', 'default', '--name', 'short-lived'])).trim().split('\n');
    const shortLived = created[created.length - 1];
    const listed = await cli(['keys', 'list', '--team', 'default']);
    const keyId = listed.split('\n').find((line) => line.includes('\tshort-lived\t'))!.split('\t')[0];
    const status = (node: ServerProcess) => fetch(`${node.url}/api/v1/projects`, { headers: { authorization: `Bearer ${shortLived}` } }).then((response) => response.status);
    // Twice on each node: the second may be answered from what the node keeps of live keys.
    for (const node of [...nodes, ...nodes]) expect(await status(node)).toBe(200);
    expect(await cli(['keys', 'revoke', keyId])).toContain(`revoked key ${keyId}`);
    for (const node of nodes) {
      for (let tries = 0; (await status(node)) !== 401; tries++) {
        expect(tries, 'the revoked key is still accepted').toBeLessThan(100);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    // The first key was not revoked: still accepted everywhere.
    for (const node of nodes) expect((await api(node, 'GET', '/projects')).status).toBe(200);
  });

  it('lose no update of 200 concurrent writers committing with expected_head on one branch, requests spread over the nodes', async () => {
    const project = await newProject('Contended');
    const ATTEMPTS = 2;
    // Each writer writes its file and commits on the head it read; refused (409), it writes again and
    // commits on the head the refusal names. Of each round of commits on one head exactly one may
    // land (the writers' requests queue on the project, so the rounds are the writers' attempts).
    const attempts = (
      await Promise.all(
        Array.from({ length: 200 }, async (_, writer) => {
          const tried = [];
          let head = await mainHead(next(), project);
          for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
            const written = await api(next(), 'POST', `/projects/${project}/files/batch`, { files: [{ path: `writers/${writer}.txt`, content: `writer ${writer}, attempt ${attempt}\n` }] });
            expect(written.status).toBe(200);
            const message = `writer ${writer} attempt ${attempt}`;
            const committed = await api(next(), 'POST', `/projects/${project}/git/commit`, { message, expected_head: head });
            tried.push({ message, head, committed });
            if (committed.status !== 409) break;
            head = committed.body.error.details.head;
          }
          return tried;
        }),
      )
    ).flat();
    expect(attempts.every(({ committed }) => [200, 201, 409].includes(committed.status))).toBe(true);
    const made = attempts.filter(({ committed }) => committed.status === 201);
    const refused = attempts.filter(({ committed }) => committed.status === 409);
    // A round's first commit lands, and the second round starts from it.
    expect(made.length).toBeGreaterThanOrEqual(ATTEMPTS);
    expect(refused.length).toBeGreaterThan(0);
    for (const { committed } of refused) {
      expect(committed.body.error.code).toBe('ref_changed');
      expect(committed.body.error.details.head).toMatch(/^[0-9a-f]{40}$/);
    }
    // An answer of 200 made no commit: the head it expected was the head, and already held the file.
    for (const { committed, head } of attempts.filter(({ committed }) => committed.status === 200)) {
      expect(committed.body.commit).toMatchObject({ oid: head, created: false });
    }
    // Whatever is left in the working tree goes into one last commit.
    const last = await api(next(), 'POST', `/projects/${project}/git/commit`, { message: 'the rest' });
    expect([200, 201]).toContain(last.status);

    const log = await fullLog(next(), project);
    const byOid = new Map(log.map((commit) => [commit.oid, commit]));
    // Every 201 is in the log, made on the head its writer expected, its message there once.
    for (const { message, head, committed } of made) {
      const commit = byOid.get(committed.body.commit.oid);
      expect(commit, message).toBeDefined();
      expect(commit!.parent_oids).toEqual([head]);
      expect(log.filter((entry) => entry.message === message)).toHaveLength(1);
    }
    // Every refused commit left nothing: no commit carries its message.
    for (const { message } of refused) expect(log.some((entry) => entry.message === message)).toBe(false);
    // One line of history, each commit on the one before: no two commits were made on one head.
    for (let index = 0; index + 1 < log.length; index++) expect(log[index].parent_oids).toEqual([log[index + 1].oid]);
    expect(log).toHaveLength(made.length + (last.status === 201 ? 1 : 0) + 1);
    // No write was lost: every writer's file is in the last commit, as its last write left it.
    const tip = await api(next(), 'GET', `/projects/${project}/git/commits/${log[0].oid}?content=false`);
    expect(tip.status).toBe(200);
    const committedPaths = new Set(tip.body.commit.files.map((file: { path: string }) => file.path));
    for (let writer = 0; writer < 200; writer++) expect(committedPaths.has(`writers/${writer}.txt`), `writer ${writer}`).toBe(true);
  });

  it('serve a clone from one node of a commit made through another, fsck-clean', async () => {
    const [a, , c] = nodes;
    const project = await newProject('Cloned');
    expect((await api(a, 'POST', `/projects/${project}/files/batch`, { files: [{ path: 'from-a.txt', content: 'written through node A\n' }] })).status).toBe(200);
    const committed = await api(a, 'POST', `/projects/${project}/git/commit`, { message: 'through A' });
    expect(committed.status).toBe(201);
    const clone = join(work.path, 'clone-from-c');
    await gitAsyncOk(['clone', '-q', `${c.url.replace('http://', `http://git:${key}@`)}/git/${project}.git`, clone]);
    expect(git(['rev-parse', 'HEAD'], { cwd: clone }).trim()).toBe(committed.body.commit.oid);
    expect(git(['show', 'HEAD:from-a.txt'], { cwd: clone })).toBe('written through node A\n');
    git(['fsck', '--strict'], { cwd: clone });
  });

  it('send an event made through one node to a stream open on another, and to a webhook made through a third', async () => {
    const [a, b, c] = nodes;
    const received: any[] = [];
    const receiver: Server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push(JSON.parse(body));
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const hook = await api(c, 'POST', '/webhooks', { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, events: ['files.changed'] });
      expect(hook.status).toBe(201);
      const project = await newProject('Evented');
      const stream = await openEventStream(b.url, key, { query: `project=${project}` });
      try {
        expect(stream.status).toBe(200);
        await stream.waitForComments(1);
        const written = await api(a, 'POST', `/projects/${project}/files/batch`, { files: [{ path: 'event.txt', content: 'event\n' }] });
        expect(written.status).toBe(200);
        const [event] = await stream.waitForEvents(1);
        expect(event.event).toBe('files.changed');
        expect(event.data).toMatchObject({ project_id: project, data: { paths: ['event.txt'] } });
      } finally {
        stream.close();
      }
      for (let tries = 0; !received.some((event) => event.project_id === project && event.type === 'files.changed'); tries++) {
        expect(tries, 'the webhook delivery').toBeLessThan(400);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      receiver.close();
    }
  });

  it('push a linked branch from one node at a time, whichever nodes its commits were made through', async () => {
    const root = join(work.path, 'upstreams');
    initBareRepo(join(root, 'linked.git'));
    let active = 0;
    let most = 0;
    let pushes = 0;
    // Every push is held a while at the upstream, so pushes of two nodes would overlap there.
    const upstream = await startGitHttpBackend(root, {
      beforeGit: async (request, response) => {
        if (request.method !== 'POST' || !request.url?.includes('git-receive-pack')) return;
        pushes++;
        most = Math.max(most, ++active);
        response.on('close', () => active--);
        await new Promise((resolve) => setTimeout(resolve, 200));
      },
    });
    try {
      const created = await api(next(), 'POST', '/projects', { title: 'Linked', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] }, git_remote: { url: `${upstream.url}/linked.git` } });
      expect(created.status).toBe(201);
      const project = created.body.project.id;
      let head = '';
      for (let round = 0; round < 12; round++) {
        expect((await api(next(), 'POST', `/projects/${project}/files/batch`, { files: [{ path: `round-${round}.txt`, content: `${round}\n` }] })).status).toBe(200);
        const committed = await api(next(), 'POST', `/projects/${project}/git/commit`, { message: `round ${round}` });
        expect(committed.status).toBe(201);
        head = committed.body.commit.oid;
      }
      for (let tries = 0; ; tries++) {
        const remote = await api(next(), 'GET', `/projects/${project}/git/remote`);
        if (remote.body.remote.sync.status === 'synced' && remote.body.remote.sync.oid === head) break;
        expect(tries, JSON.stringify(remote.body)).toBeLessThan(600);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(git(['rev-parse', 'refs/heads/main'], { cwd: join(root, 'linked.git') }).trim()).toBe(head);
      git(['fsck', '--strict'], { cwd: join(root, 'linked.git') });
      expect(pushes).toBeGreaterThan(1);
      expect(most).toBe(1);
    } finally {
      await upstream.close();
    }
  });

  it('lose no acknowledged write when a node is killed with kill -9 mid-write, and free what it held', async () => {
    const project = await newProject('Killed');
    const victim = nodes[1];
    const acknowledged: string[] = [];
    let killed = false;
    // Four writers on the node, so the kill finds writes at every stage (arriving, in their
    // transaction, committing, answered); the 40th acknowledgement pulls the trigger.
    const writer = async (name: string) => {
      for (let index = 0; !killed; index++) {
        const path = `killed/${name}-${index}.txt`;
        let answer: Answer;
        try {
          answer = await api(victim, 'POST', `/projects/${project}/files/batch`, { files: [{ path, content: `${name} ${index}\n` }] });
        } catch {
          // The node is gone: this write was never acknowledged.
          return;
        }
        expect(answer.status).toBe(200);
        acknowledged.push(path);
        if (acknowledged.length >= 40 && !killed) {
          killed = true;
          victim.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(['w', 'x', 'y', 'z'].map((name) => writer(name)));
    await victim.exited;
    const survivors = [nodes[0], nodes[2]];
    const present = await pathsUnder(survivors[0], project, 'killed/');
    for (const path of acknowledged) expect(present.has(path), path).toBe(true);
    // Whatever the killed node held (a transaction, the project's lock) went with its connections.
    expect((await api(survivors[1], 'POST', `/projects/${project}/files/batch`, { files: [{ path: 'after-kill.txt', content: 'after\n' }] })).status).toBe(200);
    expect((await api(survivors[0], 'POST', `/projects/${project}/git/commit`, { message: 'after the kill' })).status).toBe(201);
    // A new node takes the killed one's place, and sees what the others see.
    nodes[1] = await startNode('b2');
    expect(nodes[1].output()).not.toContain('API key for team default');
    const seen = await pathsUnder(nodes[1], project, 'killed/');
    for (const path of acknowledged) expect(seen.has(path), path).toBe(true);
  });

  it('answer 503, never 500 nor a hang, while PostgreSQL restarts under load, and recover without restarting', async () => {
    const project = await newProject('Restarted');
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    const acknowledged: string[] = [];
    let phase: 'before' | 'down' | 'after' = 'before';
    const okAfter = new Map<ServerProcess, number>();
    let running = true;
    let counter = 0;
    const loop = async () => {
      while (running) {
        const node = next();
        const path = `load/${counter++}.txt`;
        try {
          const answer = await api(node, 'POST', `/projects/${project}/files/batch`, { files: [{ path, content: 'load\n' }] });
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status === 200) {
            acknowledged.push(path);
            if (phase === 'after') okAfter.set(node, (okAfter.get(node) ?? 0) + 1);
          } else if (answer.status === 503) {
            expect(answer.body.error.code).toBe('unavailable');
            // While it is down, a node answers at once rather than piling requests up.
            if (phase === 'down') await new Promise((resolve) => setTimeout(resolve, 20));
          } else failures.push(`${answer.status} ${JSON.stringify(answer.body)}`);
        } catch (error) {
          failures.push(`no answer: ${String(error)}`);
        }
      }
    };
    const loops = Array.from({ length: 6 }, () => loop());
    const until = async (done: () => boolean, what: string, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!done()) {
        if (Date.now() > deadline || failures.length > 0) throw new Error(`${what}: ${failures.join('; ')}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    try {
      await until(() => acknowledged.length >= 30, 'writes before the restart');
      await cluster.shutDown!();
      phase = 'down';
      const unavailableBefore = statuses.get(503) ?? 0;
      await until(() => (statuses.get(503) ?? 0) >= unavailableBefore + 10, '503s while down');
      await cluster.startAgain!();
      phase = 'after';
      await until(() => nodes.every((node) => (okAfter.get(node) ?? 0) >= 5), 'writes through every node after the restart');
    } finally {
      running = false;
      await Promise.all(loops);
    }
    expect(failures).toEqual([]);
    expect([...statuses.keys()].sort()).toEqual([200, 503]);
    for (const node of nodes) expect(node.child.exitCode).toBeNull();
    const present = await pathsUnder(next(), project, 'load/');
    for (const path of acknowledged) expect(present.has(path), path).toBe(true);

    // Signals between the nodes came back with the database: an event made through A reaches a stream on C.
    const stream = await openEventStream(nodes[2].url, key, { query: `project=${project}` });
    try {
      await stream.waitForComments(1);
      expect((await api(nodes[0], 'POST', `/projects/${project}/files/batch`, { files: [{ path: 'after-restart.txt', content: 'x\n' }] })).status).toBe(200);
      const [event] = await stream.waitForEvents(1);
      expect(event.data).toMatchObject({ project_id: project, type: 'files.changed', data: { paths: ['after-restart.txt'] } });
    } finally {
      stream.close();
    }
  });
});

describe('a linked branch whose pushing node dies', () => {
  it('is pushed by another node once the dead node’s claim lapses', async () => {
    const database = await freshDatabase('claims', cluster);
    const env = (name: string) => ({ ...nodeEnv(name), TREEHOUSE_DATABASE_URL: database.url, TREEHOUSE_SYNC_CLAIM_TTL_MS: '2000' });
    const root = join(work.path, 'claimed-upstreams');
    initBareRepo(join(root, 'claimed.git'));
    // The first push is held at the upstream until its node has been killed.
    const hold: { release: (() => void) | null } = { release: null };
    let heldArrived!: () => void;
    const arrived = new Promise<void>((resolve) => (heldArrived = resolve));
    const upstream = await startGitHttpBackend(root, {
      beforeGit: async (request) => {
        if (request.method !== 'POST' || !request.url?.includes('git-receive-pack') || hold.release) return;
        await new Promise<void>((resolve) => {
          hold.release = resolve;
          heldArrived();
        });
      },
    });
    const sql = postgres(database.url, { max: 1, onnotice: () => undefined });
    try {
      const pusher = await startNode('claims-1', env('claims-1'));
      const firstKey = (await pusher.waitFor(/^API key for team default: (th_\S+)$/m))[1];
      const call = (node: ServerProcess, method: string, path: string, body?: unknown) =>
        fetch(`${node.url}/api/v1${path}`, { method, headers: { authorization: `Bearer ${firstKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }).then(async (response) => ({ status: response.status, body: await response.json() }));
      const created = await call(pusher, 'POST', '/projects', { title: 'Claimed', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] }, git_remote: { url: `${upstream.url}/claimed.git` } });
      expect(created.status).toBe(201);
      const project = created.body.project.id;
      await arrived;
      // The push is under way, under the pushing node's claim.
      const [entry] = await sql`SELECT key, value FROM treehouse_records WHERE key LIKE ${`remote-sync/queue/${project}/%`}`;
      expect(entry.key).toBe(`remote-sync/queue/${project}/main`);
      expect(decodeRecord<{ claim: { until: number } }>(entry.value).claim.until).toBeGreaterThan(Date.now());
      pusher.child.kill('SIGKILL');
      await pusher.exited;
      hold.release!();
      const taker = await startNode('claims-2', env('claims-2'));
      const head = (await call(taker, 'GET', `/projects/${project}/git/branches`)).body.branches[0].oid;
      for (let tries = 0; ; tries++) {
        const remote = await call(taker, 'GET', `/projects/${project}/git/remote`);
        if (remote.body.remote.sync.status === 'synced' && remote.body.remote.sync.oid === head) break;
        expect(tries, JSON.stringify(remote.body)).toBeLessThan(600);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(git(['rev-parse', 'refs/heads/main'], { cwd: join(root, 'claimed.git') }).trim()).toBe(head);
      expect(await sql`SELECT key FROM treehouse_records WHERE key LIKE ${`remote-sync/queue/${project}/%`}`).toHaveLength(0);
    } finally {
      hold.release?.();
      await sql.end();
      await upstream.close();
    }
  });
});

describe('the rate limit of a key on two nodes', () => {
  it('holds across the nodes: one bucket, not one per node', async () => {
    const shared = await freshDatabase('ratelimit', cluster);
    const env = { TREEHOUSE_DATABASE_URL: shared.url, TREEHOUSE_SECRET: SECRET };
    const limits = { requestsPerSecondPerKey: 1, requestBurstPerKey: 10 };
    const first = await startTestServer({ env, limits });
    const second = await startTestServer({ env, limits });
    try {
      const started = performance.now();
      const answers = [];
      for (let index = 0; index < 30; index++) answers.push(await (index % 2 ? second : first).call('GET', '/api/v1/projects', undefined, { key: first.key }));
      const elapsedSeconds = (performance.now() - started) / 1000;
      const allowed = answers.filter((answer) => answer.status === 200).length;
      // Ten in the burst, and one more per second the requests took; per-node buckets would let 20 through.
      expect(allowed).toBeGreaterThanOrEqual(10);
      expect(allowed).toBeLessThanOrEqual(10 + Math.ceil(elapsedSeconds));
      expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
      for (const answer of answers.filter((answer) => answer.status === 429)) expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    } finally {
      await first.close();
      await second.close();
      await shared.drop();
    }
  });
});
