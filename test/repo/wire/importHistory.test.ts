/**
 * prepareHistory, the walk of a git seed's fetched objects (src/repo/wire/importHistory.ts), against
 * git: a history made with git and packed by `git pack-objects` is ordered parents first with
 * exactly the objects `git rev-list --objects` names; a history that lacks an object, or names
 * one of the wrong type, is refused naming it, whichever object is taken away.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidFromHex, oidToHex } from '../../../src/git/oid.js';
import type { PackObject } from '../../../src/git/pack.js';
import { checkReceivedPack } from '../../../src/git/packCheck.js';
import { EarlyHistory, HistoryImportError, prepareHistory } from '../../../src/repo/wire/importHistory.js';
import type { ReceivedForm } from '../../../src/store/asyncTypes.js';
import { git, gitBytes, scratchDir } from '../../support/git.js';
import { openTestStore } from '../../support/store.js';

const work = scratchDir('treehouse-import-history-');
let objects: PackObject[] = [];
let tip = '';
const dir = join(work.path, 'source');

beforeAll(() => {
  git(['init', '-q', '--initial-branch=main', dir]);
  // Enough commits and trees that the walks pause between slices (a clock read every 64 steps).
  for (let round = 0; round < 150; round++) {
    writeFileSync(join(dir, `file-${round % 7}.txt`), `round ${round}\n`);
    git(['add', '-A'], { cwd: dir });
    git(['commit', '-q', '-m', `round ${round}`], { cwd: dir });
  }
  tip = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
  const pack = gitBytes(['pack-objects', '--revs', '--stdout', '-q'], { cwd: dir, input: `${tip}\n` });
  const checked = checkReceivedPack(pack, {}, { object: () => undefined, has: () => false });
  if (!checked.ok) throw new Error(checked.message);
  objects = checked.objects;
});

afterAll(() => work.remove());

const idsOf = (list: readonly PackObject[]) => list.map((object) => oidToHex(object.oid));

describe('prepareHistory', () => {
  it('orders the history parents first, with exactly the objects git rev-list --objects names', async () => {
    const history = await prepareHistory(objects, oidFromHex(tip), { checked: true });
    expect(oidToHex(history.commit)).toBe(tip);
    expect(idsOf(history.objects).sort()).toEqual(
      git(['rev-list', '--objects', tip], { cwd: dir })
        .trim()
        .split('\n')
        .map((line) => line.slice(0, 40))
        .sort(),
    );
    const commits = history.objects.filter((object) => object.type === 'commit').map((object) => oidToHex(object.oid));
    expect(commits).toEqual(git(['rev-list', '--reverse', '--topo-order', tip], { cwd: dir }).trim().split('\n'));
  });

  it('refuses a history that lacks any one of its commits, trees or blobs, naming it', async () => {
    for (const type of ['commit', 'tree', 'blob'] as const) {
      // Not the tip itself: that is "the wanted object".
      const taken = objects.filter((object) => object.type === type && oidToHex(object.oid) !== tip)[3];
      const without = objects.filter((object) => object !== taken);
      const refused = prepareHistory(without, oidFromHex(tip), { checked: true });
      await expect(refused, type).rejects.toThrow(HistoryImportError);
      await expect(refused, type).rejects.toThrow(new RegExp(`incomplete history: ${type} ${oidToHex(taken.oid)} is missing`));
    }
  });

  it('refuses a tip that is not a commit, and a tree entry that names an object of another type', async () => {
    const blob = objects.find((object) => object.type === 'blob')!;
    await expect(prepareHistory(objects, blob.oid, { checked: true })).rejects.toThrow(/points to a blob, not to a commit/);
    // The same ids with a blob's body where a tree should be: the walk finds a blob at a tree's id.
    const tree = objects.find((object) => object.type === 'tree')!;
    const swapped = objects.map((object) => (object === tree ? { ...object, type: 'blob' as const } : object));
    await expect(prepareHistory(swapped, oidFromHex(tip), { checked: true })).rejects.toThrow(/should be a tree but is a blob/);
  });
});

describe('EarlyHistory', () => {
  it('stores trees, blobs and commits as runs come, each commit once its parents are stored, whatever order they come in', async () => {
    const opened = openTestStore();
    try {
      const store = opened.store.async;
      const project = 900;
      const early = new EarlyHistory({ store, project });
      expect(early.wanted).toBe(true);
      const forms: ReceivedForm[] = objects
        .filter((object) => object.type !== 'commit')
        .map((object) => ({ oid: object.oid, type: object.type, inflatedBytes: object.bodyBytes ?? object.body.length, deflated: object.packed!.deflated, delta: object.packed!.base ? { base: object.packed!.base, bytes: object.packed!.dataBytes } : null }));
      // git's pack: newest commit first. The newest half comes first, with no parent of the oldest stored.
      const commits = objects.filter((object) => object.type === 'commit');
      const newest = commits.slice(0, 75);
      const oldest = commits.slice(75);
      early.add({ forms: forms.slice(0, 100), commits: newest });
      await early.settled();
      expect(await store.read(async (tx) => (await tx.project(project).getCommitInfos(commits.map((commit) => commit.oid))).filter(Boolean).length)).toBe(0);
      early.add({ forms: forms.slice(100), commits: [] });
      early.add({ forms: [], commits: oldest });
      const { kept, late } = await early.settled();
      expect(kept.size).toBe(objects.length);
      // Only a commit whose entry is a delta on a commit stored after it waits for its form (keepPackedForm at the end).
      for (const object of late) expect(object.type === 'commit' && commits.some((commit) => commit.oid.equals(object.packed!.base!))).toBe(true);
      await store.settleForms!(project, true);
      // Generations as git's own order gives them: a line of 150, the root first.
      const order = git(['rev-list', '--reverse', '--topo-order', tip], { cwd: dir }).trim().split('\n');
      const infos = await store.read(async (tx) => tx.project(project).getCommitInfos(order.map(oidFromHex)));
      expect(infos.map((info) => info?.generation)).toEqual(order.map((_, index) => index + 1));
      // Every tree and blob reads back as git wrote it.
      const stored = await store.read(async (tx) => tx.project(project).getObjects(objects.map((object) => object.oid)));
      stored.forEach((object, index) => expect(object?.body.equals(objects[index].body), oidToHex(objects[index].oid)).toBe(true));
    } finally {
      await opened.close();
    }
  });
});
