/**
 * Our object ids against the real git CLI. For content made through the repo verbs, git builds the
 * same objects on its own (`hash-object -w`, `mktree`, `commit-tree`) from the content we meant to
 * store, and the ids must be equal; then the project is exported and git checks and reads it back.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { decodeCommit, formatSignature, type Commit } from '../../src/git/commit.js';
import { oidToHex, oidFromHex } from '../../src/git/oid.js';
import { decodeTree, type FileMode } from '../../src/git/tree.js';
import { commit } from '../../src/repo/commit.js';
import { deleteFile } from '../../src/repo/deleteFile.js';
import { exportToBareRepo } from '../../src/repo/wire/exportToBareRepo.js';
import { listFiles } from '../../src/repo/listFiles.js';
import { log } from '../../src/repo/log.js';
import { moveFile } from '../../src/repo/moveFile.js';
import { readFile } from '../../src/repo/readFile.js';
import type { Repo } from '../../src/repo/repo.js';
import { showCommit } from '../../src/repo/showCommit.js';
import { writeFiles } from '../../src/repo/writeFiles.js';
import { git, gitBytes, initBareRepo, scratchDir } from '../support/git.js';
import { newTestRepo, openTestStore, testPeople } from '../support/store.js';

const opened = openTestStore();
const gitDir = scratchDir('treehouse-interop-');
initBareRepo(gitDir.path);
afterAll(async () => {
  await opened.close();
  gitDir.remove();
});

/** A file as we mean it to be stored: what git is given to build its own objects. */
interface IntendedFile {
  path: string;
  mode: FileMode;
  bytes: Buffer;
}

const NON_UTF8 = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x0a]);

/**
 * Names chosen to catch ordering mistakes: git sorts a directory as if its name ended in "/", so
 * "a-b" < "a.b" < "a/" < "a0" while JavaScript puts "a" first; UTF-8 byte order puts U+1F600 after
 * U+FF61 while UTF-16 order puts it before; "é" precomposed and decomposed are different names.
 */
const SEED: IntendedFile[] = [
  { path: 'empty', mode: '100644', bytes: Buffer.alloc(0) },
  { path: 'bin/run.sh', mode: '100755', bytes: Buffer.from('#!/bin/sh\necho hi\n') },
  { path: 'link', mode: '120000', bytes: Buffer.from('bin/run.sh') },
  { path: 'binary.dat', mode: '100644', bytes: NON_UTF8 },
  { path: 'a-b', mode: '100644', bytes: Buffer.from('dash\n') },
  { path: 'a.b', mode: '100644', bytes: Buffer.from('dot\n') },
  { path: 'a/x', mode: '100644', bytes: Buffer.from('in a directory\n') },
  { path: 'a/a-b/deep', mode: '100644', bytes: Buffer.from('deeper\n') },
  { path: 'a0', mode: '100644', bytes: Buffer.from('zero\n') },
  { path: 'ab', mode: '100644', bytes: Buffer.from('ab\n') },
  { path: 'ab-', mode: '100644', bytes: Buffer.from('ab-\n') },
  { path: 'ab.d/f', mode: '100644', bytes: Buffer.from('ab.d\n') },
  { path: 'caf\u00e9', mode: '100644', bytes: Buffer.from('precomposed\n') },
  { path: 'cafe\u0301', mode: '100644', bytes: Buffer.from('decomposed\n') },
  { path: '\uff61', mode: '100644', bytes: Buffer.from('halfwidth\n') },
  { path: '\u{1f600}/smile.txt', mode: '100644', bytes: Buffer.from('emoji directory\n') },
  { path: 'ünïcödé/文件.txt', mode: '100644', bytes: Buffer.from('中文内容\n') },
];

function byPath(files: IntendedFile[]): Map<string, IntendedFile> {
  return new Map(files.map((file) => [file.path, file]));
}

function gitHashBlob(bytes: Buffer): string {
  return git(['hash-object', '-w', '-t', 'blob', '--stdin'], { cwd: gitDir.path, input: bytes }).trim();
}

/** The root tree id git's `mktree` gives for these files, built bottom-up one directory at a time. */
function gitTreeFor(files: IntendedFile[]): string {
  const build = (dir: string): string => {
    const prefix = dir === '' ? '' : `${dir}/`;
    const lines: string[] = [];
    const subdirectories = new Set<string>();
    for (const file of files) {
      if (!file.path.startsWith(prefix)) continue;
      const rest = file.path.slice(prefix.length);
      const slash = rest.indexOf('/');
      if (slash < 0) lines.push(`${file.mode} blob ${gitHashBlob(file.bytes)}\t${rest}\0`);
      else subdirectories.add(rest.slice(0, slash));
    }
    for (const name of subdirectories) lines.push(`040000 tree ${build(prefix + name)}\t${name}\0`);
    return git(['mktree', '-z'], { cwd: gitDir.path, input: Buffer.from(lines.join(''), 'utf8') }).trim();
  };
  return build('');
}

/** The commit id git's `commit-tree` gives for our commit's people and times and the intended content. */
function gitCommitFor(ours: Commit, tree: string, parents: string[], message: string): string {
  const env = {
    GIT_AUTHOR_NAME: ours.author.name,
    GIT_AUTHOR_EMAIL: ours.author.email,
    GIT_AUTHOR_DATE: `@${ours.author.timestamp} ${ours.author.timezone}`,
    GIT_COMMITTER_NAME: ours.committer.name,
    GIT_COMMITTER_EMAIL: ours.committer.email,
    GIT_COMMITTER_DATE: `@${ours.committer.timestamp} ${ours.committer.timezone}`,
  };
  const args = ['commit-tree', tree, ...parents.flatMap((parent) => ['-p', parent]), '-F', '-'];
  return git(args, { cwd: gitDir.path, input: message, env }).trim();
}

async function storedCommit(repo: Repo, oid: string): Promise<Commit> {
  return decodeCommit((await storedObject(repo, oid))!.body);
}

function storedObject(repo: Repo, oid: string) {
  return repo.store.read((tx) => tx.project(repo.project).getObject(oidFromHex(oid)));
}

/** Checks the working tree of main against the intended files: paths, blob ids (by git) and bytes. */
async function expectWorkingTree(repo: Repo, intended: IntendedFile[]): Promise<void> {
  const listed = await listFiles(repo, { branch: 'main' });
  const expected = [...intended].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  expect(listed.map((file) => file.path)).toEqual(expected.map((file) => file.path));
  for (const [index, file] of listed.entries()) {
    expect(file.oid).toBe(gitHashBlob(expected[index].bytes));
    expect(file.size).toBe(expected[index].bytes.length);
    const read = await readFile(repo, { branch: 'main', path: file.path });
    const bytes = read.encoding === 'base64' ? Buffer.from(read.content, 'base64') : Buffer.from(read.content, 'utf8');
    expect(bytes.equals(expected[index].bytes)).toBe(true);
  }
}

/** Parses `git ls-tree -r -z`: "<mode> <type> <oid>\t<path>\0". */
function gitLsTree(treeish: string): Array<{ mode: string; oid: string; path: string }> {
  const out = gitBytes(['ls-tree', '-r', '-z', treeish], { cwd: gitDir.path }).toString('utf8');
  return out
    .split('\0')
    .filter((line) => line.length > 0)
    .map((line) => {
      const tab = line.indexOf('\t');
      const [mode, , oid] = line.slice(0, tab).split(' ');
      return { mode, oid, path: line.slice(tab + 1) };
    });
}

/** Reads objects with `git cat-file --batch`: the type and the exact body git sees. */
function gitCatFileBatch(oids: string[]): Map<string, { type: string; body: Buffer }> {
  const out = gitBytes(['cat-file', '--batch'], { cwd: gitDir.path, input: oids.map((oid) => `${oid}\n`).join('') });
  const found = new Map<string, { type: string; body: Buffer }>();
  let offset = 0;
  while (offset < out.length) {
    const newline = out.indexOf(0x0a, offset);
    const [oid, type, size] = out.toString('utf8', offset, newline).split(' ');
    const start = newline + 1;
    const end = start + Number(size);
    found.set(oid, { type, body: Buffer.from(out.subarray(start, end)) });
    offset = end + 1;
  }
  return found;
}

async function exportAndFsck(repo: Repo): Promise<void> {
  await exportToBareRepo(repo, gitDir.path);
  git(['fsck', '--strict', '--no-dangling', '--no-progress'], { cwd: gitDir.path });
}

/** Every object reachable from main in our store, with its type. */
function reachableObjects(repo: Repo, head: string): string[] {
  return git(['rev-list', '--objects', head], { cwd: gitDir.path })
    .trim()
    .split('\n')
    .map((line) => line.split(' ')[0]);
}

describe('git interop', () => {
  it('gives the golden empty tree and git commit-tree ids for an initial commit with no files', async () => {
    const repo = await newTestRepo(opened.store);
    const head = (await log(repo, { branch: 'main', limit: 10 })).commits;
    expect(head.length).toBe(1);
    const shown = await showCommit(repo, { oid: head[0].oid, content: false });
    expect(shown.tree_oid).toBe('4b825dc642cb6eb9a060e54bf8d69288fbee4904');
    expect(shown.tree_oid).toBe(git(['mktree'], { cwd: gitDir.path, input: '' }).trim());
    expect(shown.files).toEqual([]);
    const ours = await storedCommit(repo, head[0].oid);
    expect(gitCommitFor(ours, shown.tree_oid, [], 'Initial commit\n')).toBe(head[0].oid);
    await exportAndFsck(repo);
    expect(git(['cat-file', '-p', head[0].oid], { cwd: gitDir.path })).toBe((await storedObject(repo, head[0].oid))!.body.toString('utf8'));
  });

  it('stores blobs, trees and commits with the ids git gives the same content, through every verb', async () => {
    const repo = await newTestRepo(
      opened.store,
      SEED.map((file) => ({ path: file.path, bytes: file.bytes, mode: file.mode })),
    );
    const commits: Array<{ oid: string; tree: string }> = [];
    const messages: string[] = [];

    // 1. The seed commit.
    let intended = [...SEED];
    await expectWorkingTree(repo, intended);
    const initial = (await log(repo, { branch: 'main', limit: 1 })).commits[0];
    const initialTree = gitTreeFor(intended);
    expect((await showCommit(repo, { oid: initial.oid, content: false })).tree_oid).toBe(initialTree);
    expect(gitCommitFor(await storedCommit(repo, initial.oid), initialTree, [], 'Initial commit\n')).toBe(initial.oid);
    commits.push({ oid: initial.oid, tree: initialTree });
    messages.push('Initial commit');

    // 2. Batch writes: non-UTF-8 through base64, an empty file, Unicode paths, an overwrite of an
    // executable (which keeps its mode), and a delete that empties a directory.
    await writeFiles(repo, {
      branch: 'main',
      files: [
        { path: 'more/bytes.bin', content: Buffer.from([0x80, 0x81, 0xfe, 0xff, 0x00]).toString('base64'), encoding: 'base64' },
        { path: 'more/empty', content: '' },
        { path: 'bin/run.sh', content: '#!/bin/sh\necho bye\n' },
        { path: 'ünïcödé/ñ', content: 'eñe\n' },
        { path: 'a/a.b', content: 'sorts between a-b/ and x\n' },
      ],
      deletes: ['ab.d'],
    });
    const written: IntendedFile[] = [
      { path: 'more/bytes.bin', mode: '100644', bytes: Buffer.from([0x80, 0x81, 0xfe, 0xff, 0x00]) },
      { path: 'more/empty', mode: '100644', bytes: Buffer.alloc(0) },
      { path: 'bin/run.sh', mode: '100755', bytes: Buffer.from('#!/bin/sh\necho bye\n') },
      { path: 'ünïcödé/ñ', mode: '100644', bytes: Buffer.from('eñe\n') },
      { path: 'a/a.b', mode: '100644', bytes: Buffer.from('sorts between a-b/ and x\n') },
    ];
    const after = byPath(intended);
    after.delete('ab.d/f');
    for (const file of written) after.set(file.path, file);
    intended = [...after.values()];
    await expectWorkingTree(repo, intended);
    const secondMessage = 'Second commit\n\nA body with\n  indented lines, trailing space \n\nand ünïcödé.';
    const second = await commit(repo, { branch: 'main', message: secondMessage, people: testPeople });
    expect(second.created).toBe(true);
    commits.push({ oid: second.oid, tree: gitTreeFor(intended) });
    messages.push(secondMessage);

    // 3. Moves keep modes and ids (a lazily stored directory, a symlink, an executable), then a delete.
    await moveFile(repo, { branch: 'main', from: 'a', to: 'moved/a' });
    await moveFile(repo, { branch: 'main', from: 'link', to: 'links/link' });
    await moveFile(repo, { branch: 'main', from: 'bin/run.sh', to: 'run' });
    await deleteFile(repo, { branch: 'main', path: 'cafe\u0301' });
    const moved = new Map<string, IntendedFile>();
    for (const file of intended) {
      if (file.path === 'cafe\u0301') continue;
      let path = file.path;
      if (path.startsWith('a/')) path = `moved/${path}`;
      else if (path === 'link') path = 'links/link';
      else if (path === 'bin/run.sh') path = 'run';
      moved.set(path, { ...file, path });
    }
    intended = [...moved.values()];
    await expectWorkingTree(repo, intended);
    const thirdMessage = 'Third\n\n\nTwo blank lines above, a trailing newline below.\n';
    const third = await commit(repo, { branch: 'main', message: thirdMessage, people: testPeople });
    commits.push({ oid: third.oid, tree: gitTreeFor(intended) });
    messages.push(thirdMessage.slice(0, -1));

    // Each commit equals the one git makes from the intended tree on top of git's previous commit.
    for (let i = 1; i < commits.length; i++) {
      const message = messages[i].endsWith('\n') ? messages[i] : `${messages[i]}\n`;
      const ours = await storedCommit(repo, commits[i].oid);
      expect(oidToHex(ours.tree)).toBe(commits[i].tree);
      expect(gitCommitFor(ours, commits[i].tree, [commits[i - 1].oid], message)).toBe(commits[i].oid);
    }
    expect((await log(repo, { branch: 'main', limit: 10 })).commits.map((c) => c.message)).toEqual(
      [...messages].reverse().map((m) => (m.endsWith('\n') ? m.slice(0, -1) : m)),
    );

    // Export: git finds nothing wrong and reads back exactly what we store.
    await exportAndFsck(repo);
    const head = commits[commits.length - 1].oid;
    const objects = reachableObjects(repo, head);
    const fromGit = gitCatFileBatch(objects);
    for (const oid of objects) {
      const ours = (await storedObject(repo, oid))!;
      expect(fromGit.get(oid)?.type).toBe(ours.type);
      expect(fromGit.get(oid)?.body.equals(ours.body)).toBe(true);
    }
    expect(git(['cat-file', '-p', head], { cwd: gitDir.path })).toBe((await storedObject(repo, head))!.body.toString('utf8'));

    // git log agrees with ours on ids, parents and trees.
    const gitLog = git(['log', '--format=%H%n%P%n%T', 'main'], { cwd: gitDir.path }).trim().split('\n');
    const ourLog: string[] = [];
    for (const c of (await log(repo, { branch: 'main', limit: 10 })).commits) {
      ourLog.push(c.oid, c.parent_oids.join(' '), (await showCommit(repo, { oid: c.oid, content: false })).tree_oid);
    }
    expect(ourLog).toEqual(gitLog);

    // git ls-tree agrees with our listing and with the modes we meant.
    const listed = gitLsTree('main');
    const intendedByPath = byPath(intended);
    expect(listed.map((entry) => entry.path).sort()).toEqual((await listFiles(repo, { branch: 'main' })).map((f) => f.path).sort());
    for (const entry of listed) {
      expect(entry.mode).toBe(intendedByPath.get(entry.path)?.mode);
      expect(entry.oid).toBe((await readFile(repo, { branch: 'main', path: entry.path })).oid);
    }
    for (const { oid, tree } of commits) {
      const files = (await showCommit(repo, { oid, content: false })).files;
      expect(files.map((f) => f.path).sort()).toEqual(gitLsTree(tree).map((entry) => entry.path).sort());
    }

    // Tree entries are stored in git's order: a directory sorts as if its name ended in "/".
    const rootNames = git(['ls-tree', '--name-only', '-z', initialTree], { cwd: gitDir.path }).split('\0').filter(Boolean);
    const ourRoot = decodeTree((await storedObject(repo, initialTree))!.body).map((entry) => entry.name);
    expect(ourRoot).toEqual(rootNames);
    expect(ourRoot.filter((name) => name.startsWith('a'))).toEqual(['a-b', 'a.b', 'a', 'a0', 'ab', 'ab-', 'ab.d']);
    expect(ourRoot.indexOf('\uff61')).toBeLessThan(ourRoot.indexOf('\u{1f600}'));
  });

  it('refuses every name git fsck calls ".git", or else git accepts the commit', async () => {
    const aliases = ['git~1', 'GIT~1', '.git.', '.git ', '.git::$INDEX_ALLOCATION', '.g\u200cit', '.\ufeffgit'];
    const refusedByGit: string[] = [];
    for (const name of aliases) {
      const repo = await newTestRepo(opened.store);
      try {
        await writeFiles(repo, { branch: 'main', files: [{ path: `${name}/hooks/post-checkout`, content: 'x' }] });
      } catch (error) {
        expect((error as { code?: string }).code).toBe('invalid_request');
        continue;
      }
      await commit(repo, { branch: 'main', people: testPeople });
      // A repository of its own, so the refused trees do not upset the other tests' fsck.
      const bare = scratchDir('treehouse-dotgit-');
      try {
        initBareRepo(bare.path);
        await exportToBareRepo(repo, bare.path);
        git(['fsck', '--strict', '--no-dangling', '--no-progress'], { cwd: bare.path });
      } catch (error) {
        if (!String((error as { stderr?: Buffer }).stderr).includes('hasDotgit')) throw error;
        refusedByGit.push(name);
      } finally {
        bare.remove();
      }
    }
    expect(refusedByGit).toEqual([]);
  });

  it('writes signatures exactly as git formats them', async () => {
    const repo = await newTestRepo(opened.store, [{ path: 'f', bytes: Buffer.from('f') }]);
    const head = (await log(repo, { branch: 'main', limit: 1 })).commits[0];
    const ours = await storedCommit(repo, head.oid);
    await exportAndFsck(repo);
    const author = git(['log', '-1', '--format=%an <%ae> %at', 'main'], { cwd: gitDir.path }).trim();
    expect(`${author} +0000`).toBe(formatSignature(ours.author));
  });
});
