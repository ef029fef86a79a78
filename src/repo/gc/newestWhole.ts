/**
 * Newest whole: a step of a collection (collect.ts) that turns around the delta chains of the
 * blobs the working trees and branch heads reach (the *hot* blobs), so each is kept whole and the
 * versions before it are deltas on the version after them, as git's pack-objects orders them
 * (newest whole, older versions as deltas backwards; Documentation/technical/pack-heuristics.txt).
 *
 * Why: a write through the API names the version it replaces as the delta base, so the deflate
 * cache keeps each new version as a delta on the one before; the newest version of a file edited
 * fifty times is at the end of a chain of fifty deltas. Once a collection keeps blobs as their forms
 * alone (collect.ts step 8), reading a current file would apply its whole chain: searching the
 * realistic history's working tree read 11 MB of files in 1.0 s instead of 0.13 s. Turned around,
 * a current file is one inflate, and the pack a clone copies is git's shape.
 *
 * For a hot blob H whose form is a delta, the *path* is its chain followed down (H, its base b1,
 * b1's base b2, ...) until a whole form, a hot blob, an object another path of this collection
 * touched, or a type other than blob. Its new forms: H whole; each b(i) a delta on b(i-1) when that
 * delta is worth keeping (packForm's rule, git's try_delta), else whole; a depth over
 * DELTA_DEPTH_MAX starts the chain again with a whole form. The last member's old base (when the
 * path was cut short there) only loses a dependent.
 *
 * Depths: each form records a depth, which must stay above its base's (so every chain ends, is
 * no deeper than recorded, and a collection removes a delta before its base) and at most
 * DELTA_DEPTH_MAX; a delta the deflate cache or a push adds records exactly its base's plus one (a
 * form rewritten whole by a collection may leave the forms on it recorded deeper than they are).
 * Members get their exact new depths. A member that rises takes the forms on it (those not on the
 * path) up with it, and the forms on those in turn: their depth is rewritten (their deltas stay as
 * they are). If one would pass DELTA_DEPTH_MAX, the path is cut before that member, which then
 * keeps its form. So when H's chain has grown by e versions since a collection made the previous
 * version whole, that version becomes a delta at depth e and the reversed chain below it sinks by
 * e, until the chain is full and a new one starts: about one whole form per DELTA_DEPTH_MAX
 * versions, as git keeps them.
 *
 * What the step knows of forms comes from the collection's listing and from the journal (a form a
 * writer adds during a collection is journalled, and the collector looks at it): FormIndex. A
 * form added after the collector last took the journal is found by the write itself, which reads
 * the journal (its read is checked at its commit) and leaves out every path one of those forms
 * would depend on. The store replaces a path's forms only when each is still what the plan read
 * (ProjectWriteTx.replaceForms), so nothing is changed on a stale plan. New bases are always newer
 * members of the same path, ending at a whole form: no chain can loop.
 */
import { promisify } from 'node:util';
import { deflate } from 'node:zlib';
import { OID_BYTES, type Oid } from '../../git/oid.js';
import { OidTable } from '../../git/oidTable.js';
import { packForm, type PackForm } from '../../git/packForm.js';
import type { FormChange, StoredEntry } from '../../store/types.js';
import { DELTA_DEPTH_MAX } from '../wire/packedForms.js';

const deflateAsync = promisify(deflate);

/** git's default pack compression, as the deflate cache uses. */
const DEFLATE_LEVEL = 6;
/** Bodies larger than this are not turned around on the event loop (no worker given): the path stops before them. */
const INLINE_BODY_BYTES_MAX = 1024 * 1024;
/** Bytes of bodies one path holds while its forms are made. */
const PATH_BYTES_MAX = 64 * 1024 * 1024;
/** Forms whose depth one path may shift; a path that would shift more is left as it is. */
const SHIFTED_MAX = 10_000;

/** A form made off the event loop: `body` against `base`, a delta when worth it (packForm's rule), else whole. */
export type FormOf = (body: Buffer, base: Buffer) => Promise<PackForm>;

/**
 * The delta forms of a project's kept objects: each one's base and depth, and for each base the
 * forms on it. About 160 bytes per delta form (two hash tables and a few arrays); a collection
 * stops filling it past a cap (collect.ts), and then leaves the step out.
 */
export class FormIndex {
  private readonly slots = new OidTable();
  private oids = Buffer.alloc(64 * OID_BYTES);
  private bases = Buffer.alloc(64 * OID_BYTES);
  private depths = new Uint8Array(64);
  private deltas = new Uint8Array(64);
  private count = 0;
  /** Lists of the entries on each base (heads by base id; a node per time an entry joined a list). */
  private readonly heads = new OidTable();
  private nodeEntry = new Int32Array(64);
  private nodeNext = new Int32Array(64);
  private nodes = 0;

  get size(): number {
    return this.count;
  }

  /** Records `oid`'s form: a delta on `base` at `depth`, or whole (`base` null). */
  set(oid: Uint8Array, base: Uint8Array | null, depth: number): void {
    let at = this.slots.get(oid);
    if (at < 0) {
      if (base === null) return;
      at = this.count++;
      this.grow();
      this.slots.add(oid, 0, at);
      this.oids.set(oid.subarray(0, OID_BYTES), at * OID_BYTES);
    } else if (base && this.deltas[at] === 1 && this.bases.compare(base, 0, OID_BYTES, at * OID_BYTES, (at + 1) * OID_BYTES) === 0) {
      this.depths[at] = depth;
      return;
    }
    if (!base) {
      this.deltas[at] = 0;
      this.depths[at] = 0;
      return;
    }
    this.bases.set(base.subarray(0, OID_BYTES), at * OID_BYTES);
    this.deltas[at] = 1;
    this.depths[at] = depth;
    const node = this.nodes++;
    if (node >= this.nodeEntry.length) {
      this.nodeEntry = grownInts(this.nodeEntry);
      this.nodeNext = grownInts(this.nodeNext);
    }
    this.nodeEntry[node] = at;
    this.nodeNext[node] = this.heads.get(base);
    this.heads.set(base, 0, node);
  }

  /** The base of `oid`'s form when it is a delta (a copy), else null. */
  baseOf(oid: Uint8Array): Oid | null {
    const at = this.slots.get(oid);
    return at >= 0 && this.deltas[at] === 1 ? Buffer.from(this.bases.subarray(at * OID_BYTES, (at + 1) * OID_BYTES)) : null;
  }

  /** The depth of `oid`'s form: 0 when it is whole or not known as a delta. */
  depthOf(oid: Uint8Array): number {
    const at = this.slots.get(oid);
    return at >= 0 && this.deltas[at] === 1 ? this.depths[at] : 0;
  }

  /** The objects whose form is now a delta on `base` (copies). */
  dependents(base: Uint8Array): Oid[] {
    const out: Oid[] = [];
    const seen = new Set<number>();
    for (let node = this.heads.get(base); node >= 0; node = this.nodeNext[node]) {
      const at = this.nodeEntry[node];
      if (seen.has(at) || this.deltas[at] !== 1 || this.bases.compare(base, 0, OID_BYTES, at * OID_BYTES, (at + 1) * OID_BYTES) !== 0) continue;
      seen.add(at);
      out.push(Buffer.from(this.oids.subarray(at * OID_BYTES, (at + 1) * OID_BYTES)));
    }
    return out;
  }

  private grow(): void {
    if (this.count <= this.depths.length) return;
    const slots = this.depths.length * 2;
    const oids = Buffer.alloc(slots * OID_BYTES);
    this.oids.copy(oids);
    this.oids = oids;
    const bases = Buffer.alloc(slots * OID_BYTES);
    this.bases.copy(bases);
    this.bases = bases;
    const depths = new Uint8Array(slots);
    depths.set(this.depths);
    this.depths = depths;
    const deltas = new Uint8Array(slots);
    deltas.set(this.deltas);
    this.deltas = deltas;
  }
}

function grownInts(values: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(values.length * 2);
  grown.set(values);
  return grown;
}

/** One path turned around: the store's changes, and what the index records once they are made. */
export interface TurnPlan {
  /** The hot blob first, then the versions below it. */
  members: Oid[];
  changes: FormChange[];
  /** Every id whose form or depth the plan changes: a form made on one meanwhile leaves the plan out. */
  affected: OidTable;
  /** The index's entries after the change: [id, base or null, depth]. */
  after: Array<[Oid, Oid | null, number]>;
}

export interface PlanReads {
  objectSizes(oids: readonly Oid[]): Promise<Array<number | undefined>>;
  getObjects(oids: readonly Oid[]): Promise<Array<{ type: string; body: Buffer } | undefined>>;
  getDeflated(oids: readonly Oid[]): Promise<Array<{ deflated: Buffer; delta?: { base: Oid; bytes: number; depth: number } } | undefined>>;
}

/**
 * The plan that turns `head`'s chain around; null when there is nothing worth doing (its form is
 * whole, or its base is hot); 'blocked' when another plan not yet written changes what this one
 * would (`taken`: a path stops before them, and a plan whose depths would reach one waits), so it
 * can be planned again once that one is written.
 */
export async function planTurn(
  head: Oid,
  index: FormIndex,
  isHot: (oid: Oid) => boolean,
  taken: OidTable,
  reads: PlanReads,
  formOf: FormOf | undefined,
  pause: () => Promise<void>,
): Promise<TurnPlan | 'blocked' | null> {
  if (taken.has(head)) return 'blocked';
  let members: Oid[] = [head];
  const onPath = new OidTable();
  onPath.add(head);
  let blocked = false;
  for (let base = index.baseOf(head); base && members.length <= DELTA_DEPTH_MAX; base = index.baseOf(base)) {
    blocked = taken.has(base);
    if (isHot(base) || blocked || onPath.has(base)) break;
    members.push(base);
    onPath.add(base);
  }
  if (members.length < 2) return blocked ? 'blocked' : null;
  // The bodies of a path are held at once: a path stops before the member that would pass PATH_BYTES_MAX.
  const sizes = await reads.objectSizes(members);
  let held = 0;
  const fits = sizes.findIndex((size) => (held += size ?? Infinity) > PATH_BYTES_MAX);
  if (fits >= 0) members = members.slice(0, fits);
  if (members.length < 2) return null;
  const bodies = await reads.getObjects(members);
  // Blobs only (a delta resolves to its base's type), and on the loop only bodies it can take.
  const usable = bodies.findIndex((object) => !object || object.type !== 'blob' || (!formOf && object.body.length > INLINE_BODY_BYTES_MAX));
  if (usable >= 0) members = members.slice(0, usable);
  if (members.length < 2) return null;

  // New forms, newest first: the head whole, each version below a delta on the one above when worth it.
  const forms: Array<{ deflated: Buffer; delta: { base: Oid; bytes: number; depth: number } | null }> = [];
  const newDepth: number[] = [];
  for (let i = 0; i < members.length; i++) {
    const body = bodies[i]!.body;
    let made: PackForm = i === 0 ? { deflated: await deflateAsync(body, { level: DEFLATE_LEVEL }), deltaBytes: null } : await formAgainst(body, bodies[i - 1]!.body, formOf);
    let depth = made.deltaBytes === null ? 0 : newDepth[i - 1] + 1;
    if (depth > DELTA_DEPTH_MAX) {
      made = { deflated: await deflateAsync(body, { level: DEFLATE_LEVEL }), deltaBytes: null };
      depth = 0;
    }
    newDepth.push(depth);
    forms.push({ deflated: made.deflated, delta: made.deltaBytes === null ? null : { base: members[i - 1], bytes: made.deltaBytes, depth } });
    // Without a worker each delta is made on the event loop: a turn between them once a slice is up.
    await pause();
  }

  // The forms on a member that rises (not on the path) rise with it, and those on them; cut the path where one would pass the limit.
  let shifted: Array<{ oid: Oid; base: Oid; depth: number; was: number }> = [];
  for (let cut = members.length; ; ) {
    const kept = new OidTable();
    for (const member of members.slice(0, cut)) kept.add(member);
    const depthOf = new Map<string, number>();
    members.slice(0, cut).forEach((member, i) => depthOf.set(member.toString('latin1'), newDepth[i]));
    shifted = [];
    let failedAt = -1;
    for (let i = 0; i < cut && failedAt < 0; i++) {
      // A member that sinks leaves the forms on it deeper than it, as they must be.
      if (newDepth[i] <= index.depthOf(members[i])) continue;
      const queue = index.dependents(members[i]).filter((oid) => !kept.has(oid));
      while (queue.length > 0 && failedAt < 0) {
        const oid = queue.shift()!;
        const base = index.baseOf(oid)!;
        const was = index.depthOf(oid);
        const depth = depthOf.get(base.toString('latin1'))! + 1;
        if (depth <= was) continue;
        if (depth > DELTA_DEPTH_MAX || taken.has(oid) || shifted.length >= SHIFTED_MAX) {
          failedAt = i;
          blocked ||= taken.has(oid);
          break;
        }
        depthOf.set(oid.toString('latin1'), depth);
        shifted.push({ oid, base, depth, was });
        queue.push(...index.dependents(oid));
      }
    }
    if (failedAt < 0) {
      members = members.slice(0, cut);
      break;
    }
    cut = failedAt;
    if (cut < 2) return blocked ? 'blocked' : null;
  }

  const affected = new OidTable();
  const changes: FormChange[] = [];
  const after: TurnPlan['after'] = [];
  members.forEach((oid, i) => {
    affected.add(oid);
    const form = forms[i];
    changes.push({ oid, was: { base: index.baseOf(oid), depth: index.depthOf(oid) }, form: { deflated: form.deflated, ...(form.delta ? { delta: form.delta } : {}) } });
    after.push([oid, form.delta?.base ?? null, newDepth[i]]);
  });
  const current = shifted.length > 0 ? await reads.getDeflated(shifted.map(({ oid }) => oid)) : [];
  for (const [i, { oid, base, depth, was }] of shifted.entries()) {
    const form = current[i];
    // Changed since the index read it (only a collection changes forms): leave the plan out.
    if (!form?.delta || !form.delta.base.equals(base) || form.delta.depth !== was) return null;
    affected.add(oid);
    changes.push({ oid, was: { base, depth: was }, form: { deflated: form.deflated, delta: { base, bytes: form.delta.bytes, depth } } });
    after.push([oid, base, depth]);
  }
  return { members, changes, affected, after };
}

/** `body` against `base` on the worker, else (none given, or it failed) on the loop when small, else whole. */
async function formAgainst(body: Buffer, base: Buffer, formOf: FormOf | undefined): Promise<PackForm> {
  if (formOf) {
    try {
      return await formOf(body, base);
    } catch {
      // The worker is gone (the service is stopping): as without one.
    }
  }
  if (body.length <= INLINE_BODY_BYTES_MAX && base.length <= INLINE_BODY_BYTES_MAX) return packForm(body, base, DEFLATE_LEVEL);
  return { deflated: await deflateAsync(body, { level: DEFLATE_LEVEL }), deltaBytes: null };
}

/** Whether a form described in a write's journal would depend on what `plan` changes. */
export function dependsOnPlan(plan: TurnPlan, entry: StoredEntry | undefined): boolean {
  return entry?.formBase !== null && entry?.formBase !== undefined && plan.affected.has(entry.formBase);
}
