/**
 * GET git/archive against `git archive` on the same commits. Trees hold regular and executable
 * files, empty and binary files, short and long symlinks, paths long enough for ustar's prefix
 * field and for pax records, non-ASCII names, directories holding only directories, and a
 * submodule. The uncompressed tar must equal git's byte for byte (gzip's deflate stream differs:
 * Node's zlib is not the system's); the zip must equal git's in every header field and content,
 * and byte for byte when nothing in it compresses. Also working-tree refs, prefixes, and hostile
 * parameters.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedGitEnv } from '../../fixtures/gitEnv.js';
import { scratchDir } from '../support/git.js';
import { createClonedProject, fastImport, pushBranches, type ClonedProject, type HistoryFile } from '../support/history.js';
import { readZip } from '../support/zipReader.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const work = scratchDir('treehouse-archive-');
beforeAll(async () => {
  // Hundreds of calls in a row: the per-key rate limit would answer some of them 429.
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

/** `git archive` output; zip times are local time for git, so it runs in UTC as Treehouse writes them. */
function gitArchive(dir: string, args: string[]): Buffer {
  const run = spawnSync('git', ['archive', ...args], { cwd: dir, env: { ...isolatedGitEnv(), TZ: 'UTC' }, maxBuffer: 1 << 30 });
  if (run.status !== 0) throw new Error(`git archive failed: ${run.stderr}`);
  return run.stdout;
}

async function apiArchive(project: ClonedProject, query: Record<string, string>): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const response = await fetch(`${server.url}${project.base}/git/archive?${new URLSearchParams(query)}`, { headers: { authorization: `Bearer ${server.key}` } });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

const file = (content: string | Buffer, mode: HistoryFile['mode'] = '100644'): HistoryFile => ({ mode, content: Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8') });

function richTree(): Map<string, HistoryFile> {
  const long = `${'d'.repeat(60)}/${'e'.repeat(60)}/${'f'.repeat(50)}.txt`;
  const veryLong = `${'g'.repeat(120)}/${'h'.repeat(120)}/${'i'.repeat(120)}.txt`;
  return new Map<string, HistoryFile>([
    ['README.md', file('# Hello\n'.repeat(40))],
    ['bin/run.sh', file('#!/bin/sh\necho run\n', '100755')],
    ['empty', file('')],
    ['data/blob.bin', file(Buffer.from([0, 1, 2, 3, 255, 0, 7]))],
    ['link', file('README.md', '120000')],
    ['long-link', file(`${'target/'.repeat(20)}end`, '120000')],
    ['only/dirs/here/leaf.txt', file('leaf\n')],
    ['\u00e9t\u00e9/caf\u00e9.txt', file('caf\u00e9\n')],
    [long, file('long path\n')],
    [veryLong, file('very long path\n')],
    ['src/a.ts', file('export const a = 1;\n'.repeat(200))],
    ['src/b-c.ts', file('b\n')],
    ['src.txt', file('s\n')],
  ]);
}

describe('GET git/archive against git archive', () => {
  let project: ClonedProject;
  let commit: string;
  let withSubmodule: string;
  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'rich'));
    const tree = richTree();
    const submodule = new Map(tree);
    submodule.set('vendor/lib', { mode: '160000', content: Buffer.from('0123456789abcdef0123456789abcdef01234567') });
    submodule.set('vendor/keep.txt', file('keep\n'));
    [commit, withSubmodule] = fastImport(project.dir, [
      { files: tree, parents: [project.root], time: 1_700_000_000 },
      { files: submodule, parents: [0], time: 1_700_003_600 },
    ]);
    await pushBranches(project.dir, { main: commit, sub: withSubmodule });
  });

  for (const prefix of [undefined, 'proj/', 'nested/dir/', 'p-']) {
    it(`writes git's tar byte for byte (prefix ${JSON.stringify(prefix)})`, async () => {
      const query: Record<string, string> = { ref: 'main', format: 'tar.gz' };
      if (prefix) query.prefix = prefix;
      const response = await apiArchive(project, query);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/gzip');
      const gitTarGz = gitArchive(project.dir, ['--format=tar.gz', ...(prefix ? [`--prefix=${prefix}`] : []), commit]);
      // gzip header: no name, time 0, "Unix" — as git's internal gzip writes it.
      expect(response.body.subarray(0, 10)).toEqual(gitTarGz.subarray(0, 10));
      const ours = gunzipSync(response.body);
      const theirs = gitArchive(project.dir, ['--format=tar', ...(prefix ? [`--prefix=${prefix}`] : []), commit]);
      expect(ours.length).toBe(theirs.length);
      expect(ours.equals(theirs)).toBe(true);
      expect(ours.equals(gunzipSync(gitTarGz))).toBe(true);
    });
  }

  it("writes git's zip: every header field and content, and the commit id as comment", async () => {
    for (const prefix of [undefined, 'proj/']) {
      const query: Record<string, string> = { ref: commit.slice(0, 12), format: 'zip' };
      if (prefix) query.prefix = prefix;
      const response = await apiArchive(project, query);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/zip');
      const ours = readZip(response.body);
      const theirs = readZip(gitArchive(project.dir, ['--format=zip', ...(prefix ? [`--prefix=${prefix}`] : []), commit]));
      expect(ours.comment).toBe(commit);
      // Deflated sizes depend on the zlib build; everything else must be git's.
      const comparable = (zip: typeof ours) =>
        zip.records.map((r) => ({ ...r, local: { ...r.local, compressedSize: 0 }, central: { ...r.central, compressedSize: 0, offset: 0 } }));
      expect(comparable(ours)).toEqual(comparable(theirs));
      expect(ours.records.length).toBeGreaterThan(15);
    }
  });

  it('writes a zip byte for byte equal to git when nothing compresses', async () => {
    const small = await createClonedProject(server, join(work.path, 'small'));
    const [head] = fastImport(small.dir, [
      { files: new Map([['a', file('1\n')], ['x/b', file('22\n', '100755')], ['x/y/l', file('a', '120000')], ['z', file('')]]), parents: [small.root], time: 1_650_000_000 },
    ]);
    await pushBranches(small.dir, { main: head });
    const response = await apiArchive(small, { format: 'zip', prefix: 'top/' });
    expect(response.body.equals(gitArchive(small.dir, ['--format=zip', '--prefix=top/', head]))).toBe(true);
  });

  it('leaves submodules out; the rest is git', async () => {
    const ours = gunzipSync((await apiArchive(project, { ref: 'sub', format: 'tar.gz' })).body);
    const theirs = gitArchive(project.dir, ['--format=tar', withSubmodule]);
    const names = (tar: Buffer) => tarNames(tar);
    expect(names(theirs)).toContain('vendor/lib/');
    expect(names(ours)).toEqual(names(theirs).filter((name) => name !== 'vendor/lib/'));
    const zip = readZip((await apiArchive(project, { ref: 'sub', format: 'zip' })).body);
    expect(zip.records.map((r) => r.name)).toEqual(readZip(gitArchive(project.dir, ['--format=zip', withSubmodule])).records.map((r) => r.name).filter((name) => name !== 'vendor/lib/'));
  });

  it('archives a working tree with its uncommitted files, without a commit id', async () => {
    const wt = await createClonedProject(server, join(work.path, 'wt'));
    expect((await server.call('POST', `${wt.base}/files/batch`, { files: [{ path: 'new/file.txt', content: 'uncommitted\n' }] })).status).toBe(200);
    const tar = gunzipSync((await apiArchive(wt, { ref: 'worktree:main', format: 'tar.gz' })).body);
    expect(tarNames(tar)).toEqual(['new/', 'new/file.txt']);
    const zip = readZip((await apiArchive(wt, { ref: 'worktree:main', format: 'zip' })).body);
    expect(zip.comment).toBe('');
    expect(zip.records.map((r) => [r.name, r.content.toString()])).toEqual([
      ['new/', ''],
      ['new/file.txt', 'uncommitted\n'],
    ]);
  });

  it.each([
    [{ format: 'zip', prefix: '../escape/' }, 400],
    [{ format: 'zip', prefix: '/abs/' }, 400],
    [{ format: 'zip', prefix: 'a/../../b/' }, 400],
    [{ format: 'zip', prefix: 'a//b/' }, 400],
    [{ format: 'zip', prefix: '.git/' }, 400],
    [{ format: 'zip', prefix: 'x'.repeat(5000) }, 400],
    [{ format: 'rar' }, 400],
    [{}, 400],
    [{ format: 'zip', ref: 'nope' }, 404],
    [{ format: 'tar.gz', ref: 'worktree:nope' }, 404],
  ])('answers %j with %i in the envelope', async (query, status) => {
    const response = await apiArchive(project, query as Record<string, string>);
    expect(response.status).toBe(status);
    expect(JSON.parse(response.body.toString()).error.code).toBe(status === 404 ? 'not_found' : 'invalid_request');
  });
});

/** Names of a tar's entries (ustar prefix joined, pax headers skipped). */
function tarNames(tar: Buffer): string[] {
  const names: string[] = [];
  let at = 0;
  while (at + 512 <= tar.length) {
    const header = tar.subarray(at, at + 512);
    if (header.every((byte) => byte === 0)) break;
    const field = (offset: number, length: number) => {
      const raw = header.subarray(offset, offset + length);
      const nul = raw.indexOf(0);
      return raw.subarray(0, nul < 0 ? length : nul).toString('utf8');
    };
    const size = parseInt(field(124, 12), 8);
    const type = String.fromCharCode(header[156]);
    const prefix = field(345, 155);
    if (type !== 'g' && type !== 'x') names.push(prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return names;
}
