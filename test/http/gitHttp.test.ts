/**
 * The git endpoints' HTTP edge: the key is checked before a body is read, bodies are inflated as
 * streams that stop at their limit, and what cannot be read is answered in a form git shows.
 */
import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFlush, encodePktLine } from '../../src/git/pktline.js';
import { gitAsync, scratchDir } from '../support/git.js';
import { probeHealthz } from '../support/healthProbe.js';
import { startTestServer, type TestServer } from '../support/server.js';

const MIB = 1024 * 1024;
let server: TestServer;
/** A server with the default limits, where a body may inflate to 100 MiB. */
let roomy: TestServer;
let projectId = '';
let head = '';
let auth = '';
/** 100 KB of gzip that inflates to 100 MiB, as in the report. */
let bomb: Buffer;

beforeAll(async () => {
  server = await startTestServer({ limits: { requestBodyBytesMax: MIB } });
  projectId = (await server.call('POST', '/api/v1/projects', { title: 'Edge', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } })).body.project.id;
  head = (await server.call('GET', `/api/v1/projects/${projectId}/git/branches`)).body.branches[0].oid;
  auth = `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`;
  bomb = gzipSync(Buffer.alloc(100 * MIB), { level: 9 });
  roomy = await startTestServer();
});
afterAll(async () => {
  await server.close();
  await roomy.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  ms: number;
}

/**
 * POSTs with node:http, so a body can be left unfinished (`sendBytes` of it, then silence) and an
 * early answer is read even while the body is still going out.
 */
function post(service: string, headers: Record<string, string>, body: Buffer, options: { sendBytes?: number; on?: TestServer } = {}): Promise<RawAnswer> {
  const started = performance.now();
  const target = new URL(`${(options.on ?? server).url}/git/${projectId}.git/${service}`);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      target,
      { method: 'POST', headers: { 'content-type': `application/x-${service}-request`, 'content-length': String(body.length), ...headers } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks), ms: performance.now() - started });
          outgoing.destroy();
        });
      },
    );
    // The server may close the connection while we are still sending; only the answer matters.
    outgoing.on('error', (error) => setTimeout(() => reject(error), 1000));
    if (options.sendBytes === undefined) outgoing.end(body);
    else outgoing.write(body.subarray(0, options.sendBytes));
  });
}

function fetchRequestV0(): Buffer {
  return Buffer.concat([encodePktLine(`want ${head} multi_ack_detailed side-band-64k ofs-delta\n`), encodeFlush(), encodePktLine('done\n')]);
}

describe('authentication comes before the body', () => {
  it('answers 401 to an unauthenticated request whose body has not even arrived', async () => {
    const answer = await Promise.race([
      post('git-upload-pack', { 'content-encoding': 'gzip' }, bomb, { sendBytes: 1024 }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s: the server waits for the body')), 5000)),
    ]);
    expect(answer.status).toBe(401);
    expect(answer.headers['www-authenticate']).toBe('Basic realm="Treehouse"');
    expect(answer.headers.connection).toBe('close');
  });

  it('stays responsive while unauthenticated gzip bombs arrive: none is inflated', async () => {
    const sent = Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        post(i % 2 ? 'git-receive-pack' : 'git-upload-pack', { 'content-encoding': 'gzip', authorization: 'Basic Z2l0Om5vcGU=' }, bomb, { on: roomy }),
      ),
    );
    const latencies = await probeHealthz(roomy.url, sent, 5);
    const answers = await sent;
    expect(answers.map((answer) => answer.status)).toEqual([401, 401, 401, 401, 401, 401]);
    // Inflating six bombs in the event loop stalled it about 2 s; reading none of them costs nothing.
    expect(Math.max(...latencies), `healthz latencies: ${latencies.map(Math.round).join(' ')}`).toBeLessThan(500);
  });
});

describe('request bodies', () => {
  it('serves a gzip request body, inflated as a stream', async () => {
    const answer = await post('git-upload-pack', { authorization: auth, 'content-encoding': 'gzip' }, gzipSync(fetchRequestV0()));
    expect(answer.status).toBe(200);
    expect(answer.body.toString('latin1')).toContain('PACK');
  });

  it('answers a body that is not gzip with an ERR pkt-line (upload-pack) or a side-band error (receive-pack), not JSON', async () => {
    const upload = await post('git-upload-pack', { authorization: auth, 'content-encoding': 'gzip' }, Buffer.from('this is not gzip at all'));
    expect(upload.status).toBe(200);
    expect(upload.headers['content-type']).toBe('application/x-git-upload-pack-result');
    expect(upload.body.toString('latin1')).toMatch(/^[0-9a-f]{4}ERR the request body is not valid gzip: /);
    const push = await post('git-receive-pack', { authorization: auth, 'content-encoding': 'gzip' }, Buffer.from('this is not gzip at all'));
    expect(push.status).toBe(200);
    expect(push.body.toString('latin1')).toMatch(/^[0-9a-f]{4}\x03the request body is not valid gzip: .*\n0000$/s);
    const unknown = await post('git-upload-pack', { authorization: auth, 'content-encoding': 'br' }, fetchRequestV0());
    expect(unknown.body.toString('latin1')).toMatch(/ERR Content-Encoding "br" is not supported/);
  });

  it('refuses a body that inflates over its limit, having inflated no more than the limit', async () => {
    // upload-pack: 16 MiB, whatever the push limit.
    const upload = await post('git-upload-pack', { authorization: auth, 'content-encoding': 'gzip' }, gzipSync(Buffer.concat([fetchRequestV0(), Buffer.alloc(17 * MIB)])));
    expect(upload.status).toBe(200);
    expect(upload.body.toString('latin1')).toMatch(/^[0-9a-f]{4}ERR the request body is over the limit of 16777216 bytes \(inflated\)$/);
    expect(upload.headers.connection).toBe('close');
    // receive-pack: the request body limit (1 MiB on this server), gzip or not.
    const zipped = await post('git-receive-pack', { authorization: auth, 'content-encoding': 'gzip' }, bomb);
    expect(zipped.body.toString('latin1')).toMatch(/^[0-9a-f]{4}\x03the request body is over the limit of 1048576 bytes \(inflated\)\n0000$/);
    const raw = await post('git-receive-pack', { authorization: auth }, Buffer.alloc(2 * MIB));
    expect(raw.body.toString('latin1')).toMatch(/^[0-9a-f]{4}\x03the request body is over the limit of 1048576 bytes\n0000$/);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});

describe('rate limits', () => {
  it('answers a key over its rate 429 with Retry-After and a message git shows', async () => {
    const limited = await startTestServer({ limits: { requestsPerSecondPerKey: 1, requestBurstPerKey: 2 } });
    const dir = scratchDir('treehouse-rate-');
    try {
      // The project is made with a second key, so the limited key's bucket starts full (2 tokens).
      const { key: other } = await limited.th.accounts.createKey('default', 'other');
      const created = await limited.call('POST', '/api/v1/projects', { title: 'Limited' }, { key: other });
      expect(created.status).toBe(201);
      const repository = `${limited.url}/git/${created.body.project.id}.git`;
      const infoRefs = () => fetch(`${repository}/info/refs?service=git-upload-pack`, { headers: { authorization: `Bearer ${limited.key}` } });
      // Two requests at once empty the bucket; it takes a second to earn the next token, and until
      // the clone is over any token earned is spent at once, however slowly git starts.
      expect((await Promise.all([infoRefs(), infoRefs()])).map((response) => response.status)).toEqual([200, 200]);
      const clone = gitAsync(['clone', repository.replace('http://', `http://git:${limited.key}@`), `${dir.path}/clone`]);
      let cloning = true;
      void clone.finally(() => (cloning = false));
      while (cloning) {
        await (await infoRefs()).arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const cloned = await clone;
      expect(cloned.status).not.toBe(0);
      expect(cloned.output).toMatch(/remote: Too many requests for this API key \(rate limit\); retry in 1 s\.\n[^]*429/);
      // However long the clone took, a burst of three requests meets the limit.
      const answers = await Promise.all([infoRefs(), infoRefs(), infoRefs()]);
      const refused = answers.find((response) => response.status === 429)!;
      expect(refused).toBeDefined();
      expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await refused.text()).toMatch(/^Too many requests for this API key/);
    } finally {
      dir.remove();
      await limited.close();
    }
  });
});

describe('the pack checker', () => {
  it('starts its worker on a receive-pack advertisement, not on an upload-pack one', async () => {
    const fresh = await startTestServer();
    try {
      const created = await fresh.call('POST', '/api/v1/projects', { title: 'Warm', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
      const basic = `Basic ${Buffer.from(`git:${fresh.key}`).toString('base64')}`;
      const infoRefs = (service: string) => fetch(`${fresh.url}/git/${created.body.project.id}.git/info/refs?service=${service}`, { headers: { authorization: basic } });
      expect((await infoRefs('git-upload-pack')).status).toBe(200);
      expect(fresh.th.packChecker.started).toBe(false);
      expect((await infoRefs('git-receive-pack')).status).toBe(200);
      expect(fresh.th.packChecker.started).toBe(true);
    } finally {
      await fresh.close();
    }
  });
});
