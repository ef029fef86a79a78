/**
 * The wire code on a real LMDB store, against the git CLI, without the HTTP layer: clones and
 * fetches answered by upload-pack (whole, shallow, thin) are indexed by git and `git fsck --strict`
 * clean with exactly the objects `git rev-list --objects` lists; a push of git's own thin pack goes
 * through receive-pack and comes back out; a seed stored by importHistory clones as it came in; and
 * exportToBareRepo writes a repository git accepts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkReceivedPack } from '../../../src/git/packCheck.js';
import { oidFromHex, oidToHex, type Oid } from '../../../src/git/oid.js';
import { branchRef } from '../../../src/git/refname.js';
import type { FetchRequest } from '../../../src/git/smartProtocol.js';
import { DEFAULT_REPO_LIMITS, inReadTx, inWriteTx, type Repo } from '../../../src/repo/repo.js';
import { exportToBareRepo } from '../../../src/repo/wire/exportToBareRepo.js';
import { prepareHistory, startMainAt, storeHistoryObjects } from '../../../src/repo/wire/importHistory.js';
import { planPack } from '../../../src/repo/wire/packObjects.js';
import { receivePack } from '../../../src/repo/wire/receivePack.js';
import { uploadPackV0 } from '../../../src/repo/wire/uploadPack.js';
import { git, gitBytes, scratchDir } from '../../support/git.js';
import { newTestRepo, openTestStore, text } from '../../support/store.js';

const opened = openTestStore();
const work = scratchDir('treehouse-wire-');
afterAll(async () => {
  await opened.close();
  work.remove();
});

let nextDir = 0;

function fetchRequest(wants: Oid[], options: Partial<FetchRequest> = {}): FetchRequest {
  return {
    wants,
    haves: [],
    clientShallows: [],
    depth: null,
    deepenRelative: false,
    deepenSince: null,
    deepenNot: [],
    filter: null,
    done: true,
    negotiates: true,
    capabilities: new Set(['ofs-delta']),
    ...options,
  };
}

/** The pack of a v0 answer without side-band (what follows the ACK/NAK line), and the answer's text before it. */
async function fetchPack(repo: Repo, request: FetchRequest): Promise<{ pack: Buffer; preamble: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of uploadPackV0(repo, request)) chunks.push(chunk);
  const answer = Buffer.concat(chunks);
  const at = answer.indexOf('PACK');
  expect(at).toBeGreaterThan(0);
  return { pack: answer.subarray(at), preamble: answer.toString('latin1', 0, at) };
}

/** A non-bare git repository holding `pack`'s objects (completed from its own objects when thin), with main at `head`. */
function gitRepoWith(pack: Buffer, head: Oid, dir = join(work.path, `repo-${nextDir++}`)): string {
  git(['init', '-q', '--initial-branch=main', dir]);
  addPack(dir, pack);
  git(['update-ref', 'refs/heads/main', oidToHex(head)], { cwd: dir });
  return dir;
}

function addPack(dir: string, pack: Buffer): void {
  git(['index-pack', '--stdin', '--fix-thin', '--strict'], { cwd: dir, input: pack });
}

/** Indexes `pack` into the objects of `dir` and lists the ids it holds. */
function objectsOfPack(dir: string, pack: Buffer): string[] {
  const path = join(dir, '.git', 'objects', 'pack', 'pack-fetched.pack');
  writeFileSync(path, pack);
  git(['index-pack', path], { cwd: dir });
  return git(['verify-pack', '-v', path.replace(/\.pack$/, '.idx')], { cwd: dir })
    .split('\n')
    .filter((line) => /^[0-9a-f]{40} /.test(line))
    .map((line) => line.slice(0, 40))
    .sort();
}

function revListObjects(dir: string, args: string[]): string[] {
  return git(['rev-list', '--objects', ...args], { cwd: dir })
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(0, 40))
    .sort();
}

async function headOf(repo: Repo, branch = 'main'): Promise<Oid> {
  return (await inReadTx(repo, (tx) => tx.getRef(branchRef(branch))))!;
}

/** Many files in nested directories, some large enough for git to delta them when they change. */
function files(count: number): Array<{ path: string; bytes: Buffer }> {
  return Array.from({ length: count }, (_, i) => {
    const body = i % 50 === 0 ? `${'line of a longer file\n'.repeat(400)}${i}\n` : `file ${i}\n`;
    return text(`d${i % 13}/e${i % 5}/f${i}.txt`, body);
  });
}

/** Commits `count` changes on top of the checkout in `dir`, each editing large files a little; returns the new head. */
function commitChanges(dir: string, count: number): string {
  for (let n = 0; n < count; n++) {
    for (let i = 0; i < 400; i += 50) {
      const path = join(dir, `d${i % 13}/e${i % 5}/f${i}.txt`);
      writeFileSync(path, `${'line of a longer file\n'.repeat(400)}${i} edit ${n}\n`);
    }
    writeFileSync(join(dir, `new-${n}.txt`), `new file ${n}\n`);
    git(['add', '-A'], { cwd: dir });
    git(['commit', '-q', '-m', `change ${n}`], { cwd: dir });
  }
  return git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
}

describe('wire round trip against git', () => {
  it('clones, takes a thin push of git history, then serves full, shallow and thin fetches that git accepts', async () => {
    const repo = await newTestRepo(opened.store, files(400));
    const first = await headOf(repo);
    const clone = await fetchPack(repo, fetchRequest([first]));
    const dir = gitRepoWith(clone.pack, first);
    git(['checkout', '-q', '-f', 'main'], { cwd: dir });
    git(['fsck', '--strict', '--no-progress'], { cwd: dir });
    expect(git(['ls-files'], { cwd: dir }).split('\n').filter(Boolean)).toHaveLength(400);

    // git's own thin pack of five commits, with deltas against what the store holds.
    const pushedHead = commitChanges(dir, 5);
    const thinPack = gitBytes(['pack-objects', '--revs', '--thin', '--stdout', '-q'], { cwd: dir, input: `${pushedHead}\n^${oidToHex(first)}\n` });
    const pushed = await receivePack(repo, {
      commands: [{ old: first, new: oidFromHex(pushedHead), ref: 'refs/heads/main' }],
      pack: thinPack,
      atomic: false,
    });
    // The commits' object lists are stored after the answer.
    const { indexed, ...answer } = pushed;
    await indexed;
    expect(answer).toEqual({ unpackError: null, results: [{ ref: 'refs/heads/main', ok: true }], updatedBranches: ['main'], hints: [] });
    const head = await headOf(repo);
    expect(oidToHex(head)).toBe(pushedHead);

    // A full clone: exactly git's objects, and a repository git finds clean.
    const full = await fetchPack(repo, fetchRequest([head]));
    const fullDir = join(work.path, `repo-${nextDir++}`);
    git(['init', '-q', '--initial-branch=main', fullDir]);
    expect(objectsOfPack(fullDir, full.pack)).toEqual(revListObjects(dir, [pushedHead]));
    git(['update-ref', 'refs/heads/main', pushedHead], { cwd: fullDir });
    git(['fsck', '--strict', '--no-progress'], { cwd: fullDir });

    // A shallow clone of depth 2 lists its boundary and carries the trees of two commits only.
    const shallow = await fetchPack(repo, fetchRequest([head], { depth: 2 }));
    const parent = git(['rev-parse', `${pushedHead}~1`], { cwd: dir }).trim();
    expect(shallow.preamble).toContain(`shallow ${parent}`);
    const shallowDir = join(work.path, `repo-${nextDir++}`);
    git(['init', '-q', '--initial-branch=main', shallowDir]);
    expect(objectsOfPack(shallowDir, shallow.pack)).toEqual([...new Set([...revListObjects(dir, ['-n', '2', pushedHead]), ...revListObjects(dir, ['--no-walk', parent])])].sort());

    // A thin fetch from the first commit: only the new objects, deltas against what the client holds included.
    const thin = await fetchPack(repo, fetchRequest([head], { haves: [first], capabilities: new Set(['ofs-delta', 'thin-pack']) }));
    const fetchDir = gitRepoWith(clone.pack, first);
    addPack(fetchDir, thin.pack);
    git(['update-ref', 'refs/heads/main', pushedHead], { cwd: fetchDir });
    git(['fsck', '--strict', '--no-progress'], { cwd: fetchDir });
    const planned = await inReadTx(repo, (tx) => planPack(tx, { wants: [head], haves: [first] }));
    expect(planned.objects.length).toBe(revListObjects(dir, [pushedHead, `^${oidToHex(first)}`]).length);

    // The store's objects as loose objects: git checks them too.
    const bare = join(work.path, `bare-${nextDir++}`);
    git(['init', '-q', '--bare', bare]);
    const exported = await exportToBareRepo(repo, bare);
    expect(exported.refs).toBe(1);
    expect(exported.objects).toBe(revListObjects(dir, [pushedHead]).length);
    git(['fsck', '--strict', '--no-progress'], { cwd: bare });
  });

  it('clones files that fill several of the pack stream\'s reads, after a push that edits them as deltas', async () => {
    // Six files of a megabyte each among small ones: more bytes than one read of the stream takes.
    const large = (i: number, edit = '') => {
      let state = i + 1;
      const lines: string[] = [];
      for (let n = 0; n < 80_000; n++) {
        state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
        lines.push(`${n} ${state.toString(36)}${n === 40_000 ? edit : ''}`);
      }
      return Buffer.from(`${lines.join('\n')}\n`);
    };
    const seed = [...files(200), ...Array.from({ length: 6 }, (_, i) => ({ path: `big/${i}.txt`, bytes: large(i) }))];
    const repo = await newTestRepo(opened.store, seed);
    const first = await headOf(repo);
    const dir = gitRepoWith((await fetchPack(repo, fetchRequest([first]))).pack, first);
    git(['checkout', '-q', '-f', 'main'], { cwd: dir });
    for (let i = 0; i < 6; i++) writeFileSync(join(dir, `big/${i}.txt`), large(i, ' edited'));
    git(['commit', '-q', '-am', 'edit the large files'], { cwd: dir });
    const pushedHead = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
    const pack = gitBytes(['pack-objects', '--revs', '--thin', '--stdout', '-q'], { cwd: dir, input: `${pushedHead}\n^${oidToHex(first)}\n` });
    const pushed = await receivePack(repo, {
      commands: [{ old: first, new: oidFromHex(pushedHead), ref: 'refs/heads/main' }],
      pack,
      atomic: false,
    });
    expect(pushed.results).toEqual([{ ref: 'refs/heads/main', ok: true }]);
    for (const request of [fetchRequest([oidFromHex(pushedHead)]), fetchRequest([oidFromHex(pushedHead)], { capabilities: new Set() })]) {
      const clone = await fetchPack(repo, request);
      const cloneDir = join(work.path, `repo-${nextDir++}`);
      git(['init', '-q', '--initial-branch=main', cloneDir]);
      expect(objectsOfPack(cloneDir, clone.pack)).toEqual(revListObjects(dir, [pushedHead]));
      git(['update-ref', 'refs/heads/main', pushedHead], { cwd: cloneDir });
      git(['fsck', '--strict', '--no-progress'], { cwd: cloneDir });
    }
  });

  it('stores a seed in several writes and clones it as git holds it', async () => {
    const source = join(work.path, `seed-${nextDir++}`);
    git(['init', '-q', '--initial-branch=main', source]);
    for (const file of files(300)) {
      const path = join(source, file.path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, file.bytes);
    }
    git(['add', '-A'], { cwd: source });
    git(['commit', '-q', '-m', 'seed'], { cwd: source });
    const tip = commitChanges(source, 4);
    const pack = gitBytes(['pack-objects', '--revs', '--stdout', '-q'], { cwd: source, input: `${tip}\n` });
    const checked = checkReceivedPack(pack, {}, { object: () => undefined, has: () => false });
    if (!checked.ok) throw new Error(checked.message);
    const history = await prepareHistory(checked.objects, oidFromHex(tip), { checked: true });
    // A number of its own, as a seed's objects are stored before its project exists.
    const repo: Repo = { store: opened.store.async, project: 90_000, limits: { ...DEFAULT_REPO_LIMITS } };
    await storeHistoryObjects(repo, history);
    await inWriteTx(repo, (tx) => startMainAt(tx, history));
    expect(oidToHex(await headOf(repo))).toBe(tip);
    const clone = await fetchPack(repo, fetchRequest([oidFromHex(tip)]));
    const dir = join(work.path, `repo-${nextDir++}`);
    git(['init', '-q', '--initial-branch=main', dir]);
    expect(objectsOfPack(dir, clone.pack)).toEqual(revListObjects(source, [tip]));
    git(['update-ref', 'refs/heads/main', tip], { cwd: dir });
    git(['fsck', '--strict', '--no-progress'], { cwd: dir });
    // Main's working tree is the tip's tree.
    const tree = await inReadTx(repo, (tx) => tx.getWorkingTree('main'));
    expect(oidToHex(tree!.tree)).toBe(git(['rev-parse', `${tip}^{tree}`], { cwd: source }).trim());
  });
});
