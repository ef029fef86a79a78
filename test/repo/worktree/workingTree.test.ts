import { afterAll, describe, expect, it } from 'vitest';
import { writeFiles } from '../../../src/repo/writeFiles.js';
import { listFiles } from '../../../src/repo/listFiles.js';
import { readFile } from '../../../src/repo/readFile.js';
import { moveFile } from '../../../src/repo/moveFile.js';
import { deleteFile } from '../../../src/repo/deleteFile.js';
import { commit } from '../../../src/repo/commit.js';
import { log } from '../../../src/repo/log.js';
import { showCommit } from '../../../src/repo/showCommit.js';
import { restore } from '../../../src/repo/restore.js';
import { createBranch } from '../../../src/repo/createBranch.js';
import { listBranches } from '../../../src/repo/listBranches.js';
import { deleteBranch } from '../../../src/repo/deleteBranch.js';
import { exportToBareRepo } from '../../../src/repo/wire/exportToBareRepo.js';
import { mergeBranches } from '../../../src/repo/merge/mergeBranches.js';
import { TreehouseError } from '../../../src/errors.js';
import { encodeCommit } from '../../../src/git/commit.js';
import { oidToHex } from '../../../src/git/oid.js';
import { compareTreeNames, encodeTree } from '../../../src/git/tree.js';
import { TREE_DEPTH_MAX } from '../../../src/git/treeDepth.js';
import { git, gitBytes, initBareRepo, scratchDir } from '../../support/git.js';
import { planPack } from '../../../src/repo/wire/packObjects.js';
import { changedPaths } from '../../../src/repo/worktree/treeDiff.js';
import { WorkingTree } from '../../../src/repo/worktree/workingTree.js';
import { newTestRepo, openTestStore, testPeople, text } from '../../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());

async function codeOf(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    if (error instanceof TreehouseError) return error.code;
    throw error;
  }
  return 'ok';
}

async function paths(repo: Parameters<typeof listFiles>[0], branch = 'main') {
  return (await listFiles(repo, { branch })).map((f) => f.path);
}

describe('working tree operations', () => {
  it('writes, reads, lists, moves and deletes files and directories', async () => {
    const repo = await newTestRepo(opened.store);
    await writeFiles(repo, {
      branch: 'main',
      files: [
        { path: 'src/app.ts', content: 'export {}\n' },
        { path: 'src/lib/util.ts', content: 'x' },
        { path: 'README.md', content: '# hi' },
        { path: 'bin.dat', content: Buffer.from([0, 255, 1]).toString('base64'), encoding: 'base64' },
      ],
    });
    expect(await paths(repo)).toEqual(['README.md', 'bin.dat', 'src/app.ts', 'src/lib/util.ts']);
    expect(await readFile(repo, { branch: 'main', path: 'README.md' })).toMatchObject({ content: '# hi', size: 4, locked: false });
    expect(await readFile(repo, { branch: 'main', path: 'bin.dat' })).toMatchObject({ content: 'AP8B', encoding: 'base64', size: 3 });
    await moveFile(repo, { branch: 'main', from: 'src/lib', to: 'lib' });
    expect(await paths(repo)).toEqual(['README.md', 'bin.dat', 'lib/util.ts', 'src/app.ts']);
    await deleteFile(repo, { branch: 'main', path: 'src' });
    expect(await paths(repo)).toEqual(['README.md', 'bin.dat', 'lib/util.ts']);
    expect((await listFiles(repo, { branch: 'main', prefix: 'lib/' })).map((f) => f.path)).toEqual(['lib/util.ts']);
  });

  it('refuses bad batches whole', async () => {
    const repo = await newTestRepo(opened.store, [text('a/b.txt', 'b')]);
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [{ path: 'ok.txt', content: '1' }, { path: '../x', content: '' }] }))).toBe('invalid_request');
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [{ path: 'ok.txt', content: '1' }, { path: 'a', content: '' }] }))).toBe('path_conflict');
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [{ path: 'ok.txt', content: '1' }, { path: 'a/b.txt/c', content: '' }] }))).toBe('path_conflict');
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [{ path: 'x', content: '1' }, { path: 'x/y', content: '' }] }))).toBe('path_conflict');
    expect(await codeOf(writeFiles(repo, { branch: 'nope', files: [{ path: 'x', content: '1' }] }))).toBe('not_found');
    repo.limits.fileBytesMax = 3;
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [{ path: 'big', content: '1234' }] }))).toBe('payload_too_large');
    expect(await paths(repo)).toEqual(['a/b.txt']);
    // Deletes apply first, so a file may become a directory in one batch.
    await writeFiles(repo, { branch: 'main', deletes: ['a/b.txt'], files: [{ path: 'a/b.txt/c', content: 'c' }] });
    expect(await paths(repo)).toEqual(['a/b.txt/c']);
  });

  it('enforces locks until the same entry unlocks', async () => {
    const repo = await newTestRepo(opened.store);
    await writeFiles(repo, { branch: 'main', files: [{ path: 'l.txt', content: 'v1', locked: true }, { path: 'free.txt', content: '' }] });
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [{ path: 'l.txt', content: 'v2' }] }))).toBe('file_locked');
    expect(await codeOf(deleteFile(repo, { branch: 'main', path: 'l.txt' }))).toBe('file_locked');
    expect(await codeOf(moveFile(repo, { branch: 'main', from: 'l.txt', to: 'm.txt' }))).toBe('file_locked');
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [], deletes: ['l.txt'] }))).toBe('file_locked');
    await writeFiles(repo, { branch: 'main', files: [{ path: 'l.txt', content: 'v2', locked: false }] });
    expect(await readFile(repo, { branch: 'main', path: 'l.txt' })).toMatchObject({ content: 'v2', locked: false });
  });
});

describe('history', () => {
  it('commits, logs, shows, restores, branches; and git agrees with every object', async () => {
    const repo = await newTestRepo(opened.store, [text('index.html', '<h1>v1</h1>\n')]);
    const first = (await log(repo, { branch: 'main', limit: 50 })).commits[0];
    expect(first.message).toBe('Initial commit');
    await writeFiles(repo, { branch: 'main', files: [{ path: 'index.html', content: '<h1>v2</h1>\n' }, { path: 'a/b/c.txt', content: 'deep' }] });
    const second = await commit(repo, { branch: 'main', message: 'Second\n\nwith body', people: testPeople });
    expect(second.created).toBe(true);
    const again = await commit(repo, { branch: 'main', people: testPeople });
    expect(again).toEqual({ oid: second.oid, branch: 'main', created: false });
    expect(await codeOf(commit(repo, { branch: 'main', expectedHead: first.oid, people: testPeople }))).toBe('ref_changed');

    const shown = await showCommit(repo, { oid: second.oid.slice(0, 8), content: true });
    expect(shown.files).toEqual([
      { path: 'a/b/c.txt', size: 4, content: 'deep' },
      { path: 'index.html', size: 12, content: '<h1>v2</h1>\n' },
    ]);
    expect(shown.parent_oids).toEqual([first.oid]);
    expect(shown.author_id).toBe('key_test');

    await createBranch(repo, { name: 'feature/x', from: 'main' });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'dirty.txt', content: 'uncommitted' }] });
    expect(await paths(repo, 'feature/x')).toEqual(['a/b/c.txt', 'index.html']);
    expect(await codeOf(restore(repo, { branch: 'main', oid: first.oid, people: testPeople }))).toBe('uncommitted_changes');
    const restored = await restore(repo, { branch: 'main', oid: first.oid, force: true, people: testPeople });
    expect(restored.created).toBe(true);
    expect(await paths(repo)).toEqual(['index.html']);
    const history = await log(repo, { branch: 'main', limit: 2 });
    expect(history.commits.map((c) => c.message)).toEqual([`Restore to ${first.oid.slice(0, 7)}`, 'Second\n\nwith body']);
    const rest = await log(repo, { branch: 'main', limit: 2, cursor: history.next_cursor! });
    expect(rest.commits.map((c) => c.oid)).toEqual([first.oid]);
    expect(rest.next_cursor).toBeNull();

    expect((await listBranches(repo)).map((b) => b.name)).toEqual(['feature/x', 'main']);
    expect(await codeOf(createBranch(repo, { name: 'feature/x' }))).toBe('branch_exists');
    expect(await codeOf(createBranch(repo, { name: 'feature' }))).toBe('branch_exists');
    expect(await codeOf(createBranch(repo, { name: 'bad..name' }))).toBe('invalid_request');
    expect(await codeOf(deleteBranch(repo, { name: 'main' }))).toBe('protected_branch');
    await createBranch(repo, { name: 'old', from: second.oid });
    expect(await paths(repo, 'old')).toEqual(['a/b/c.txt', 'index.html']);
    await deleteBranch(repo, { name: 'old' });
    expect(await codeOf(() => listFiles(repo, { branch: 'old' }))).toBe('not_found');

    const bare = scratchDir();
    initBareRepo(bare.path);
    await exportToBareRepo(repo, bare.path);
    git(['fsck', '--strict', '--no-dangling'], { cwd: bare.path });
    const gitLog = git(['log', '--format=%H %P', 'main'], { cwd: bare.path }).trim().split('\n');
    const ours = (await log(repo, { branch: 'main', limit: 50 })).commits.map((c) => [c.oid, ...c.parent_oids].join(' '));
    expect(ours).toEqual(gitLog);
    expect(git(['ls-tree', '-r', '--name-only', 'feature/x'], { cwd: bare.path }).trim().split('\n')).toEqual(['a/b/c.txt', 'index.html']);
    bare.remove();
  });

  it('keeps sizes and modes of trees stored without sizes, through in-place changes, and git agrees', async () => {
    const repo = await newTestRepo(opened.store, [text('seed.txt', 'seed')]);
    const head = (await log(repo, { branch: 'main', limit: 1 })).commits[0].oid;
    // A history as a push or a merge leaves it: trees with no size annex, an executable and a symlink.
    const pushed = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      const blob = (content: string) => tx.putObject('blob', Buffer.from(content));
      const sub = tx.putObject('tree', encodeTree([{ name: 'y.txt', mode: '100644', oid: blob('twelve bytes') }]));
      const root = tx.putObject(
        'tree',
        encodeTree([
          { name: 'run.sh', mode: '100755', oid: blob('#!/bin/sh\n') },
          { name: 'link', mode: '120000', oid: blob('run.sh') },
          { name: 'x.txt', mode: '100644', oid: blob('hello') },
          { name: 'sub', mode: '40000', oid: sub },
        ]),
      );
      const signature = { name: 'Pusher', email: 'p@example.invalid', timestamp: 1_700_000_000, timezone: '+0000' };
      return tx.putObject('commit', encodeCommit({ tree: root, parents: [Buffer.from(head, 'hex')], author: signature, committer: signature, extraHeaders: [], message: 'pushed\n' }));
    });
    await restore(repo, { branch: 'main', oid: oidToHex(pushed), people: testPeople });
    const sizes = async () => Object.fromEntries((await listFiles(repo, { branch: 'main' })).map((f) => [f.path, f.size]));
    expect(await sizes()).toEqual({ link: 6, 'run.sh': 10, 'sub/y.txt': 12, 'x.txt': 5 });

    // Same names: the directories are patched in place (new blob, new size, subtree ids).
    await writeFiles(repo, { branch: 'main', files: [{ path: 'x.txt', content: 'ten bytes!' }, { path: 'sub/y.txt', content: '' }] });
    expect(await sizes()).toEqual({ link: 6, 'run.sh': 10, 'sub/y.txt': 0, 'x.txt': 10 });
    // New names: the directory is re-encoded, in git's order.
    await writeFiles(repo, { branch: 'main', files: [{ path: 'sub/a.txt', content: 'a' }, { path: 'run', content: 'r' }] });
    await moveFile(repo, { branch: 'main', from: 'sub', to: 'sub2' });
    await deleteFile(repo, { branch: 'main', path: 'link' });
    expect(await sizes()).toEqual({ run: 1, 'run.sh': 10, 'sub2/a.txt': 1, 'sub2/y.txt': 0, 'x.txt': 10 });
    await commit(repo, { branch: 'main', message: 'edits', people: testPeople });

    const bare = scratchDir();
    try {
      initBareRepo(bare.path);
      await exportToBareRepo(repo, bare.path);
      git(['fsck', '--strict', '--no-dangling'], { cwd: bare.path });
      const listed = git(['ls-tree', '-r', '-l', 'main'], { cwd: bare.path }).trim().split('\n');
      expect(listed.map((line) => line.replace(/ [0-9a-f]{40} +/, ' ').replace('\t', ' '))).toEqual([
        '100644 blob 1 run',
        '100755 blob 10 run.sh',
        '100644 blob 1 sub2/a.txt',
        '100644 blob 0 sub2/y.txt',
        '100644 blob 10 x.txt',
      ]);
    } finally {
      bare.remove();
    }
  });

  it('adds and removes names in a stored directory in place, one request at a time, in git order: git agrees', async () => {
    // Names whose order depends on git's rule that a directory sorts as if followed by '/'.
    const tricky = ['a', 'x0', 'a-b', 'x/1', 'a.b', 'x-y', 'a0', 'x.y', 'b/c', 'b.c', 'é', 'Z', '_', 'ab/y', 'z z', 'dir/deep/f'];
    const repo = await newTestRepo(opened.store, [text('m.txt', 'middle')]);
    await commit(repo, { branch: 'main', message: 'base', people: testPeople });
    const expected = new Map<string, string>([['m.txt', 'middle']]);
    // Each write and delete is its own request: the directory is read from its stored tree each time.
    for (const [i, name] of tricky.entries()) {
      await writeFiles(repo, { branch: 'main', files: [{ path: name, content: `${i}` }] });
      expected.set(name, `${i}`);
      if (i % 4 === 3) {
        await commit(repo, { branch: 'main', message: `step ${i}`, people: testPeople });
      }
    }
    for (const name of ['a.b', 'Z', 'b/c', 'm.txt']) {
      await deleteFile(repo, { branch: 'main', path: name });
      expected.delete(name);
    }
    // A name that is new after a delete in the same directory, and an edit in place beside them.
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a1', content: 'new' }, { path: 'a', content: 'edited' }] });
    expected.set('a1', 'new');
    expected.set('a', 'edited');
    await commit(repo, { branch: 'main', message: 'final', people: testPeople });
    expect(await paths(repo)).toEqual([...expected.keys()].sort((x, y) => compareTreeNames(Buffer.from(x), false, Buffer.from(y), false)));

    const bare = scratchDir();
    try {
      initBareRepo(bare.path);
      await exportToBareRepo(repo, bare.path);
      git(['fsck', '--strict', '--no-dangling'], { cwd: bare.path });
      const listed = git(['ls-tree', '-r', '--name-only', '-z', 'main'], { cwd: bare.path }).split('\0').filter(Boolean);
      expect(new Set(listed)).toEqual(new Set(expected.keys()));
      for (const [name, content] of expected) expect(git(['show', `main:${name}`], { cwd: bare.path })).toBe(content);
    } finally {
      bare.remove();
    }
  });

  it('shows every commit in log as show does: merges, other authors, multi-line messages', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'a')]);
    await createBranch(repo, { name: 'side' });
    await writeFiles(repo, { branch: 'side', files: [{ path: 's.txt', content: 's' }] });
    const outsider = { name: 'Out Sider', email: 'out@example.com' };
    await commit(repo, { branch: 'side', message: 'Side\n\nwith a body\n', people: { author: outsider, committer: outsider } });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'm.txt', content: 'm' }] });
    await commit(repo, { branch: 'main', message: 'Main', people: testPeople });
    const merged = await mergeBranches(repo, { source: 'side', target: 'main', people: testPeople });
    expect(merged.created).toBe(true);
    const commits = (await log(repo, { branch: 'main', limit: 10 })).commits;
    expect(commits).toHaveLength(4);
    expect(commits[0].parent_oids).toHaveLength(2);
    for (const shown of commits) {
      const { oid, message, author_id, committed_at, parent_oids } = await showCommit(repo, { oid: shown.oid, content: false });
      expect(shown).toEqual({ oid, message, author_id, committed_at, parent_oids });
    }
    expect(commits.map((c) => c.author_id)).toEqual(['key_test', 'key_test', null, 'key_test']);
  });
});

describe('names that are not UTF-8', () => {
  /** A tree body from raw name bytes, in git's order (encodeTree takes decoded names). */
  function rawTree(entries: Array<{ mode: string; name: Buffer; oid: Buffer }>): Buffer {
    const sorted = [...entries].sort((a, b) => compareTreeNames(a.name, a.mode === '40000', b.name, b.mode === '40000'));
    return Buffer.concat(sorted.flatMap((entry) => [Buffer.from(`${entry.mode} `), entry.name, Buffer.of(0), entry.oid]));
  }
  const latin1 = (name: string) => Buffer.from(name, 'latin1');
  /** "café" in UTF-8 followed by a lone 0xff: valid and invalid bytes in one name. */
  const MIXED = Buffer.concat([Buffer.from('caf\u00e9', 'utf8'), Buffer.of(0xff), Buffer.from('.txt')]);

  function gitPaths(bare: string, treeish: string): string[] {
    return gitBytes(['ls-tree', '-r', '-z', '--name-only', treeish], { cwd: bare })
      .toString('latin1')
      .split('\0')
      .filter((path) => path !== '');
  }

  it('keep their bytes through writes in the same directory, locks, move, delete, commit, merge and restore', async () => {
    const repo = await newTestRepo(opened.store, [text('seed.txt', 'seed')]);
    const head = (await log(repo, { branch: 'main', limit: 1 })).commits[0].oid;
    // A history as a push from git leaves it: names that are bytes, not UTF-8.
    const pushed = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      const blob = (content: string) => tx.putObject('blob', Buffer.from(content));
      const d = tx.putObject(
        'tree',
        rawTree([
          { mode: '100644', name: latin1('x\xe9.txt'), oid: blob('e9') },
          { mode: '100644', name: latin1('x\xe8.txt'), oid: blob('e8') },
          { mode: '100644', name: MIXED, oid: blob('mixed') },
        ]),
      );
      const root = tx.putObject(
        'tree',
        rawTree([
          { mode: '100644', name: latin1('caf\xe9.txt'), oid: blob('latin-1 cafe') },
          { mode: '100644', name: latin1('seed.txt'), oid: blob('seed') },
          { mode: '40000', name: latin1('d'), oid: d },
        ]),
      );
      const signature = { name: 'Pusher', email: 'p@example.invalid', timestamp: 1_700_000_000, timezone: '+0000' };
      return tx.putObject('commit', encodeCommit({ tree: root, parents: [Buffer.from(head, 'hex')], author: signature, committer: signature, extraHeaders: [], message: 'pushed\n' }));
    });
    await restore(repo, { branch: 'main', oid: oidToHex(pushed), people: testPeople });
    const mixed = `d/caf\u00e9\udcff.txt`;
    expect((await paths(repo)).sort()).toEqual(['caf\udce9.txt', mixed, 'd/x\udce8.txt', 'd/x\udce9.txt', 'seed.txt'].sort());
    expect((await readFile(repo, { branch: 'main', path: 'caf\udce9.txt' })).content).toBe('latin-1 cafe');
    expect((await readFile(repo, { branch: 'main', path: mixed })).content).toBe('mixed');

    // A write beside them re-encodes the directory: both names must survive, with their bytes.
    await writeFiles(repo, { branch: 'main', files: [{ path: 'd/new.txt', content: 'new' }, { path: 'd/x\udce9.txt', content: 'e9 v2', locked: true }] });
    expect(await readFile(repo, { branch: 'main', path: 'd/x\udce9.txt' })).toMatchObject({ content: 'e9 v2', locked: true });
    expect((await readFile(repo, { branch: 'main', path: 'd/x\udce8.txt' })).content).toBe('e8');
    expect(await codeOf(writeFiles(repo, { branch: 'main', files: [{ path: 'd/x\udce9.txt', content: 'v3' }] }))).toBe('file_locked');
    await commit(repo, { branch: 'main', message: 'beside', people: testPeople });

    await createBranch(repo, { name: 'side' });
    await moveFile(repo, { branch: 'side', from: 'd/x\udce8.txt', to: 'e/x\udce8.txt' });
    await moveFile(repo, { branch: 'side', from: 'caf\udce9.txt', to: 'f/caf\udce9.txt' });
    await commit(repo, { branch: 'side', message: 'moves', people: testPeople });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'd/other.txt', content: 'other' }] });
    await deleteFile(repo, { branch: 'main', path: mixed });
    await commit(repo, { branch: 'main', message: 'main side', people: testPeople });
    const merged = await mergeBranches(repo, { source: 'side', target: 'main', people: testPeople });
    expect(merged.created).toBe(true);
    expect((await paths(repo)).sort()).toEqual(['d/new.txt', 'd/other.txt', 'd/x\udce9.txt', 'e/x\udce8.txt', 'f/caf\udce9.txt', 'seed.txt'].sort());
    expect((await readFile(repo, { branch: 'main', path: 'd/x\udce9.txt' })).locked).toBe(true);

    await createBranch(repo, { name: 'restored' });
    await restore(repo, { branch: 'restored', oid: oidToHex(pushed), people: testPeople });

    const bare = scratchDir();
    try {
      initBareRepo(bare.path);
      await exportToBareRepo(repo, bare.path);
      git(['fsck', '--strict', '--no-dangling'], { cwd: bare.path });
      expect(gitPaths(bare.path, 'main').sort()).toEqual(['d/new.txt', 'd/other.txt', 'd/x\xe9.txt', 'e/x\xe8.txt', 'f/caf\xe9.txt', 'seed.txt'].sort());
      const restoredPaths = ['caf\xe9.txt', `d/${MIXED.toString('latin1')}`, 'd/x\xe8.txt', 'd/x\xe9.txt', 'seed.txt'];
      expect(gitPaths(bare.path, 'restored').sort()).toEqual(restoredPaths.sort());
      expect(git(['rev-parse', 'restored^{tree}'], { cwd: bare.path }).trim()).toBe((await showCommit(repo, { oid: oidToHex(pushed), content: false })).tree_oid);
    } finally {
      bare.remove();
    }
  });
});

describe('deep trees', () => {
  it('are walked without recursion: list, write at the bottom, hash, diff, show, pack and merge a tree as deep as the limit', async () => {
    const repo = await newTestRepo(opened.store, [text('top.txt', 'top')]);
    // Directories 4,095 deep, so the files at the bottom have TREE_DEPTH_MAX components.
    const depth = TREE_DEPTH_MAX - 1;
    const head = (await log(repo, { branch: 'main', limit: 1 })).commits[0].oid;
    const bottom = Array(depth).fill('a').join('/');
    const deep = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      let tree = tx.putObject('tree', encodeTree([{ name: 'f.txt', mode: '100644', oid: tx.putObject('blob', Buffer.from('bottom')) }]));
      for (let level = 1; level < depth; level++) tree = tx.putObject('tree', encodeTree([{ name: 'a', mode: '40000', oid: tree }]));
      const root = tx.putObject('tree', encodeTree([{ name: 'a', mode: '40000', oid: tree }]));
      const signature = { name: 'Old', email: 'old@example.invalid', timestamp: 1_700_000_000, timezone: '+0000' };
      return tx.putObject('commit', encodeCommit({ tree: root, parents: [Buffer.from(head, 'hex')], author: signature, committer: signature, extraHeaders: [], message: 'deep\n' }));
    });
    await restore(repo, { branch: 'main', oid: oidToHex(deep), people: testPeople });
    expect(await paths(repo)).toEqual([`${bottom}/f.txt`]);
    expect((await showCommit(repo, { oid: oidToHex(deep), content: false })).files.map((f) => f.path)).toEqual([`${bottom}/f.txt`]);

    // A change at the bottom reaches every directory on the way down and is hashed back up.
    await repo.store.write(async (store) => {
      const tree = await WorkingTree.open(store.project(repo.project), 'main');
      await tree.load([`${bottom}/g.txt`]);
      tree.setFile(`${bottom}/g.txt`, { oid: store.project(repo.project).putObject('blob', Buffer.from('g')), size: 1, locked: false });
      tree.save();
    });
    expect(await paths(repo)).toEqual([`${bottom}/f.txt`, `${bottom}/g.txt`]);
    const committed = await commit(repo, { branch: 'main', message: 'bottom', people: testPeople });
    const changed = await repo.store.read(async (store) => {
      const tx = store.project(repo.project);
      const [before, after] = await tx.getCommitInfos([deep, Buffer.from(committed.oid, 'hex')]);
      return changedPaths(tx, before!.tree, after!.tree);
    });
    expect(changed).toEqual([`${bottom}/g.txt`]);
    const parent = (await log(repo, { branch: 'main', limit: 2 })).commits[1].oid;
    const plan = await repo.store.read(async (store) =>
      planPack(store.project(repo.project), { wants: [Buffer.from(committed.oid, 'hex')], haves: [Buffer.from(parent, 'hex')] }),
    );
    // The new commit, one new tree per level plus the root, and the new blob.
    expect([...plan.objects].filter((object) => object.type === 'tree')).toHaveLength(depth + 1);
    expect([...plan.objects].filter((object) => object.type === 'blob')).toHaveLength(1);

    // Both sides change the bottom directory: the merge walks all the way down and back.
    await createBranch(repo, { name: 'side' });
    const writeAtBottom = (branch: string, name: string) =>
      repo.store.write(async (store) => {
        const tree = await WorkingTree.open(store.project(repo.project), branch);
        await tree.load([`${bottom}/${name}`]);
        tree.setFile(`${bottom}/${name}`, { oid: store.project(repo.project).putObject('blob', Buffer.from(name)), size: name.length, locked: false });
        tree.save();
      });
    await writeAtBottom('side', 's.txt');
    await commit(repo, { branch: 'side', message: 'side', people: testPeople });
    await writeAtBottom('main', 'm.txt');
    await commit(repo, { branch: 'main', message: 'main', people: testPeople });
    expect((await mergeBranches(repo, { source: 'side', target: 'main', people: testPeople })).created).toBe(true);
    expect(await paths(repo)).toEqual(['f.txt', 'g.txt', 'm.txt', 's.txt'].map((name) => `${bottom}/${name}`));
  });
});
