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
  readBlob(oid: Oid): Buffer;
  blobSize(oid: Oid): number;
}

const isRegular = (version: FileVersion) => version.mode === '100644' || version.mode === '100755';
const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/**
 * Pairs destinations (added files) with sources (deleted files); sides in path order. The slicer,
 * when given, lets the event loop run between destinations of the basename and matrix steps.
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

  const similarity = new Similarity(blobs);

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
  for (const s of remaining) {
    await slicer?.pause();
    const name = baseName(sources[s].path);
    const d = destinationByName.get(name);
    // Without merge-ort's directory-rename guesses, only unique names on both sides pair up.
    if (d === undefined || d < 0 || sourceByName.get(name) !== s || matches.has(d)) continue;
    const score = similarity.estimate(sources[s].version, destinations[d].version, BASENAME_SCORE_MIN);
    if (score >= BASENAME_SCORE_MIN) record(d, s, score);
  }

  // 3. The similarity matrix.
  remaining = remaining.filter((s) => !used[s]);
  const open = destinations.map((_, d) => d).filter((d) => !matches.has(d));
  if (open.length === 0 || remaining.length === 0 || open.length * remaining.length > RENAME_LIMIT * RENAME_LIMIT) return matches;
  const matrix: Candidate[] = [];
  for (const d of open) {
    await slicer?.pause();
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

/** estimate_similarity(), with each blob's span hashes computed once. */
class Similarity {
  private readonly spans = new Map<string, Map<number, number>>();

  constructor(private readonly blobs: BlobAccess) {}

  estimate(source: FileVersion, destination: FileVersion, minimumScore: number): number {
    if (!isRegular(source) || !isRegular(destination)) return 0;
    const sourceSize = this.blobs.blobSize(source.oid);
    const destinationSize = this.blobs.blobSize(destination.oid);
    const maxSize = Math.max(sourceSize, destinationSize);
    const delta = maxSize - Math.min(sourceSize, destinationSize);
    // Sizes too far apart cannot reach the minimum; git decides this before reading either blob.
    if (maxSize * (SCORE_MAX - minimumScore) < delta * SCORE_MAX) return 0;
    if (destinationSize === 0) return 0;
    const sourceSpans = this.spansOf(source.oid);
    const destinationSpans = this.spansOf(destination.oid);
    let copied = 0;
    for (const [hash, count] of sourceSpans) {
      const other = destinationSpans.get(hash);
      if (other !== undefined) copied += Math.min(count, other);
    }
    return Math.trunc((copied * SCORE_MAX) / maxSize);
  }

  private spansOf(oid: Oid): Map<number, number> {
    const key = oidToHex(oid);
    let spans = this.spans.get(key);
    if (!spans) {
      spans = hashSpans(this.blobs.readBlob(oid));
      this.spans.set(key, spans);
    }
    return spans;
  }
}
