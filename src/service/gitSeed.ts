/**
 * `source: {kind: "git", url, ref?, token?}`: the history of a remote ref, fetched over smart HTTP
 * and checked before the project exists, so every failure (a refused or unreachable host, bad
 * credentials, an unknown ref, a broken pack) is a 400 and nothing is created.
 */
import { HistoryImportError, prepareHistory, type PreparedHistory } from '../repo/wire/importHistory.js';
import type { SeedFile } from '../repo/initProject.js';
import type { Config } from './config.js';
import { endpointFromUrl, fetchRef, RemoteError } from './gitClient.js';
import { remoteRequestError } from './remoteSync.js';
import { TreehouseError } from '../errors.js';
import type { AsyncStoreLookups, PackCheckResult } from '../git/packCheck.js';
import { oidToHex } from '../git/oid.js';
import type { PackChecker } from './packChecker.js';
import { CLONE_TOLERATED_FSCK } from '../git/fsck.js';
import type { ResolvedRun } from '../repo/wire/streamedRuns.js';

/** A seed's store is empty: nothing the pack names can come from it. */
const NO_STORE: AsyncStoreLookups = { objects: async (oids) => oids.map(() => undefined), has: async (oids) => oids.map(() => false) };

export interface GitSeedSource {
  url: string;
  ref?: string;
  token?: string;
}

/** A whole seed (advertisement, ref listing, pack) must arrive within this time. */
export const GIT_SEED_TIME_MS_MAX = 10 * 60_000;

/**
 * Fetches and checks a seed's history. Its pack is limited like a pushed one (the request body
 * limit), and parsed with pack.ts's per-object and total limits. `onResolved` is given the pack's
 * trees, blobs and commits while it is parsed, to store them meanwhile (src/repo/wire/importHistory.ts
 * EarlyHistory).
 */
export async function fetchGitSeed(config: Config, source: GitSeedSource, packChecker: PackChecker, onResolved?: (run: ResolvedRun) => void): Promise<FetchedSeed> {
  try {
    const endpoint = endpointFromUrl(source.url, { token: source.token ?? null });
    packChecker.prepare();
    // Parsed, delta-resolved and checked like a pushed pack (src/git/packCheck.ts), on the pack
    // checker's thread: the seed has no store to lean on yet, so every base must be in the pack.
    // The checker answers once the pack is parsed, and the rest of its check (fsck, tree depth)
    // runs there while this thread prepares and stores the history for a project nobody sees yet.
    let verdict: Promise<PackCheckResult> | null = null;
    // Whether `onResolved` was given every tree, blob and commit (the pack went to the worker).
    let streamed = false;
    const readPack = async (pack: Buffer) => {
      // Checked as git fsck --strict checks it, but for what a git clone of it takes from old gits.
      const begun = await packChecker.begin(pack, { fsckTolerated: [...CLONE_TOLERATED_FSCK] }, NO_STORE, new Set(), onResolved);
      if (!('parsed' in begun) && !begun.ok) throw new HistoryImportError(refusal(begun.message));
      streamed = onResolved !== undefined && 'parsed' in begun;
      verdict = 'parsed' in begun ? begun.result : Promise.resolve(begun);
      return begun.objects;
    };
    const options = { allowPrivateHosts: config.allowPrivateGitHosts, packBytesMax: config.limits.requestBodyBytesMax, signal: AbortSignal.timeout(GIT_SEED_TIME_MS_MAX) };
    const fetched = await fetchRef(endpoint, source.ref, options, readPack);
    // (A fetch that read no pack has failed already.)
    const pending: Promise<PackCheckResult> = verdict ?? Promise.resolve({ ok: true, objects: [], gaps: new Map(), commitObjects: async () => new Map() });
    const checked = pending.then((result) => {
      if (!result.ok) throw seedError(new HistoryImportError(refusal(result.message)), source);
      return result;
    });
    // Nobody may wait for it (a history that fails to prepare waits below); its failure is theirs to see.
    checked.catch(() => {});
    // Made on the checker's thread once asked (after the history is stored), or let go.
    const commitObjects = async () => {
      const result = await checked;
      return new Map([...(await result.commitObjects())].map(([index, list]) => [oidToHex(result.objects[index].oid), list]));
    };
    const forgetCommitObjects = () => void checked.then((result) => result.forgetCommitObjects?.(), () => {});
    let history: PreparedHistory;
    try {
      // The objects are not checked yet (fsck, tree depth): whatever they make fail here, a
      // refusal of the check is the answer when there is one.
      history = await prepareHistory(fetched.objects, fetched.tip, { checked: true, contentsStored: streamed, commitObjects, forgetCommitObjects });
    } catch (error) {
      forgetCommitObjects();
      await checked;
      throw error;
    }
    const target = oidToHex(history.commit);
    const passed = checked.then((result) => {
      // A history whose trees and blobs were stored as they came was not walked here: the check's
      // walk says whether the wanted commit's is complete.
      const gap = streamed ? result.gaps.get(target) : undefined;
      if (gap) throw seedError(new HistoryImportError(`The remote sent an incomplete history: ${gap.missing} is missing.`), source);
    });
    // Awaited once the history is stored, which may be after it failed.
    passed.catch(() => {});
    return { ...history, checked: passed };
  } catch (error) {
    throw seedError(error, source);
  }
}

/** A fetched history whose check may still run: stored meanwhile, it is made main's only once `checked` resolves. */
export interface FetchedSeed extends PreparedHistory {
  /** Rejects with the seed's 400 when the rest of the pack's check refuses it. */
  checked: Promise<void>;
}

const refusal = (message: string) => `The fetched pack was refused: ${message}`;

/** The seed's failure as the contract's error: a 400 naming the field at fault, unless it is one already. */
function seedError(error: unknown, source: GitSeedSource): unknown {
  if (error instanceof TreehouseError) return error;
  if (error instanceof HistoryImportError) {
    return new TreehouseError('invalid_request', error.message, { issues: [{ path: 'source.url', message: error.message }] });
  }
  const aboutRef = error instanceof RemoteError && error.kind === 'unknown_ref' && source.ref !== undefined;
  return remoteRequestError(error, aboutRef ? 'source.ref' : 'source.url');
}

/**
 * Stand-ins for the seeded files, for framework detection only: the root entries' names and the
 * bytes of package.json (Projects.create detects from these and stores nothing of them when the
 * seed writes its own history).
 */
export function detectionFiles(history: PreparedHistory): SeedFile[] {
  return history.rootNames.map((name) => ({ path: name, bytes: name === 'package.json' && history.packageJson ? history.packageJson : Buffer.alloc(0) }));
}
