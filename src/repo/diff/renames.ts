/**
 * Rename detection as `git diff -M` runs it (diffcore-rename.c diffcore_rename_extended() without
 * copies, breaks or merge-ort's extras), also what `git blame` uses to follow a file:
 *   1. exact: a deleted file with the destination's blob (for symlinks and submodules also its
 *      mode), one with the same file name preferred, each source used once;
 *   2. basename: a remaining source and destination whose file name is unique among the remaining
 *      ones of their side pair up if at least 75 % similar;
 *   3. matrix: every remaining destination against every remaining source (unless there are more
 *      than 1000 × 1000 pairs, git's diff.renameLimit), the best four per destination kept, all
 *      taken by decreasing similarity while at least 50 %.
 * Similarity is git's estimate (diffcore-delta.c): bytes of spans the files share over the larger
 * size, on a scale of 0..60000; only regular files score above 0.
 */
import { oidToHex, type Oid } from '../../git/oid.js';
import { hashSpans } from '../merge/spanHash.js';
import type { Slicer } from '../slices.js';
import { blobBatches, sizesOf } from './batchedReads.js';
import type { FileVersion } from './treeChanges.js';

/** diffcore.h MAX_SCORE and DEFAULT_RENAME_SCORE (50 %). */
export const SCORE_MAX = 60000;
export const RENAME_SCORE_MIN = 30000;
/** find_basename_matches() asks for half way between the minimum and a perfect score (75 %). */
const BASENAME_SCORE_MIN = RENAME_SCORE_MIN + Math.trunc(0.5 * (SCORE_MAX - RENAME_SCORE_MIN));
/** diff.renameLimit's default: no similarity matrix beyond 1000 × 1000 pairs. */
export const RENAME_LIMIT = 1000;
/** find_identical_files(): at most this many identical sources are looked at per destination. */
const IDENTICAL_SOURCES_MAX = 100;
/** NUM_CANDIDATE_PER_DST. */
const CANDIDATES_PER_DESTINATION = 4;

export interface RenameSide {
  path: string;
  version: FileVersion;
}

export interface RenameMatch {
  /** Index into the sources. */
  source: number;
  /** 0..60000; SCORE_MAX for an exact rename. */
  score: number;
}

export interface BlobAccess {
  readBlob(oid: Oid): Promise<Buffer>;
  /** 0 for a blob that is not stored. */
  blobSize(oid: Oid): Promise<number>;
  /** Batched forms, when the access has them: many blobs or sizes in one read. */
  readBlobs?(oids: readonly Oid[]): Promise<Buffer[]>;
  blobSizes?(oids: readonly Oid[]): Promise<number[]>;
}

const isRegular = (version: FileVersion) => version.mode === '100644' || version.mode === '100755';
const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/**
 * Pairs destinations (added files) with sources (deleted files); sides in path order. The slicer,
 * when given, lets the event loop run between destinations of the basename and matrix steps and
 * between batches of blobs read. Blobs are read in batches, sizes first: only those of pairs
 * their sizes do not rule out, as git reads them.
 */
export async function detectRenames(
  sources: readonly RenameSide[],
  destinations: readonly RenameSide[],
  blobs: BlobAccess,
  slicer?: Slicer,
): Promise<Map<number, RenameMatch>> {
  const matches = new Map<number, RenameMatch>();
  if (sources.length === 0 || destinations.length === 0) return matches;
  const used = new Uint8Array(sources.length);
  const record = (destination: number, source: number, score: number) => {
    matches.set(destination, { source, score });
    used[source] = 1;
  };

  // 1. Exact renames.
  const byBlob = new Map<string, number[]>();
  sources.forEach((source, i) => {
    const key = oidToHex(source.version.oid);
    const list = byBlob.get(key);
    if (list) list.push(i);
    else byBlob.set(key, [i]);
  });
  destinations.forEach((destination, d) => {
    let best = -1;
    let bestScore = -1;
    let budget = IDENTICAL_SOURCES_MAX;
    for (const s of byBlob.get(oidToHex(destination.version.oid)) ?? []) {
      const source = sources[s];
      if ((!isRegular(source.version) || !isRegular(destination.version)) && source.version.mode !== destination.version.mode) continue;
      if (used[s]) continue;
      const score = 1 + (baseName(source.path) === baseName(destination.path) ? 1 : 0);
      if (score > bestScore) {
        best = s;
        bestScore = score;
        if (score === 2) break;
      }
      if (--budget === 0) break;
    }
    if (best >= 0) record(d, best, SCORE_MAX);
  });

  const similarity = new Similarity(blobs, slicer);

  // 2. Unique basenames.
  let remaining = sources.map((_, i) => i).filter((i) => !used[i]);
  const sourceByName = new Map<string, number>();
  for (const s of remaining) {
    const name = baseName(sources[s].path);
    sourceByName.set(name, sourceByName.has(name) ? -1 : s);
  }
  const destinationByName = new Map<string, number>();
  destinations.forEach((destination, d) => {
    if (matches.has(d)) return;
    const name = baseName(destination.path);
    destinationByName.set(name, destinationByName.has(name) ? -1 : d);
  });
  // Without merge-ort's directory-rename guesses, only unique names on both sides pair up; each
  // destination has at most one such source, so the pairs are known before any is scored.
  const namePairs: Array<[number, number]> = [];
  for (const s of remaining) {
    const name = baseName(sources[s].path);
    const d = destinationByName.get(name);
    if (d === undefined || d < 0 || sourceByName.get(name) !== s || matches.has(d)) continue;
    namePairs.push([s, d]);
  }
  await similarity.read(namePairs.map(([s, d]) => [sources[s].version, destinations[d].version]), BASENAME_SCORE_MIN);
  for (const [s, d] of namePairs) {
    await slicer?.pause();
    const score = similarity.estimate(sources[s].version, destinations[d].version, BASENAME_SCORE_MIN);
    if (score >= BASENAME_SCORE_MIN) record(d, s, score);
  }

  // 3. The similarity matrix.
  remaining = remaining.filter((s) => !used[s]);
  const open = destinations.map((_, d) => d).filter((d) => !matches.has(d));
  if (open.length === 0 || remaining.length === 0 || open.length * remaining.length > RENAME_LIMIT * RENAME_LIMIT) return matches;
  const matrix: Candidate[] = [];
  await similarity.readSizes([...remaining.map((s) => sources[s].version), ...open.map((d) => destinations[d].version)]);
  for (const d of open) {
    await slicer?.pause();
    await similarity.read(remaining.map((s) => [sources[s].version, destinations[d].version]), RENAME_SCORE_MIN);
    const best: Candidate[] = Array.from({ length: CANDIDATES_PER_DESTINATION }, () => ({ destination: -1, source: -1, score: 0, nameScore: 0 }));
    for (const s of remaining) {
      const candidate: Candidate = {
        destination: d,
        source: s,
        score: similarity.estimate(sources[s].version, destinations[d].version, RENAME_SCORE_MIN),
        nameScore: baseName(sources[s].path) === baseName(destinations[d].path) ? 1 : 0,
      };
      // record_if_better(): replace the worst kept candidate if this one beats it.
      let worst = 0;
      for (let i = 1; i < CANDIDATES_PER_DESTINATION; i++) if (compareCandidates(best[i], best[worst]) > 0) worst = i;
      if (compareCandidates(best[worst], candidate) > 0) best[worst] = candidate;
    }
    matrix.push(...best);
  }
  matrix.sort(compareCandidates); // stable, as git's STABLE_QSORT
  for (const candidate of matrix) {
    if (candidate.destination < 0 || candidate.score < RENAME_SCORE_MIN) break;
    if (matches.has(candidate.destination) || used[candidate.source]) continue;
    record(candidate.destination, candidate.source, candidate.score);
  }
  return matches;
}

interface Candidate {
  destination: number;
  source: number;
  score: number;
  nameScore: number;
}

/** score_compare(): empty slots last, then higher score, then same file name first. */
function compareCandidates(a: Candidate, b: Candidate): number {
  if (a.destination < 0) return b.destination >= 0 ? 1 : 0;
  if (b.destination < 0) return -1;
  if (a.score === b.score) return b.nameScore - a.nameScore;
  return b.score - a.score;
}

/**
 * estimate_similarity(), with each blob's size read once and its span hashes computed once; `read`
 * reads what a set of pairs needs before `estimate` scores them.
 */
class Similarity {
  private readonly sizes = new Map<string, number>();
  private readonly spans = new Map<string, Map<number, number>>();

  constructor(
    private readonly blobs: BlobAccess,
    private readonly slicer?: Slicer,
  ) {}

  /** Reads the sizes of the regular files' blobs not read yet, in one read. */
  async readSizes(versions: Iterable<FileVersion>): Promise<void> {
    const wanted = new Map<string, Oid>();
    for (const version of versions) {
      const key = oidToHex(version.oid);
      if (isRegular(version) && !this.sizes.has(key)) wanted.set(key, version.oid);
    }
    const oids = [...wanted.values()];
    const sizes = await sizesOf(this.blobs, oids);
    oids.forEach((oid, i) => this.sizes.set(oidToHex(oid), sizes[i]));
  }

  /** Reads the sizes of the pairs' blobs, then, in batches, the blobs of the pairs the sizes do not rule out. */
  async read(pairs: ReadonlyArray<readonly [FileVersion, FileVersion]>, minimumScore: number): Promise<void> {
    await this.readSizes(pairs.flat());
    const wanted = new Map<string, Oid>();
    for (const [source, destination] of pairs) {
      if (this.readableMaxSize(source, destination, minimumScore) === 0) continue;
      for (const version of [source, destination]) {
        const key = oidToHex(version.oid);
        if (!this.spans.has(key)) wanted.set(key, version.oid);
      }
    }
    const oids = [...wanted.values()];
    for await (const { start, bodies } of blobBatches(this.blobs, oids, [...wanted.keys()].map((key) => this.sizes.get(key)))) {
      bodies.forEach((body, i) => this.spans.set(oidToHex(oids[start + i]), hashSpans(body)));
      await this.slicer?.pause();
    }
  }

  /** The score of a pair `read` has read for. */
  estimate(source: FileVersion, destination: FileVersion, minimumScore: number): number {
    const maxSize = this.readableMaxSize(source, destination, minimumScore);
    if (maxSize === 0) return 0;
    const sourceSpans = this.spans.get(oidToHex(source.oid))!;
    const destinationSpans = this.spans.get(oidToHex(destination.oid))!;
    let copied = 0;
    for (const [hash, count] of sourceSpans) {
      const other = destinationSpans.get(hash);
      if (other !== undefined) copied += Math.min(count, other);
    }
    return Math.trunc((copied * SCORE_MAX) / maxSize);
  }

  /** The larger size of a pair whose blobs are worth reading; 0 when its score is 0 unread. */
  private readableMaxSize(source: FileVersion, destination: FileVersion, minimumScore: number): number {
    if (!isRegular(source) || !isRegular(destination)) return 0;
    const sourceSize = this.sizes.get(oidToHex(source.oid))!;
    const destinationSize = this.sizes.get(oidToHex(destination.oid))!;
    const maxSize = Math.max(sourceSize, destinationSize);
    const delta = maxSize - Math.min(sourceSize, destinationSize);
    // Sizes too far apart cannot reach the minimum; git decides this before reading either blob.
    if (maxSize * (SCORE_MAX - minimumScore) < delta * SCORE_MAX) return 0;
    if (destinationSize === 0) return 0;
    return maxSize;
  }
}
