import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFlush, encodePktLine } from '../../src/git/pktline.js';
import { hashObject } from '../../src/git/oid.js';
import { PackWriter } from '../../src/git/pack.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let projectId = '';
let head = '';
let headTree = '';
let auth = '';
beforeAll(async () => {
  server = await startTestServer();
  projectId = (await server.call('POST', '/api/v1/projects', { title: 'Fuzz', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } })).body.project.id;
  head = (await server.call('GET', `/api/v1/projects/${projectId}/git/branches`)).body.branches[0].oid;
  headTree = (await server.call('GET', `/api/v1/projects/${projectId}/git/commits/${head}?content=false`)).body.commit.tree_oid;
  auth = `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`;
});
afterAll(() => server.close());

async function post(service: 'git-upload-pack' | 'git-receive-pack', body: Uint8Array, v2 = false) {
  const response = await fetch(`${server.url}/git/${projectId}.git/${service}`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': `application/x-${service}-request`, ...(v2 ? { 'git-protocol': 'version=2' } : {}) },
    body: new Uint8Array(body),
  });
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
}

function validFetchV0(): Buffer {
  return Buffer.concat([encodePktLine(`want ${head} multi_ack_detailed side-band-64k ofs-delta\n`), encodeFlush(), encodePktLine('done\n')]);
}

function validFetchV2(): Buffer {
  return Buffer.concat([encodePktLine('command=fetch\n'), encodePktLine('object-format=sha1\n'), Buffer.from('0001'), encodePktLine(`want ${head}\n`), encodePktLine('done\n'), encodeFlush()]);
}

/** Creates branch fuzz at a new commit on top of main's head (its tree is already stored). */
function validPush(): Buffer {
  const body = Buffer.from(`tree ${headTree}\nparent ${head}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nfuzz\n`);
  const commit = hashObject('commit', body).toString('hex');
  const writer = new PackWriter(1);
  const pack = Buffer.concat([writer.start(), writer.addObject('commit', body).bytes, writer.finish()]);
  return Buffer.concat([encodePktLine(`${'0'.repeat(40)} ${commit} refs/heads/fuzz\0report-status\n`), encodeFlush(), pack]);
}

/** Flips, truncates, inserts or overwrites bytes of a valid request. */
const mutated = (base: Buffer) =>
  fc
    .array(
      fc.oneof(
        fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
        fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
        fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 40 }) }),
      ),
      { minLength: 1, maxLength: 4 },
    )
    .map((edits) => {
      let bytes = Buffer.from(base);
      for (const edit of edits) {
        const at = bytes.length === 0 ? 0 : edit.at % bytes.length;
        if (edit.kind === 'flip') bytes[at] = edit.value;
        else if (edit.kind === 'truncate') bytes = bytes.subarray(0, at);
        else bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(edit.bytes), bytes.subarray(at)]);
      }
      return bytes;
    });

describe('fuzzed protocol input', () => {
  it('answers mutated upload-pack and receive-pack requests with a response or an ERR pkt-line, and stays healthy', async () => {
    const cases: Array<['git-upload-pack' | 'git-receive-pack', Buffer, boolean]> = [
      ['git-upload-pack', validFetchV0(), false],
      ['git-upload-pack', validFetchV2(), true],
      ['git-receive-pack', validPush(), false],
    ];
    for (const [service, base, v2] of cases) {
      const unmutated = await post(service, base, v2);
      expect(unmutated.status).toBe(200);
      if (service === 'git-receive-pack') expect(unmutated.bytes.toString('latin1')).toContain('ok refs/heads/fuzz');
      await fc.assert(
        fc.asyncProperty(mutated(base), async (bytes) => {
          // As git's http-backend: every answer is a 200, refusals carry an ERR pkt-line git shows.
          const { status } = await post(service, bytes, v2);
          return status === 200;
        }),
        { seed: 4242, numRuns: 60 },
      );
    }
    expect((await server.call('GET', '/healthz', undefined, { key: null })).status).toBe(200);
    // Whatever was pushed, only valid branches may have appeared, and main did not move.
    const branches = (await server.call('GET', `/api/v1/projects/${projectId}/git/branches`)).body.branches;
    expect(branches.find((b: { name: string }) => b.name === 'main').oid).toBe(head);
  });

  it('refuses endless negotiation: too many haves in one request', async () => {
    const haves = Array.from({ length: 100_001 }, (_, i) => encodePktLine(`have ${i.toString(16).padStart(40, '0')}\n`));
    const body = Buffer.concat([encodePktLine(`want ${head} multi_ack_detailed\n`), encodeFlush(), ...haves, encodeFlush()]);
    const { status, bytes } = await post('git-upload-pack', body);
    expect(status).toBe(200);
    expect(bytes.toString('latin1')).toMatch(/^[0-9a-f]{4}ERR too many haves/);
  });

  it('refuses wants that were never advertised', async () => {
    const body = Buffer.concat([encodePktLine(`want ${'e'.repeat(40)} multi_ack_detailed\n`), encodeFlush(), encodePktLine('done\n')]);
    const { status, bytes } = await post('git-upload-pack', body);
    expect(status).toBe(200);
    expect(bytes.toString('latin1')).toContain(`ERR upload-pack: not our ref ${'e'.repeat(40)}`);
  });
});
