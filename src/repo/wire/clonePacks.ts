/**
 * Packs of clones, kept for the next clone of the same tips (what git's pack reuse with bitmaps and
 * JGit's cached packs give a server). A clone asks for every object its wants reach, or, shallow,
 * for those of the commits `deepen <n>` or `deepen-since` keeps, and commit ids fix that set for
 * good: the pack made for one clone is a right answer to every later clone of the same wants and
 * depth, however the refs move meanwhile (the wants are checked against the refs first, each time).
 * So a repeat clone costs a copy instead of a walk of the history, a plan and a read of every
 * object's pack-ready form.
 *
 * Only a pack whose objects all had a stored form is kept: one with objects deflated while the
 * client waited because the deflate cache had not reached them is larger than the forms would make
 * it, and would be served so for as long as it stays (an object rebuilt whole because a shallow
 * cut leaves its delta's base out is what every later pack does too). Memory is bounded three times: a pack over `entryBytesMax` is
 * never kept (its recording stops there), the packs together stay under `bytesMax`, the least
 * recently served going first, and the recordings of clones under way together hold at most
 * `recordingBytesMax` (past it, the recording that would go over stops: many concurrent clones,
 * or slow readers, cannot make the cache hold more than that).
 *
 * A push moves the tips, and the next clone asks for new wants: no kept pack answers it. But the
 * pack kept for the old tips holds every object they reach, so when each old tip is an ancestor of
 * a new want, the new pack is the old one grown by the objects the new commits bring (uploadPack.ts
 * prepare): what git's pack reuse does with the pack it has, and JGit's cached packs with a pack
 * plus the objects after it. `find` offers the pack last kept for a clone of the whole history of
 * the project in the same entry form, with its tips and the ids it holds, on a miss.
 */
import { oidToHex, type Oid } from '../../git/oid.js';
import { LruCache } from '../../store/lruCache.js';

/** What shapes a clone's pack besides its wants: the entry form the client takes, and how deep a shallow clone goes. */
export interface ClonePackShape {
  ofsDelta: boolean;
  /** `deepen <n>` (not relative), or null for the whole history. */
  depth: number | null;
  /** `deepen-since <time>`, or null. */
  deepenSince: number | null;
  /** A partial clone's filter, as filterKey writes it ('' for none): its pack is kept apart. */
  filter?: string;
}

export interface ClonePackLimits {
  /** Bytes all kept packs may take together. */
  bytesMax: number;
  /** The largest pack kept; recording a larger one stops when it passes this. */
  entryBytesMax: number;
  /** Bytes all recordings under way may hold together. */
  recordingBytesMax: number;
}

/** A kept pack: the pieces it was streamed in (about a megabyte each), kept and served without joining them. */
export interface KeptPack {
  pieces: readonly Buffer[];
  /** The clone's wants. */
  tips: readonly Oid[];
  /** The ids of its objects, 20 bytes each, in pack order. */
  ids: Buffer;
}

export class ClonePacks {
  private readonly packs: LruCache<string, KeptPack>;
  /** The key of the pack last kept for a clone of the whole history, by project and entry form. */
  private readonly latest = new Map<string, string>();
  /**
   * Clones answered from a kept pack (hits), with a kept pack grown by the objects of newer commits
   * (grown), and planned whole (misses), for metrics and tests.
   */
  hits = 0;
  grown = 0;
  misses = 0;
  /** Bytes the recordings under way hold. */
  recordingBytes = 0;

  constructor(readonly limits: ClonePackLimits) {
    this.packs = new LruCache(limits.bytesMax, limits.entryBytesMax, (pack) => pack.pieces.reduce((bytes, piece) => bytes + piece.length, pack.ids.length));
  }

  /** Bytes the kept packs take. */
  get bytesUsed(): number {
    return this.packs.bytesUsed;
  }

  /**
   * The pack kept for a clone of `wants` in `project` of this shape, if one is kept. Else a
   * recording for the pack about to be made, and, for a clone of the whole history, the pack last
   * kept for one in the same entry form, which that pack may grow (the caller checks that it may).
   * Counts the hit or the miss.
   */
  find(project: number, wants: readonly Oid[], shape: ClonePackShape): { pack: readonly Buffer[] } | { recording: PackRecording; grows?: KeptPack } {
    const key = packKey(project, wants, shape);
    const pack = this.packs.get(key);
    if (pack) {
      this.hits++;
      return { pack: pack.pieces };
    }
    this.misses++;
    const whole = shape.depth === null && shape.deepenSince === null;
    const latest = whole ? this.latest.get(latestKey(project, shape)) : undefined;
    const grows = latest === undefined ? undefined : this.packs.get(latest);
    // The pack it named has gone (the least recently served go first): so does the name.
    if (latest !== undefined && !grows) this.latest.delete(latestKey(project, shape));
    return { recording: new PackRecording(this, key, whole ? latestKey(project, shape) : null, wants), ...(grows ? { grows } : {}) };
  }

  /** A miss of `find` whose pack grows the kept one it offered: counted as grown, not as a miss. */
  grew(): void {
    this.misses--;
    this.grown++;
  }

  /** Keeps a recorded pack (PackRecording.finish); `latest`: the pack is of a whole history, to grow later. */
  keep(key: string, pack: KeptPack, latest: string | null): void {
    this.packs.set(key, pack);
    if (latest !== null) this.latest.set(latest, key);
  }

  /** Forgets a dropped project's packs (unreachable anyway: project numbers are never reused). */
  forgetProject(project: number): void {
    const prefix = `${project}:`;
    this.packs.deleteWhere((key) => key.startsWith(prefix));
    for (const key of [...this.latest.keys()]) if (key.startsWith(prefix)) this.latest.delete(key);
  }
}

function latestKey(project: number, shape: ClonePackShape): string {
  return `${project}:${shape.ofsDelta ? 'ofs' : 'ref'}:${shape.filter ?? ''}`;
}

/**
 * The wants in order and without repeats (git asks for each tip once, but in any order), and the
 * shape. Nothing else of a clone's request shapes its pack today: the planner reads the wants, the
 * haves, the client's shallow commits, the deepen and the filter (a kept pack answers no request with haves,
 * shallow commits, `deepen-not` or `deepen-relative`), and the stream the delta form and
 * `thin-pack`, which needs haves. A capability that comes to shape the pack (`include-tag`,
 * accepted and not acted on) joins this key.
 */
function packKey(project: number, wants: readonly Oid[], shape: ClonePackShape): string {
  const tips = [...new Set(wants.map(oidToHex))].sort();
  return `${project}:${shape.ofsDelta ? 'ofs' : 'ref'}:${shape.filter ?? ''}:${shape.depth ?? ''}:${shape.deepenSince ?? ''}:${tips.join(',')}`;
}

/**
 * The raw bytes of one pack as it is streamed; kept when it ends whole and made of stored forms
 * alone. Whoever streams calls finish() or abandon() at the end, however it ends (a client gone
 * mid-stream included), so its bytes stop counting against the recordings' bound.
 */
export class PackRecording {
  private pieces: Buffer[] | null = [];
  private bytes = 0;

  constructor(
    private readonly packs: ClonePacks,
    private readonly key: string,
    private readonly latest: string | null,
    private readonly tips: readonly Oid[],
  ) {}

  /** Whether the recording still goes on (it stops past its limit, or when told the pack is not worth keeping). */
  get recording(): boolean {
    return this.pieces !== null;
  }

  /** Pack bytes, in stream order; kept as they are, so the caller must not write to `bytes` afterwards. */
  add(bytes: Buffer): void {
    if (!this.pieces) return;
    const { entryBytesMax, recordingBytesMax } = this.packs.limits;
    if (this.bytes + bytes.length > entryBytesMax || this.packs.recordingBytes + bytes.length > recordingBytesMax) return this.abandon();
    this.pieces.push(bytes);
    this.bytes += bytes.length;
    this.packs.recordingBytes += bytes.length;
  }

  /** The pack is not to be kept (an object with no form went out, or the stream ended early). */
  abandon(): void {
    this.stop();
  }

  /** The pack's last bytes were added: it is kept, with the ids of its objects (`ids`, asked only then), unless the recording stopped. */
  finish(ids: () => Buffer): void {
    const pieces = this.stop();
    if (pieces) this.packs.keep(this.key, { pieces, tips: this.tips.map((tip) => Buffer.from(tip)), ids: ids() }, this.latest);
  }

  private stop(): Buffer[] | null {
    const pieces = this.pieces;
    this.pieces = null;
    this.packs.recordingBytes -= this.bytes;
    this.bytes = 0;
    return pieces;
  }
}
