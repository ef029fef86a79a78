/**
 * Verbs started together on one branch (Promise.all) must behave as if they ran one after another:
 * no batch loses another's files, history stays a line, and a commit with a stale expected head
 * is refused rather than forking the branch.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TreehouseError } from '../../src/errors.js';
import { commit, type CommitResult } from '../../src/repo/commit.js';
import { createBranch } from '../../src/repo/createBranch.js';
import { listFiles } from '../../src/repo/listFiles.js';
import { log } from '../../src/repo/log.js';
import type { Repo } from '../../src/repo/repo.js';
import { showCommit } from '../../src/repo/showCommit.js';
import { writeFiles } from '../../src/repo/writeFiles.js';
import { newTestRepo, openTestStore, testPeople, text } from '../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());

const BATCHES = 50;

async function paths(repo: Repo, branch = 'main'): Promise<string[]> {
  return (await listFiles(repo, { branch })).map((file) => file.path);
}

/** The whole history of a branch, newest first, checked to be a line that ends at a root commit. */
async function linearHistory(repo: Repo, branch: string): Promise<string[]> {
  const commits = (await log(repo, { branch, limit: 1000 })).commits;
  commits.forEach((entry, index) => {
    const isRoot = index === commits.length - 1;
    expect(entry.parent_oids, `commit ${entry.oid}`).toEqual(isRoot ? [] : [commits[index + 1].oid]);
  });
  expect(commits[commits.length - 1].message).toBe('Initial commit');
  return commits.map((entry) => entry.oid);
}

async function committedPaths(repo: Repo, oid: string): Promise<string[]> {
  return (await showCommit(repo, { oid, content: false })).files.map((file) => file.path);
}

describe('concurrent verbs on one branch', () => {
  it('keeps every file of 50 concurrent batches', async () => {
    const repo = await newTestRepo(opened.store, [text('seed.txt', 'seed')]);
    // Each batch writes its own files, overwrites one shared file and shares a directory.
    const results = await Promise.all(
      Array.from({ length: BATCHES }, (_, i) =>
        writeFiles(repo, {
          branch: 'main',
          files: [
            { path: `batch-${i}/a.txt`, content: `a ${i}` },
            { path: `batch-${i}/nested/b.txt`, content: `b ${i}` },
            { path: `shared/${i}.txt`, content: `${i}` },
            { path: 'last.txt', content: `${i}` },
          ],
        }),
      ),
    );
    expect(results.every((result) => result.written === 4)).toBe(true);
    const listed = new Set(await paths(repo));
    expect(listed.size).toBe(1 + BATCHES * 3 + 1);
    for (let i = 0; i < BATCHES; i++) {
      expect(listed.has(`batch-${i}/a.txt`)).toBe(true);
      expect(listed.has(`batch-${i}/nested/b.txt`)).toBe(true);
      expect(listed.has(`shared/${i}.txt`)).toBe(true);
    }
    // The one file every batch wrote holds the value of one of them, whole.
    const last = (await listFiles(repo, { branch: 'main', prefix: 'last.txt', content: true }))[0];
    expect(Number(last.content)).toBeGreaterThanOrEqual(0);
    expect(Number(last.content)).toBeLessThan(BATCHES);
  });

  it('keeps history linear and loses no file when writes and commits race', async () => {
    const repo = await newTestRepo(opened.store);
    const started: Array<Promise<unknown>> = [];
    for (let i = 0; i < BATCHES; i++) {
      started.push(writeFiles(repo, { branch: 'main', files: [{ path: `race/${i}.txt`, content: `${i}` }] }));
      if (i % 2 === 0) started.push(commit(repo, { branch: 'main', message: `commit ${i}`, people: testPeople }));
    }
    const outcomes = await Promise.all(started);
    const final = await commit(repo, { branch: 'main', message: 'final', people: testPeople });

    const history = await linearHistory(repo, 'main');
    expect(history[0]).toBe(final.oid);
    const created = outcomes.filter((outcome): outcome is CommitResult => typeof outcome === 'object' && outcome !== null && 'created' in outcome);
    const createdOids = created.filter((result) => result.created).map((result) => result.oid);
    // Every commit that said it was created is on the branch, once.
    expect(new Set(createdOids).size).toBe(createdOids.length);
    for (const oid of createdOids) expect(history).toContain(oid);

    // Files only ever get added, so along the history every commit holds its parent's files.
    let previous = new Set<string>();
    for (const oid of [...history].reverse()) {
      const files = new Set(await committedPaths(repo, oid));
      for (const path of previous) expect(files.has(path), `${path} lost in ${oid}`).toBe(true);
      previous = files;
    }
    const expected = Array.from({ length: BATCHES }, (_, i) => `race/${i}.txt`).sort();
    expect([...previous].sort()).toEqual(expected);
    expect(await paths(repo)).toEqual(expected);
  });

  it('lets exactly one of several commits with the same expected head move the branch', async () => {
    const repo = await newTestRepo(opened.store, [text('f.txt', 'v0')]);
    const head = (await log(repo, { branch: 'main', limit: 1 })).commits[0].oid;
    const contenders = 10;
    const settled = await Promise.allSettled(
      Array.from({ length: contenders }, async (_, i) => {
        await writeFiles(repo, { branch: 'main', files: [{ path: `c${i}.txt`, content: `${i}` }] });
        return commit(repo, { branch: 'main', message: `contender ${i}`, expectedHead: head, people: testPeople });
      }),
    );
    const won = settled.filter((outcome) => outcome.status === 'fulfilled');
    const lost = settled.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    expect(won.length).toBe(1);
    expect(lost.length).toBe(contenders - 1);
    for (const outcome of lost) {
      expect(outcome.reason).toBeInstanceOf(TreehouseError);
      expect((outcome.reason as TreehouseError).code).toBe('ref_changed');
    }
    const history = await linearHistory(repo, 'main');
    expect(history.length).toBe(2);
    expect(history[1]).toBe(head);
  });

  it('keeps branches apart when they are written and committed concurrently', async () => {
    const repo = await newTestRepo(opened.store, [text('base.txt', 'base')]);
    const branches = ['one', 'two', 'three'];
    await Promise.all(branches.map((name) => createBranch(repo, { name, from: 'main' })));
    await Promise.all(
      branches.flatMap((name) =>
        Array.from({ length: 10 }, async (_, i) => {
          await writeFiles(repo, { branch: name, files: [{ path: `${name}/${i}.txt`, content: `${name} ${i}` }] });
          await commit(repo, { branch: name, message: `${name} ${i}`, people: testPeople });
        }),
      ),
    );
    for (const name of branches) {
      const expected = ['base.txt', ...Array.from({ length: 10 }, (_, i) => `${name}/${i}.txt`)].sort();
      expect(await paths(repo, name)).toEqual(expected);
      const history = await linearHistory(repo, name);
      expect((await committedPaths(repo, history[0])).sort()).toEqual(expected);
    }
    expect(await paths(repo, 'main')).toEqual(['base.txt']);
  });
});
