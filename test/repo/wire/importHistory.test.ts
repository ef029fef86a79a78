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
import { HistoryImportError, prepareHistory } from '../../../src/repo/wire/importHistory.js';
import { git, gitBytes, scratchDir } from '../../support/git.js';

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
