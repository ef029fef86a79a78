/**
 * POST git/merge/preview against the merge itself and against `git merge-tree --write-tree`:
 * random pairs of branches (edits that overlap or not, deletes, adds on both sides, binary files,
 * mode changes, moves) are built with git and pushed. For a clean merge the preview must list
 * exactly the files POST git/merge then changes (git diff-tree of the target before and after);
 * for a conflicted one, the conflicted paths POST git/merge reports, with base/ours/theirs equal to
 * git's stages and `merged` equal to the file git's merge-tree writes with the same branch names in
 * its markers, while the merge itself changes nothing. Also fast-forwards, up-to-date, the base64
 * rule, the refusals a merge makes, and that a preview writes nothing.
 */
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { isolatedGitEnv } from '../../fixtures/gitEnv.js';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsync, gitBytes, scratchDir } from '../support/git.js';
import { createClonedProject, fastImport, pushBranches, type ClonedProject, type HistoryFile } from '../support/history.js';
import { Random } from '../support/randomHistory.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const work = scratchDir('treehouse-preview-');
beforeAll(async () => {
  // Hundreds of calls in a row: the per-key rate limit would answer some of them 429.
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

const SEED = Number(process.env.PREVIEW_SEED ?? 77);
const RUNS = Number(process.env.PREVIEW_RUNS ?? 40);

type Tree = Map<string, HistoryFile>;
const text = (lines: string[]): HistoryFile => ({ mode: '100644', content: Buffer.from(lines.map((line) => `${line}\n`).join('')) });
const linesOf = (file: HistoryFile) => file.content.toString('utf8').split('\n').slice(0, -1);

function scenario(seed: number): { base: Tree; target: Tree; source: Tree } {
  const random = new Random(seed);
  let counter = 0;
  const fresh = (n: number) => Array.from({ length: n }, () => `line ${counter++}`);
  const paths = ['a.txt', 'b.txt', 'src/c.ts', 'src/d.ts', 'docs/e.md', 'bin/f.dat', 'g', '\u00e9.txt'];
  const base: Tree = new Map();
  for (const path of paths) {
    if (!random.chance(70)) continue;
    base.set(path, path.endsWith('.dat') ? { mode: '100644', content: Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from(fresh(3).join('\n'))]) } : text(fresh(12)));
  }
  const side = (): Tree => {
    const tree: Tree = new Map(base);
    for (const [path, file] of base) {
      const roll = random.below(100);
      if (roll < 40) {
        if (path.endsWith('.dat')) tree.set(path, { mode: '100644', content: Buffer.concat([Buffer.from([0, 9]), Buffer.from(fresh(2).join(''))]) });
        else {
          const lines = linesOf(file);
          // Edits land in one of three regions, so the sides overlap often but not always.
          const at = 4 * random.below(3) + random.below(2);
          lines.splice(at, 1 + random.below(2), ...fresh(1 + random.below(2)));
          tree.set(path, text(lines));
        }
      } else if (roll < 48) tree.delete(path);
      else if (roll < 53) tree.set(path, { ...file, mode: '100755' });
      else if (roll < 58 && !path.startsWith('src/')) {
        tree.delete(path);
        tree.set(`moved/${path}`, file);
      }
    }
    if (random.chance(30)) tree.set(random.pick(['new.txt', 'src/new.ts']), text(fresh(3)));
    return tree;
  };
  return { base, target: side(), source: side() };
}

/** git merge-tree --write-tree: clean flag, tree, and the conflicted stages per path. */
function gitMergeTree(dir: string, target: string, source: string): string {
  // Exit status 1 means "conflicted", not failure.
  const run = spawnSync('git', ['merge-tree', '--write-tree', '-z', target, source], { cwd: dir, env: isolatedGitEnv(), maxBuffer: 1 << 28 });
  if (run.status !== 0 && run.status !== 1) throw new Error(`git merge-tree failed: ${run.stderr}`);
  return run.stdout.toString('utf8');
}

describe('POST git/merge/preview on random merges', () => {
  let project: ClonedProject;
  const cases: Array<{ target: string; source: string }> = [];

  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'random'));
    const seeds = fc.sample(fc.nat(), { seed: SEED, numRuns: RUNS });
    const commits = seeds.flatMap((seed, i) => {
      const { base, target, source } = scenario(seed);
      const time = 1_700_000_000 + 10 * i;
      return [
        { files: base, parents: [project.root], time },
        { files: target, parents: [3 * i], time: time + 1 },
        { files: source, parents: [3 * i], time: time + 2 },
      ];
    });
    const oids = fastImport(project.dir, commits);
    const branches: Record<string, string> = {};
    seeds.forEach((_, i) => {
      branches[`target-${i}`] = oids[3 * i + 1];
      branches[`feature/source-${i}`] = oids[3 * i + 2];
      cases.push({ target: `target-${i}`, source: `feature/source-${i}` });
    });
    await pushBranches(project.dir, branches);
    for (const [name, oid] of Object.entries(branches)) git(['branch', '-f', name, oid], { cwd: project.dir });
  });

  it('lists what the merge changes, and for conflicts git stages and git merge-tree content', async () => {
    let clean = 0;
    let conflicted = 0;
    const kinds = new Set<string>();
    for (const { target, source } of cases) {
      const before = git(['rev-parse', target], { cwd: project.dir }).trim();
      const preview = await server.call('POST', `${project.base}/git/merge/preview`, { source, target });
      expect(preview.status, JSON.stringify(preview.body)).toBe(200);
      expect(preview.body.target_head).toBe(before);
      expect(preview.body.merge_base).toBe(git(['merge-base', target, source], { cwd: project.dir }).trim());

      // git's merge of the same branches, markers labelled with the same names.
      const fields = gitMergeTree(project.dir, target, source).split('\0');
      const gitTree = fields[0].trim();
      const stages = new Map<string, Map<number, { mode: string; oid: string }>>();
      for (const field of fields.slice(1)) {
        const stage = /^(\d+) ([0-9a-f]{40}) (\d)\t(.*)$/.exec(field);
        if (!stage) break;
        const byStage = stages.get(stage[4]) ?? new Map();
        byStage.set(Number(stage[3]), { mode: stage[1], oid: stage[2] });
        stages.set(stage[4], byStage);
      }

      const merged = await server.call('POST', `${project.base}/git/merge`, { source, target });
      if (preview.body.clean) {
        clean++;
        expect(merged.status, JSON.stringify(merged.body)).toBe(201);
        // The merge commit's tree is git merge-tree's, so what the merge changed is git's diff to it.
        const shown = await server.call('GET', `${project.base}/git/commits/${merged.body.merge.oid}?content=false`);
        expect(shown.body.commit.tree_oid).toBe(gitTree);
        expect(shown.body.commit.parent_oids[0]).toBe(before);
        const changed = git(['diff-tree', '-r', '-z', '--no-renames', '--name-status', before, gitTree], { cwd: project.dir }).split('\0').filter(Boolean);
        const expected: Array<{ path: string; status: string }> = [];
        for (let i = 0; i < changed.length; i += 2) expected.push({ path: changed[i + 1], status: { A: 'added', M: 'modified', D: 'deleted', T: 'modified' }[changed[i]]! });
        expect(preview.body.files).toEqual(expected);
        continue;
      }
      conflicted++;
      expect(merged.status).toBe(409);
      const reported = merged.body.error.details.conflicts as Array<{ path: string; kind: string }>;
      const previewConflicts = preview.body.files.filter((file: { status: string }) => file.status === 'conflicted');
      expect(previewConflicts.map((file: { path: string; conflict: { kind: string } }) => ({ path: file.path, kind: file.conflict.kind }))).toEqual(reported);
      for (const file of previewConflicts) {
        kinds.add(file.conflict.kind);
        const at = stages.get(file.path);
        const blob = (oid: string) => gitBytes(['cat-file', 'blob', oid], { cwd: project.dir });
        const encoding = file.conflict.encoding === 'base64' ? 'base64' : 'utf8';
        const decode = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value, encoding));
        if (at) {
          for (const [stage, name] of [[1, 'base'], [2, 'ours'], [3, 'theirs']] as const) {
            const expected = at.get(stage);
            expect(decode(file.conflict[name]), `${file.path} ${name}`).toEqual(expected ? blob(expected.oid) : undefined);
          }
          // git's merged file sits at the path in its tree (markers labelled with the branch names).
          const gitMerged = gitBytes(['cat-file', '-p', `${gitTree}:${file.path}`], { cwd: project.dir });
          expect(decode(file.conflict.merged), `${file.path} merged`).toEqual(gitMerged);
          if (file.conflict.kind === 'content') {
            expect(file.conflict.merged).toContain(`<<<<<<< ${target}\n`);
            expect(file.conflict.merged).toContain(`>>>>>>> ${source}\n`);
          }
        }
      }
      // (The server lives in this process: talk to it without blocking the event loop.)
      expect((await gitAsync(['ls-remote', 'origin', `refs/heads/${target}`], { cwd: project.dir })).stdout.split('\t')[0]).toBe(before);
    }
    expect(clean).toBeGreaterThan(5);
    expect(conflicted).toBeGreaterThan(5);
    expect([...kinds].sort()).toEqual(expect.arrayContaining(['binary', 'content', 'modify/delete']));
  });
});

describe('POST git/merge/preview cases', () => {
  let project: ClonedProject;
  let baseOid: string;
  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'cases'));
    [baseOid] = fastImport(project.dir, [{ files: new Map([['a.txt', text(['1', '2', '3'])], ['bin.dat', { mode: '100644', content: Buffer.from([0, 1, 2, 0xff]) }]]), parents: [project.root], time: 1_700_000_000 }]);
    await pushBranches(project.dir, { main: baseOid });
  });

  it('previews a fast-forward as the source changes, and up to date as nothing', async () => {
    const [ahead] = fastImport(project.dir, [{ files: new Map([['a.txt', text(['1', 'two', '3'])], ['new.txt', text(['n'])]]), parents: [baseOid], time: 1_700_000_100 }]);
    await pushBranches(project.dir, { ahead });
    const ff = await server.call('POST', `${project.base}/git/merge/preview`, { source: 'ahead' });
    expect(ff.body).toEqual({
      clean: true,
      merge_base: baseOid,
      target_head: baseOid,
      source_head: ahead,
      files: [
        { path: 'a.txt', status: 'modified' },
        { path: 'bin.dat', status: 'deleted' },
        { path: 'new.txt', status: 'added' },
      ],
    });
    const upToDate = await server.call('POST', `${project.base}/git/merge/preview`, { source: 'main', target: 'ahead' });
    expect(upToDate.body).toEqual({ clean: true, merge_base: baseOid, target_head: ahead, source_head: baseOid, files: [] });
  });

  it('gives all four sides in base64 when one is not UTF-8', async () => {
    const [ours, theirs] = fastImport(project.dir, [
      { files: new Map([['a.txt', text(['1', '2', '3'])], ['bin.dat', { mode: '100644', content: Buffer.from([0, 1, 2, 0xfe]) }]]), parents: [baseOid], time: 1_700_000_200 },
      { files: new Map([['a.txt', text(['1', '2', '3'])], ['bin.dat', { mode: '100644', content: Buffer.from([0, 1, 2, 0xfd]) }]]), parents: [baseOid], time: 1_700_000_300 },
    ]);
    await pushBranches(project.dir, { 'bin-ours': ours, 'bin-theirs': theirs });
    const preview = await server.call('POST', `${project.base}/git/merge/preview`, { source: 'bin-theirs', target: 'bin-ours' });
    expect(preview.body.clean).toBe(false);
    expect(preview.body.files).toEqual([
      {
        path: 'bin.dat',
        status: 'conflicted',
        conflict: { kind: 'binary', encoding: 'base64', base: Buffer.from([0, 1, 2, 0xff]).toString('base64'), ours: Buffer.from([0, 1, 2, 0xfe]).toString('base64'), theirs: Buffer.from([0, 1, 2, 0xfd]).toString('base64'), merged: Buffer.from([0, 1, 2, 0xfe]).toString('base64') },
      },
    ]);
  });

  it('refuses as the merge does, and writes nothing', async () => {
    const binary: HistoryFile = { mode: '100644', content: Buffer.from([0, 1, 2, 0xff]) };
    const [side] = fastImport(project.dir, [{ files: new Map([['a.txt', text(['1', '2', '3', '4'])], ['bin.dat', binary]]), parents: [baseOid], time: 1_700_000_400 }]);
    const [other] = fastImport(project.dir, [{ files: new Map([['a.txt', text(['1', '2', '3'])], ['bin.dat', binary], ['b.txt', text(['b'])]]), parents: [baseOid], time: 1_700_000_500 }]);
    await pushBranches(project.dir, { side, other });
    const version = async () => (await server.call('GET', project.base)).body.project.version as number;
    const before = await version();
    expect((await server.call('POST', `${project.base}/git/merge/preview`, { source: 'nope', target: 'side' })).status).toBe(404);
    expect((await server.call('POST', `${project.base}/git/merge/preview`, { source: 'side', target: 'nope' })).status).toBe(404);
    expect((await server.call('POST', `${project.base}/git/merge/preview`, { source: 'side' , target: 'other', resolutions: [] })).status).toBe(400);
    expect((await server.call('POST', `${project.base}/git/merge/preview`, { source: 'x'.repeat(256) })).status).toBe(400);
    expect((await server.call('POST', `${project.base}/git/merge/preview`, {})).status).toBe(400);
    const clean = await server.call('POST', `${project.base}/git/merge/preview`, { source: 'side', target: 'other' });
    expect(clean.body).toMatchObject({ clean: true, files: [{ path: 'a.txt', status: 'modified' }] });
    expect(await version()).toBe(before);

    await server.call('POST', `${project.base}/files/batch`, { branch: 'other', files: [{ path: 'dirty.txt', content: 'x' }] });
    const dirty = await server.call('POST', `${project.base}/git/merge/preview`, { source: 'side', target: 'other' });
    expect(dirty.status).toBe(409);
    expect(dirty.body.error).toMatchObject({ code: 'uncommitted_changes', details: { paths: ['dirty.txt'] } });
    await server.call('POST', `${project.base}/files/batch`, { branch: 'other', files: [{ path: 'a.txt', content: '1\n2\n3\n', locked: true }], deletes: ['dirty.txt'] });
    const locked = await server.call('POST', `${project.base}/git/merge/preview`, { source: 'side', target: 'other' });
    expect(locked.status).toBe(423);
    expect(locked.body.error).toMatchObject({ code: 'file_locked', details: { paths: ['a.txt'] } });
    expect((await server.call('POST', `${project.base}/git/merge`, { source: 'side', target: 'other' })).status).toBe(423);
  });
});
