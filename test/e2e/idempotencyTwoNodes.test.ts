/**
 * Idempotency-Key across nodes: two server processes on one data directory (LMDB serves several
 * processes, as the command-line tool and the server share it) stand in for two nodes of one
 * database, each with its own in-memory map of running keys. 50 identical commit requests, sent at
 * once, half to each, make one commit; every other answer is that commit's answer, replayed, or
 * 409 `idempotency_in_progress`. A node whose request got past its lookup while the other's ran is
 * stopped by the record check in its own change's transaction.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/git.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { idempotentCommitRequest, rawRequestsAtOnce, type RawResponse } from '../support/rawHttp.js';

const dataDir = scratchDir('treehouse-idempotency-nodes-');
const running: ServerProcess[] = [];
afterAll(async () => {
  for (const server of running) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  dataDir.remove();
});

const ENV = { TREEHOUSE_DATA_DIR: dataDir.path, TREEHOUSE_RATE_PER_SECOND: '100000', TREEHOUSE_RATE_BURST: '100000' };
const ROUNDS = 5;

describe('Idempotency-Key on two nodes of one store', () => {
  it('makes one commit of 50 identical requests spread over both nodes, round after round', async () => {
    const nodes = [await startServerProcess(ENV)];
    running.push(nodes[0]);
    const key = (await nodes[0].waitFor(/API key for team default: (th_\S+)/))[1];
    nodes.push(await startServerProcess(ENV));
    running.push(nodes[1]);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const api = async (node: ServerProcess, method: string, path: string, body?: unknown) =>
      (await fetch(`${node.url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })).json();
    const project = (await api(nodes[0], 'POST', '/projects', { title: 'Two nodes' })).project.id;

    const made: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await api(nodes[round % 2], 'POST', `/projects/${project}/files/batch`, { files: [{ path: `r${round}.txt`, content: `${round}\n` }] });
      const message = `round ${round}`;
      const answers: RawResponse[] = (
        await Promise.all(
          nodes.map((node) =>
            rawRequestsAtOnce(
              node.url,
              Array.from({ length: 25 }, () => idempotentCommitRequest(node.url, key, project, `round-${round}`, message)),
            ),
          ),
        )
      ).flat();
      const fresh = answers.filter((answer) => answer.status === 201 && answer.headers['idempotent-replayed'] === undefined);
      expect(fresh, `round ${round}`).toHaveLength(1);
      for (const answer of answers) {
        if (answer.status === 201) expect(JSON.parse(answer.body)).toEqual(JSON.parse(fresh[0].body));
        else expect([answer.status, JSON.parse(answer.body).error.code]).toEqual([409, 'idempotency_in_progress']);
      }
      made.push(JSON.parse(fresh[0].body).commit.oid);
      // Both nodes replay it now.
      for (const node of nodes) {
        const [again] = await rawRequestsAtOnce(node.url, [idempotentCommitRequest(node.url, key, project, `round-${round}`, message)]);
        expect([again.status, again.body, again.headers['idempotent-replayed']]).toEqual([201, fresh[0].body, 'true']);
      }
    }
    const { commits } = await api(nodes[1], 'GET', `/projects/${project}/git/log?limit=50`);
    expect(commits.map((commit: { oid: string; message: string }) => [commit.oid, commit.message])).toEqual([
      ...made.map((oid, round) => [oid, `round ${round}`]).reverse(),
      [expect.any(String), 'Initial commit'],
    ]);
    for (const node of nodes) node.child.kill('SIGTERM');
    await Promise.all(nodes.map((node) => node.exited));
  }, 120_000);
});
