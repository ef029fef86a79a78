/**
 * git's rename detection for one side of a merge, as merge-ort runs diffcore_rename_extended():
 * exact renames, then same basename at ≥75% similarity, then the similarity matrix at ≥50%, with
 * git's similarity estimate; renames vote for directory renames on the way
 * (update_dir_rename_counts()). The tree merge (mergeTrees.ts) collects the pairs and decides
 * what the renames mean; this module only pairs sources with destinations.
 */
import { EMPTY_BLOB_OID, oidToHex, type Oid } from '../../git/oid.js';
import { GitStrMap } from './gitStrMap.js';
import { basenameSame, isRegular, lastComponent, NOT_RELEVANT, parentOf, RELEVANT_FOR_ANCESTOR, RELEVANT_FOR_SELF, RELEVANT_LOCATION, type FilePair, type Version } from './mergeModel.js';
import { hashSpans } from './spanHash.js';

/** diffcore-rename: at most this many identical sources are considered per destination. */
export const IDENTICAL_SOURCES_MAX = 100;
/** diffcore.h MAX_SCORE and DEFAULT_RENAME_SCORE (50%); basename matches need 75%. */
export const SCORE_MAX = 60000;
export const RENAME_SCORE_MIN = 30000;
export const BASENAME_SCORE_MIN = RENAME_SCORE_MIN + Math.trunc(0.5 * (SCORE_MAX - RENAME_SCORE_MIN));
/** merge-ort's rename limit: no similarity search beyond 7000 × 7000 candidates. */
export const RENAME_LIMIT = 7000;
/** diffcore-rename NUM_CANDIDATE_PER_DST. */
export const CANDIDATES_PER_DESTINATION = 4;
/** diffcore-rename's placeholder target for sources not yet paired (never a real directory). */
export const UNKNOWN_DIR = '/';
export const RELEVANT_NO_MORE = 0;

/** One side's rename state, owned by the tree merge: detect() reads and updates it. */
export interface SideRenames {
  /** The side's deleted, added and (after detection) renamed files. */
  pairs: FilePair[];
  /** Deleted paths worth pairing, and why (merge-ort's relevant_sources). */
  relevantSources: Map<string, number>;
  /** Directories the side removed, and how much they matter (dir_rename_relevance). */
  dirsRemoved: Map<string, number>;
  /** Removed directory → votes per target directory. */
  dirRenameCounts: Map<string, GitStrMap<number>>;
}

export class RenameDetector {
  private state!: SideRenames;
  private readonly spanCache = new Map<string, Map<number, number>>();

  constructor(private readonly objects: { readBlob(oid: Oid): Promise<Buffer> }) {}

  /**
   * diffcore_rename_extended() as merge-ort runs it for one side. Runs only if one of the side's
   * deletions matters (merge-ort's possible_side_renames()); empty files take part in no renames
   * (rename_empty = 0). Steps, each pairing an added file with a deleted one at most once:
   *   1. exact: same blob (for symlinks and submodules also the same mode), a source with the
   *      same basename preferred;
   *   2. basename: a relevant source and a destination whose file names are unique among the
   *      remaining ones (or whose directory the exact renames say moved) and ≥75% similar;
   *   3. matrix: the remaining relevant sources against the remaining destinations, best four
   *      candidates per destination, pairs taken by decreasing similarity while ≥50%.
   * Renames vote for directory renames on the way (update_dir_rename_counts()). Each step first
   * reads the blobs it compares, together.
   */
  async detect(state: SideRenames): Promise<FilePair[]> {
    this.state = state;
    const pairs = state.pairs;
    const relevant = state.relevantSources;
    if (pairs.length === 0 || relevant.size === 0) return pairs;
    let sources = pairs.filter((pair) => pair.status === 'D' && !pair.one.oid.equals(EMPTY_BLOB_OID));
    const destinations = pairs.filter((pair) => pair.status === 'A' && !pair.two.oid.equals(EMPTY_BLOB_OID));
    if (sources.length === 0 || destinations.length === 0) return pairs;

    this.findExactRenames(sources, destinations);
    sources = sources.filter((source) => !source.used);
    const guide = this.initialiseDirectoryRenameGuide(destinations);
    await this.findBasenameRenames(sources, destinations, guide);
    sources = sources.filter((source) => !source.used && relevant.has(source.onePath));
    sources = this.dropSourcesOnlyNeededForKnownDirectoryRenames(sources);
    const remaining = destinations.filter((destination) => destination.status !== 'R');
    if (remaining.length > 0 && sources.length > 0 && remaining.length * sources.length <= RENAME_LIMIT * RENAME_LIMIT) {
      await this.findSimilarRenames(sources, remaining);
    }

    const remainingPairs = pairs.filter((pair) => !(pair.status === 'D' && pair.used));
    // cleanup_dir_rename_info(): only removed, relevant directories can have moved.
    for (const [sourceDir, counts] of [...state.dirRenameCounts]) {
      if (!state.dirsRemoved.get(sourceDir)) state.dirRenameCounts.delete(sourceDir);
      else counts.delete(UNKNOWN_DIR);
    }
    return remainingPairs;
  }

  /** find_exact_renames(). */
  private findExactRenames(sources: readonly FilePair[], destinations: readonly FilePair[]): void {
    const sourcesByBlob = new Map<string, FilePair[]>();
    for (const source of sources) {
      const hex = oidToHex(source.one.oid);
      const list = sourcesByBlob.get(hex);
      if (list) list.push(source);
      else sourcesByBlob.set(hex, [source]);
    }
    for (const destination of destinations) {
      let best: FilePair | null = null;
      let bestScore = -1;
      let budget = IDENTICAL_SOURCES_MAX;
      for (const source of sourcesByBlob.get(oidToHex(destination.two.oid)) ?? []) {
        const regular = isRegular(source.one.mode) && isRegular(destination.two.mode);
        if (!regular && source.one.mode !== destination.two.mode) continue;
        if (source.used) continue;
        const score = 1 + (basenameSame(source.onePath, destination.twoPath) ? 1 : 0);
        if (score > bestScore) {
          best = source;
          bestScore = score;
          if (score === 2) break;
        }
        if (--budget === 0) break;
      }
      if (best) recordRename(destination, best);
    }
  }

  /**
   * initialize_dir_rename_info(): count the exact renames' directory votes, and guess for each
   * source directory where it went (the target with the most votes).
   */
  private initialiseDirectoryRenameGuide(destinations: readonly FilePair[]): DirectoryRenameGuide {
    const unpairedByPath = new Map<string, FilePair>();
    for (const destination of destinations) {
      if (destination.status === 'R') this.countDirectoryRename(destination.onePath, destination.twoPath);
      else unpairedByPath.set(destination.twoPath, destination);
    }
    const likelyTarget = new Map<string, string>();
    for (const [sourceDir, counts] of this.state.dirRenameCounts) {
      let highest = 0;
      let target: string | null = null;
      for (const [targetDir, count] of counts.entries()) {
        if (count > highest) {
          highest = count;
          target = targetDir;
        }
      }
      if (target !== null) likelyTarget.set(sourceDir, target);
    }
    return { unpairedByPath, likelyTarget };
  }

  /** find_basename_matches() with idx_possible_rename(). */
  private async findBasenameRenames(sources: readonly FilePair[], destinations: readonly FilePair[], guide: DirectoryRenameGuide): Promise<void> {
    const uniqueSource = new Map<string, number>(); // basename → index, -1 when not unique
    sources.forEach((source, i) => {
      const name = lastComponent(source.onePath);
      uniqueSource.set(name, uniqueSource.has(name) ? -1 : i);
    });
    const uniqueDestination = new Map<string, FilePair | null>(); // basename → destination, null when not unique
    for (const destination of destinations) {
      if (destination.status === 'R') continue;
      const name = lastComponent(destination.twoPath);
      uniqueDestination.set(name, uniqueDestination.has(name) ? null : destination);
    }
    // The candidates depend on nothing this step changes but which destinations are paired.
    const candidates: Array<[FilePair, FilePair]> = [];
    sources.forEach((source, i) => {
      if (!this.state.relevantSources.has(source.onePath)) return;
      const name = lastComponent(source.onePath);
      if (!uniqueDestination.has(name)) return;
      let destination: FilePair | null = uniqueDestination.get(name) ?? null;
      if (uniqueSource.get(name) !== i || destination === null) {
        // Not unique: try where the exact renames say this file's directory went.
        const target = guide.likelyTarget.get(parentOf(source.onePath));
        destination = target === undefined ? null : (guide.unpairedByPath.get(`${target}/${name}`) ?? null);
      }
      if (destination === null || destination.status === 'R') return;
      candidates.push([source, destination]);
    });
    const contents = await this.readContents(candidates.flatMap(([source, destination]) => [source.one, destination.two]));
    for (const [source, destination] of candidates) {
      if (destination.status === 'R') continue;
      if (this.similarity(source.one, destination.two, BASENAME_SCORE_MIN, contents) < BASENAME_SCORE_MIN) continue;
      recordRename(destination, source);
      this.countDirectoryRename(source.onePath, destination.twoPath);
    }
  }

  /**
   * handle_early_known_dir_renames(): once a removed directory's rename is settled by majority,
   * sources wanted only for locating it need no similarity search.
   */
  private dropSourcesOnlyNeededForKnownDirectoryRenames(sources: readonly FilePair[]): FilePair[] {
    const removed = this.state.dirsRemoved;
    const counts = this.state.dirRenameCounts;
    for (const source of sources) {
      for (let dir = parentOf(source.onePath); dir !== '' && (removed.get(dir) ?? NOT_RELEVANT) !== NOT_RELEVANT; dir = parentOf(dir)) {
        let targets = counts.get(dir);
        if (!targets) {
          targets = new GitStrMap();
          counts.set(dir, targets);
        }
        targets.set(UNKNOWN_DIR, (targets.get(UNKNOWN_DIR) ?? 0) + 1);
      }
    }
    for (const [dir, targets] of counts) {
      if (removed.get(dir) === RELEVANT_FOR_SELF && directoryRenameDeterminable(targets)) removed.set(dir, RELEVANT_FOR_ANCESTOR);
    }
    return sources.filter((source) => {
      if (this.state.relevantSources.get(source.onePath) !== RELEVANT_LOCATION) return true;
      for (let dir = parentOf(source.onePath); ; dir = parentOf(dir)) {
        const relevance = removed.get(dir) ?? NOT_RELEVANT;
        if (relevance === NOT_RELEVANT) break;
        if (relevance === RELEVANT_FOR_SELF) return true;
      }
      this.state.relevantSources.set(source.onePath, RELEVANT_NO_MORE);
      return false;
    });
  }

  /** The NxM similarity matrix of diffcore_rename_extended(), with record_if_better() and find_renames(). */
  private async findSimilarRenames(sources: readonly FilePair[], destinations: readonly FilePair[]): Promise<void> {
    const contents = await this.readContents([...sources.map((source) => source.one), ...destinations.map((destination) => destination.two)]);
    const matrix: Candidate[] = [];
    destinations.forEach((destination, d) => {
      const best: Candidate[] = Array.from({ length: CANDIDATES_PER_DESTINATION }, () => ({ destination: -1, source: -1, score: 0, nameScore: 0 }));
      sources.forEach((source, s) => {
        const candidate: Candidate = {
          destination: d,
          source: s,
          score: this.similarity(source.one, destination.two, RENAME_SCORE_MIN, contents),
          nameScore: basenameSame(source.onePath, destination.twoPath) ? 1 : 0,
        };
        let worst = 0;
        for (let i = 1; i < CANDIDATES_PER_DESTINATION; i++) if (compareCandidates(best[i], best[worst]) > 0) worst = i;
        if (compareCandidates(best[worst], candidate) > 0) best[worst] = candidate;
      });
      matrix.push(...best);
    });
    matrix.sort(compareCandidates); // stable, as git's STABLE_QSORT
    for (const candidate of matrix) {
      if (candidate.destination < 0 || candidate.score < RENAME_SCORE_MIN) break;
      const destination = destinations[candidate.destination];
      const source = sources[candidate.source];
      if (destination.status === 'R' || source.used) continue;
      recordRename(destination, source);
      this.countDirectoryRename(source.onePath, destination.twoPath);
    }
  }

  /** The contents of the regular files among `versions` (the only ones similarity() reads), read together, by id. */
  private async readContents(versions: readonly Version[]): Promise<Map<string, Buffer>> {
    const wanted = new Map<string, Oid>();
    for (const version of versions) if (isRegular(version.mode)) wanted.set(oidToHex(version.oid), version.oid);
    const oids = [...wanted.values()];
    const bodies = await Promise.all(oids.map((oid) => this.objects.readBlob(oid)));
    return new Map(oids.map((oid, i) => [oidToHex(oid), bodies[i]]));
  }

  /**
   * estimate_similarity(): how much of the larger file is material both files share, on git's
   * scale of 0..60000. Only regular files; sizes too far apart score 0. `contents` holds both
   * files' blobs (readContents()).
   */
  private similarity(source: Version, destination: Version, minimumScore: number, contents: ReadonlyMap<string, Buffer>): number {
    if (!isRegular(source.mode) || !isRegular(destination.mode)) return 0;
    const sourceContent = contents.get(oidToHex(source.oid))!;
    const destinationContent = contents.get(oidToHex(destination.oid))!;
    const maxSize = Math.max(sourceContent.length, destinationContent.length);
    const delta = maxSize - Math.min(sourceContent.length, destinationContent.length);
    if (maxSize * (SCORE_MAX - minimumScore) < delta * SCORE_MAX) return 0;
    if (destinationContent.length === 0) return 0;
    const sourceSpans = this.spans(source.oid, sourceContent);
    const destinationSpans = this.spans(destination.oid, destinationContent);
    let copied = 0;
    for (const [hash, count] of sourceSpans) {
      const other = destinationSpans.get(hash);
      if (other !== undefined) copied += Math.min(count, other);
    }
    return Math.trunc((copied * SCORE_MAX) / maxSize);
  }

  private spans(oid: Oid, content: Buffer): Map<number, number> {
    const hex = oidToHex(oid);
    let spans = this.spanCache.get(hex);
    if (!spans) {
      spans = hashSpans(content);
      this.spanCache.set(hex, spans);
    }
    return spans;
  }

  /**
   * diffcore-rename's update_dir_rename_counts(): a rename a/b/c/x → d/e/c/x votes for a/b/c →
   * d/e/c and, while the trailing directory names agree and the directories matter, a/b → d/e.
   */
  private countDirectoryRename(oldPath: string, newPath: string): void {
    const removed = this.state.dirsRemoved;
    let oldDir = oldPath;
    let newDir = newPath;
    for (let first = true; ; first = false) {
      const oldBefore = oldDir;
      const newBefore = newDir;
      oldDir = parentOf(oldDir);
      if (!removed.has(oldDir)) break;
      newDir = parentOf(newDir);
      if (!first && lastComponent(oldBefore) !== lastComponent(newBefore)) break;
      const relevance = removed.get(oldDir) ?? NOT_RELEVANT;
      if (relevance === RELEVANT_FOR_SELF || first) {
        let counts = this.state.dirRenameCounts.get(oldDir);
        if (!counts) {
          counts = new GitStrMap();
          this.state.dirRenameCounts.set(oldDir, counts);
        }
        counts.set(newDir, (counts.get(newDir) ?? 0) + 1);
      }
      if (relevance === NOT_RELEVANT) break;
      if (oldDir === '' || newDir === '') break;
    }
  }

}

/** record_rename_pair(): the destination becomes a rename of the source. */
function recordRename(destination: FilePair, source: FilePair): void {
  source.used = true;
  destination.status = 'R';
  destination.onePath = source.onePath;
  destination.one = source.one;
}

interface DirectoryRenameGuide {
  /** Destinations not paired by exact renames, by path (idx_map). */
  unpairedByPath: Map<string, FilePair>;
  /** Source directory → the target directory most of its exact renames went to (dir_rename_guess). */
  likelyTarget: Map<string, string>;
}

interface Candidate {
  /** Index into the destinations; -1 for an empty slot. */
  destination: number;
  source: number;
  score: number;
  nameScore: number;
}

/** score_compare(): empty slots last, then by score, then same basename first. */
function compareCandidates(a: Candidate, b: Candidate): number {
  if (a.destination < 0) return b.destination >= 0 ? 1 : 0;
  if (b.destination < 0) return -1;
  if (a.score === b.score) return b.nameScore - a.nameScore;
  return b.score - a.score;
}

/** dir_rename_already_determinable(): does the leading target beat the runner-up plus the unknowns? */
function directoryRenameDeterminable(targets: GitStrMap<number>): boolean {
  let first = 0;
  let second = 0;
  let unknown = 0;
  for (const [target, count] of targets.entries()) {
    if (target === UNKNOWN_DIR) unknown = count;
    else if (count >= first) {
      second = first;
      first = count;
    } else if (count >= second) {
      second = count;
    }
  }
  return first > second + unknown;
}
