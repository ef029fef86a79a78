/**
 * What a fetch sends, chosen by a walk of history by generation number (src/repo/wire/packObjects.ts
 * uninterestingSteps), on a real LMDB store holding a generated history with merges (fixtures/
 * history.ts): for wants and haves picked all over it, the commits and objects planned are those
 * `git rev-list [--objects] <wants> --not <haves>` lists; and a fetch of the last few commits reads
 * the commits around them, not the whole history.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeHistoryRepo } from '../../../fixtures/history.js';
import { checkReceivedPack } from '../../../src/git/packCheck.js';
import { oidFromHex, oidToHex, type Oid } from '../../../src/git/oid.js';
import { DEFAULT_REPO_LIMITS, inReadTx, inWriteTx, type Repo } from '../../../src/repo/repo.js';
import { prepareHistory, startMainAt, storeHistoryObjects } from '../../../src/repo/wire/importHistory.js';
import { planPack } from '../../../src/repo/wire/packObjects.js';
import type { ProjectReads } from '../../../src/store/asyncTypes.js';
import { git, gitBytes, scratchDir } from '../../support/git.js';
import { openTestStore } from '../../support/store.js';

const opened = openTestStore();
const work = scratchDir('treehouse-fetch-walk-');
const source = join(work.path, 'history.git');
const repo: Repo = { store: opened.store.async, project: 91_000, limits: { ...DEFAULT_REPO_LIMITS } };
let commits: string[] = [];
let tip = '';

beforeAll(async () => {
  const written = await writeHistoryRepo(source, { kind: 'project', commits: 600, files: 120, hotFiles: 4, seed: 11 });
  tip = written.head;
  const pack = gitBytes(['pack-objects', '--revs', '--stdout', '-q'], { cwd: source, input: `${tip}\n` });
  const checked = checkReceivedPack(pack, {}, { object: () => undefined, has: () => false });
  if (!checked.ok) throw new Error(checked.message);
  const history = await prepareHistory(checked.objects, oidFromHex(tip), { checked: true });
  await storeHistoryObjects(repo, history);
  await inWriteTx(repo, (tx) => startMainAt(tx, history));
  commits = git(['rev-list', '--topo-order', tip], { cwd: source }).trim().split('\n');
}, 120_000);

afterAll(async () => {
  await opened.close();
  work.remove();
});

/** planPack's commits and other objects, as sorted hex. */
async function planned(wants: string[], haves: string[], reads?: (tx: ProjectReads) => ProjectReads): Promise<{ commits: string[]; objects: string[] }> {
  const plan = await inReadTx(repo, (tx) => planPack(reads ? reads(tx) : tx, { wants: wants.map(oidFromHex), haves: haves.map(oidFromHex) }));
  const out = { commits: [] as string[], objects: [] as string[] };
  for (let index = 0; index < plan.objects.length; index++) (plan.objects.type(index) === 'commit' ? out.commits : out.objects).push(oidToHex(plan.objects.oid(index)));
  return { commits: out.commits.sort(), objects: out.objects.sort() };
}

function revList(args: string[]): string[] {
  return git(['rev-list', ...args], { cwd: source })
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(0, 40))
    .sort();
}

/** A deterministic pick of `count` commits of the history. */
function pick(state: { seed: number }, count: number): string[] {
  return Array.from({ length: count }, () => {
    state.seed = (state.seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return commits[state.seed % commits.length];
  });
}

describe('a fetch planned by a walk of history by generation', () => {
  it('plans the commits and objects git rev-list lists for wants and haves all over a history with merges', async () => {
    expect(git(['rev-list', '--merges', '--count', tip], { cwd: source }).trim()).not.toBe('0');
    const state = { seed: 5 };
    const cases: Array<{ wants: string[]; haves: string[] }> = [
      { wants: [tip], haves: [commits[3]] },
      { wants: [tip], haves: [commits[commits.length - 1]] },
      // Nothing to send: the client has the wants or what is above them.
      { wants: [commits[40]], haves: [commits[10]] },
      { wants: [commits[40]], haves: [commits[40]] },
    ];
    for (let n = 0; n < 24; n++) cases.push({ wants: pick(state, 1 + (n % 2)), haves: pick(state, 1 + (n % 3)) });
    for (const { wants, haves } of cases) {
      const plan = await planned(wants, haves);
      const not = haves.map((have) => `^${have}`);
      expect(plan.commits, `wants ${wants.join(',')} haves ${haves.join(',')}`).toEqual(revList([...wants, ...not]));
      const objects = revList(['--objects', ...wants, ...not]).filter((oid) => !plan.commits.includes(oid));
      expect(plan.objects, `objects of wants ${wants.join(',')} haves ${haves.join(',')}`).toEqual(objects);
    }
  });

  it('reads the commits near the wants for a fetch of the last ones, not the whole history', async () => {
    let infosRead = 0;
    const counting = (tx: ProjectReads): ProjectReads =>
      new Proxy(tx, {
        get(target, name, receiver) {
          const member = Reflect.get(target, name, receiver);
          if (name === 'getCommitInfos') {
            return (oids: Oid[]) => {
              infosRead += oids.length;
              return (member as ProjectReads['getCommitInfos']).call(target, oids);
            };
          }
          return typeof member === 'function' ? member.bind(target) : member;
        },
      });
    const have = git(['rev-parse', `${tip}~5`], { cwd: source }).trim();
    const plan = await planned([tip], [have], counting);
    expect(plan.commits).toEqual(revList([tip, `^${have}`]));
    expect(plan.commits.length).toBeGreaterThanOrEqual(5);
    // A walk of everything the client has would read all 600-odd commits.
    expect(commits.length).toBeGreaterThan(500);
    expect(infosRead).toBeLessThan(plan.commits.length * 4 + 40);
  });
});
