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
import type { AsyncStoreLookups } from '../git/packCheck.js';
import { oidToHex } from '../git/oid.js';
import type { PackChecker } from './packChecker.js';

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
 * limit), and parsed with pack.ts's per-object and total limits.
 */
export async function fetchGitSeed(config: Config, source: GitSeedSource, packChecker: PackChecker): Promise<PreparedHistory> {
  try {
    const endpoint = endpointFromUrl(source.url, { token: source.token ?? null });
    packChecker.prepare();
    // Parsed, delta-resolved and checked like a pushed pack (src/git/packCheck.ts), on the pack
    // checker's thread: the seed has no store to lean on yet, so every base must be in the pack.
    let commitObjects: Promise<Map<string, Buffer>> = Promise.resolve(new Map());
    const readPack = async (pack: Buffer) => {
      const checked = await packChecker.check(pack, {}, NO_STORE);
      if (!checked.ok) throw new HistoryImportError(`The fetched pack was refused: ${checked.message}`);
      // Made on the checker's thread while the history is prepared and stored.
      commitObjects = checked.commitObjects().then((lists) => new Map([...lists].map(([index, list]) => [oidToHex(checked.objects[index].oid), list])));
      commitObjects.catch(() => {});
      return checked.objects;
    };
    const options = { allowPrivateHosts: config.allowPrivateGitHosts, packBytesMax: config.limits.requestBodyBytesMax, signal: AbortSignal.timeout(GIT_SEED_TIME_MS_MAX) };
    const fetched = await fetchRef(endpoint, source.ref, options, readPack);
    return await prepareHistory(fetched.objects, fetched.tip, { checked: true, commitObjects });
  } catch (error) {
    if (error instanceof HistoryImportError) {
      throw new TreehouseError('invalid_request', error.message, { issues: [{ path: 'source.url', message: error.message }] });
    }
    const aboutRef = error instanceof RemoteError && error.kind === 'unknown_ref' && source.ref !== undefined;
    throw remoteRequestError(error, aboutRef ? 'source.ref' : 'source.url');
  }
}

/**
 * Stand-ins for the seeded files, for framework detection only: the root entries' names and the
 * bytes of package.json (Projects.create detects from these and stores nothing of them when the
 * seed writes its own history).
 */
export function detectionFiles(history: PreparedHistory): SeedFile[] {
  return history.rootNames.map((name) => ({ path: name, bytes: name === 'package.json' && history.packageJson ? history.packageJson : Buffer.alloc(0) }));
}
