/**
 * GET search against `git grep -n --column` on the same commit: random trees of text in several
 * scripts (accents, CJK, emoji beyond the BMP, CRLF lines, tabs), with binary files, symlinks and
 * executables among them, are built with git and pushed; literal, case-insensitive, regular
 * expression (ERE and Perl-style) and path-filtered searches must list git's lines with git's
 * columns, converted from git's bytes to UTF-16 code units. git calls binary files matches without
 * lines; the contract skips them, and files over 1 MiB, which git searches. Also the default
 * working-tree ref, the limit, refused patterns and hostile parameters.
 */
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedGitEnv } from '../../fixtures/gitEnv.js';
import { scratchDir } from '../support/git.js';
import { createClonedProject, fastImport, pushBranches, type ClonedProject, type HistoryFile } from '../support/history.js';
import { Random } from '../support/randomHistory.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const work = scratchDir('treehouse-search-');
beforeAll(async () => {
  // Hundreds of calls in a row: the per-key rate limit would answer some of them 429.
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

interface Match {
  path: string;
  line: number;
  column: number;
  text: string;
}

/** git grep's answer, columns converted from bytes to UTF-16 code units; binary files dropped. */
function gitGrep(dir: string, commit: string, args: string[], paths: string[] = [], locale = 'C.UTF-8'): Match[] {
  const run = spawnSync('git', ['grep', '-z', '-n', '--column', ...args, commit, '--', ...paths], {
    cwd: dir,
    env: { ...isolatedGitEnv(), LC_ALL: locale },
    maxBuffer: 1 << 28,
  });
  if (run.status !== 0 && run.status !== 1) throw new Error(`git grep failed: ${run.stderr}`);
  const matches: Match[] = [];
  for (const record of run.stdout.toString('utf8').split('\n')) {
    if (record === '' || record.startsWith('Binary file ')) continue;
    const [name, line, byteColumn, ...rest] = record.split('\0');
    const text = rest.join('\0');
    const column = Buffer.from(text, 'utf8').subarray(0, Number(byteColumn) - 1).toString('utf8').length + 1;
    matches.push({ path: name.slice(commit.length + 1), line: Number(line), column, text });
  }
  return matches;
}

async function apiSearch(project: ClonedProject, query: Record<string, string | string[]>) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) for (const item of Array.isArray(value) ? value : [value]) search.append(key, item);
  return server.call('GET', `${project.base}/search?${search}`);
}

const WORDS = ['foo', 'Foo', 'FOO', 'bar', 'baz', 'x.y', 'a b', '(', 'TODO', 'caf\u00e9', 'CAF\u00c9', '\u00fcber', '\u65e5\u672c\u8a9e', '\u{1f600}', '\u{1f600}foo', '42', '7', '2024', '_id', 'foo_bar', '\t', '  ', 'k'];

function randomTree(seed: number): Map<string, HistoryFile> {
  const random = new Random(seed);
  const tree = new Map<string, HistoryFile>();
  const line = () => Array.from({ length: random.below(8) }, () => random.pick(WORDS)).join(random.pick([' ', '', '-', ',']));
  const dirs = ['', 'src', 'src/lib', 'srcx', 'docs', '\u00e9t\u00e9', 'a b'];
  for (let i = 0; i < 40; i++) {
    const dir = random.pick(dirs);
    const name = `${random.pick(['f', 'g', 'src', 'notes', 'x'])}${i}${random.pick(['.txt', '.ts', '', '.md'])}`;
    const path = dir === '' ? name : `${dir}/${name}`;
    const eol = random.chance(15) ? '\r\n' : '\n';
    const lines = Array.from({ length: random.below(30) }, line);
    let content = lines.join(eol) + (random.chance(80) && lines.length > 0 ? eol : '');
    const roll = random.below(100);
    if (roll < 8) content = `binary\0${content}`;
    tree.set(path, { mode: roll >= 8 && roll < 12 ? '120000' : roll >= 12 && roll < 20 ? '100755' : '100644', content: Buffer.from(roll >= 8 && roll < 12 ? 'foo/target' : content, 'utf8') });
  }
  return tree;
}

describe('GET search against git grep -n --column', () => {
  let project: ClonedProject;
  const commits: string[] = [];
  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'random'));
    const seeds = fc.sample(fc.nat(), { seed: 4, numRuns: 6 });
    const oids = fastImport(project.dir, seeds.map((seed, i) => ({ files: randomTree(seed), parents: [i === 0 ? project.root : i - 1], time: 1_700_000_000 + i })));
    commits.push(...oids);
    await pushBranches(project.dir, { main: oids[oids.length - 1] });
  });

  const cases: Array<{ name: string; query: Record<string, string>; git: string[]; locale?: string; paths?: string[] }> = [
    ...['foo', 'x.y', '(', 'a b', 'caf\u00e9', '\u{1f600}', '\u65e5\u672c', '\t', '42', 'k'].map((q) => ({ name: `literal ${JSON.stringify(q)}`, query: { q }, git: ['-F', '-e', q] })),
    ...['foo', 'caf\u00e9', '\u00dcBER', 'TODO'].map((q) => ({ name: `case-insensitive literal ${JSON.stringify(q)}`, query: { q, case: 'false' }, git: ['-F', '-i', '-e', q] })),
    ...['fo+', '^[a-z]+$', 'ba(r|z)', '[0-9]{2,3}', 'caf\u00e9.', 'o{2}_', '^\\(', '[^ -~]', '(foo|bar)[^a-z]', 'x\\.y$', '.\u{1f600}'].map((q) => ({ name: `regex ${JSON.stringify(q)}`, query: { q, regex: 'true' }, git: ['-E', '-e', q] })),
    ...['f[aeiou]o', 'CAF\u00c9|\u00dcber'].map((q) => ({ name: `case-insensitive regex ${JSON.stringify(q)}`, query: { q, regex: 'true', case: 'false' }, git: ['-E', '-i', '-e', q] })),
    // '^$' runs through -P: git's ERE path also reports a line after a file's final newline
    // (its look-ahead matches the empty string at the end of the buffer), a line the file lacks.
    ...['^$', '\\bfoo\\b', '\\d+', '\\w+_\\w+', '(?:ba[rz]){2}', '\\s\\d', 'foo\\B', '[[:upper:]]{3}'].map((q) => ({ name: `perl-style regex ${JSON.stringify(q)}`, query: { q, regex: 'true' }, git: ['-P', '-e', q], locale: 'C' })),
    { name: 'paths by whole components', query: { q: 'foo' }, git: ['-F', '-e', 'foo'], paths: ['src', '\u00e9t\u00e9/'] },
    { name: 'paths naming files', query: { q: 'o' }, git: ['-F', '-e', 'o'], paths: ['a b', 'srcx'] },
  ];

  for (const c of cases) {
    it(`equals git for ${c.name}`, async () => {
      let total = 0;
      for (const commit of commits) {
        const paths = c.paths ?? [];
        const expected = gitGrep(project.dir, commit, c.git, paths, c.locale);
        const response = await apiSearch(project, { ...c.query, ref: commit, limit: '1000', ...(paths.length > 0 ? { paths } : {}) });
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        expect(response.body.truncated).toBe(false);
        expect(response.body.matches).toEqual(expected);
        total += expected.length;
      }
      expect(total).toBeGreaterThan(0);
    });
  }

  it('skips binary files, symlinks and files over 1 MiB (git lists the first and last)', async () => {
    const big = Buffer.from(`needle\n${'x'.repeat(1024 * 1024)}\n`);
    const [commit] = fastImport(project.dir, [
      {
        files: new Map<string, HistoryFile>([
          ['big.txt', { mode: '100644', content: big }],
          ['bin.dat', { mode: '100644', content: Buffer.from('needle\0') }],
          ['link', { mode: '120000', content: Buffer.from('needle') }],
          ['small.txt', { mode: '100644', content: Buffer.from('a needle\n') }],
        ]),
        parents: [commits[commits.length - 1]],
        time: 1_700_001_000,
      },
    ]);
    await pushBranches(project.dir, { skip: commit });
    expect(gitGrep(project.dir, commit, ['-F', '-e', 'needle']).map((m) => m.path)).toEqual(['big.txt', 'small.txt']);
    const response = await apiSearch(project, { q: 'needle', ref: 'skip' });
    expect(response.body).toEqual({ matches: [{ path: 'small.txt', line: 1, column: 3, text: 'a needle' }], truncated: false });
  });

  it('stops at the limit and says so', async () => {
    const all = gitGrep(project.dir, commits[0], ['-F', '-e', 'o']);
    expect(all.length).toBeGreaterThan(12);
    const response = await apiSearch(project, { q: 'o', ref: commits[0], limit: '12' });
    expect(response.body).toEqual({ matches: all.slice(0, 12), truncated: true });
    const exact = await apiSearch(project, { q: 'o', ref: commits[0], limit: String(all.length) });
    expect(exact.body.truncated).toBe(false);
  });
});

describe('GET search of the working tree, and hostile input', () => {
  let project: ClonedProject;
  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'worktree'));
    expect((await server.call('POST', `${project.base}/files/batch`, { files: [{ path: 'draft.md', content: 'uncommitted needle\n' }] })).status).toBe(200);
  });

  it("searches the main branch's working tree by default", async () => {
    const response = await apiSearch(project, { q: 'needle' });
    expect(response.body).toEqual({ matches: [{ path: 'draft.md', line: 1, column: 13, text: 'uncommitted needle' }], truncated: false });
    expect((await apiSearch(project, { q: 'needle', ref: 'main' })).body.matches).toEqual([]);
  });

  it.each([
    [{ q: '(a)\\1', regex: 'true' }, 'backreferences'],
    [{ q: '(?=a)b', regex: 'true' }, 'lookaround'],
    [{ q: '(?<!a)b', regex: 'true' }, 'lookaround'],
    [{ q: 'a{1001}', regex: 'true' }, 'over 1000'],
    [{ q: '((a{1000}){1000})', regex: 'true' }, 'too large'],
    [{ q: '(', regex: 'true' }, 'missing'],
    [{ q: 'x'.repeat(1001) }, 'q'],
    [{ q: '' }, 'q'],
    [{ q: 'a\nb' }, 'one line'],
    [{ q: 'a', limit: '0' }, 'limit'],
    [{ q: 'a', limit: '1001' }, 'limit'],
    [{ q: 'a', regex: 'yes' }, 'regex'],
    [{ q: 'a', case: 'maybe' }, 'case'],
    [{ q: 'a', ref: 'x'.repeat(301) }, 'ref'],
    [{ q: 'a', paths: '../up' }, 'paths'],
    [{ q: 'a', paths: '/abs' }, 'paths'],
    [{ q: 'a', paths: Array.from({ length: 101 }, (_, i) => `p${i}`) }, 'paths'],
  ])('refuses %j with 400 and changes nothing', async (query, mention) => {
    const before = (await server.call('GET', project.base)).body.project.version;
    const response = await apiSearch(project, query as Record<string, string>);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(response.body.error)).toContain(mention);
    expect((await server.call('GET', project.base)).body.project.version).toBe(before);
  });

  it('answers an unknown ref with 404 and needs a key', async () => {
    expect((await apiSearch(project, { q: 'a', ref: 'nope' })).status).toBe(404);
    expect((await apiSearch(project, { q: 'a', ref: 'worktree:nope' })).status).toBe(404);
    expect((await server.call('GET', `${project.base}/search?q=a`, undefined, { key: null })).status).toBe(401);
  });

  it('finishes a pattern that backtracking engines take exponential time on, quickly', async () => {
    const evil = `${'a'.repeat(5000)}!`;
    expect((await server.call('POST', `${project.base}/files/batch`, { files: [{ path: 'evil.txt', content: `${evil}\n` }] })).status).toBe(200);
    const started = Date.now();
    const response = await apiSearch(project, { q: '(a|aa)*(a|aa)*b', regex: 'true' });
    expect(response.body).toEqual({ matches: [], truncated: false });
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
