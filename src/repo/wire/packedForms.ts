/**
 * Keeping the forms a received pack carried: each entry's zlib stream is stored as the object's
 * pack-ready form (src/store/types.ts DeflatedObject), a delta included when its base has a form
 * already and the chain stays within DELTA_DEPTH_MAX. So a history that came in as git's pack goes
 * out (clones, fetches) with git's deltas, and nothing was compressed or searched to get them: git's
 * pack reuse (pack-objects.c, reuse of existing deltas) does the same.
 *
 * Forms are a capability of the store (src/store/asyncTypes.ts PackFormWrites): a store without it
 * keeps the received objects whole, and the layers above deflate what they send.
 */
import type { Oid } from '../../git/oid.js';
import type { PackObject } from '../../git/pack.js';
import { parentsFirst } from '../../git/packOrder.js';
import type { AsyncStore, FormHold, PackFormWrites, ReceivedForm } from '../../store/asyncTypes.js';
import type { DeltaForm } from '../../store/types.js';
import type { WriteTx } from '../repo.js';
import { Slicer } from '../slices.js';

/** Longest delta chain kept or sent: git's default pack.depth. */
export const DELTA_DEPTH_MAX = 50;

/** Received entries handed to the store in one call: about a millisecond of its work. */
const FORMS_PER_CALL = 1_000;

/**
 * Entries (and their streams' bytes) stored per write by storeFormsAlone: the write runs in one
 * piece on the event loop (about 8 µs an entry in LMDB), so it is kept to some 16 ms.
 */
const FORMS_ALONE_PER_WRITE = 2_048;
/** Commits per such write: a seed's 2,048 held the event loop a quarter of a second in a server just started. */
export const COMMITS_ALONE_PER_WRITE = 128;
/**
 * Entries per such write under a push's hold (HeldPushForms): each is also looked for in the
 * project's tables, which others write (some 40 µs an entry in a server just started, not 8): a
 * push's 2,000 blobs in one write held the event loop 80 to 230 ms.
 */
export const HELD_FORMS_PER_WRITE = 512;
const FORMS_ALONE_BYTES_PER_WRITE = 4 * 1024 * 1024;

/** Bytes stored per write by storeReceivedObjectsInWrites (and at most the store's writeObjectsMax objects). */
const RECEIVED_WRITE_BYTES = 4 * 1024 * 1024;

/**
 * The received objects that carry their pack entry, ordered so every delta comes after its base
 * (by depth in the pack; a thin pack's bases outside it count as depth 0).
 */
export function formsInBaseOrder(objects: readonly PackObject[]): PackObject[] {
  // A counting sort on the depth (a pack's chains are at most a few thousand deep): equal depths
  // keep their order, and 40,000 objects cost two passes rather than a comparison sort.
  let deepest = 0;
  for (const object of objects) if (object.packed && object.deltaDepth > deepest) deepest = object.deltaDepth;
  const starts = new Array<number>(deepest + 2).fill(0);
  for (const object of objects) if (object.packed) starts[object.deltaDepth + 1]++;
  for (let depth = 1; depth < starts.length; depth++) starts[depth] += starts[depth - 1];
  const ordered = new Array<PackObject>(starts[starts.length - 1]);
  for (const object of objects) if (object.packed) ordered[starts[object.deltaDepth]++] = object;
  return ordered;
}

/** The transaction's pack-ready form writes, or null when its store keeps no forms. */
function formWrites(tx: WriteTx): PackFormWrites | null {
  const { getDeflated, putDeflated, putDeflatedDelta, putObjectAsForm, putObjectsAsForms } = tx;
  return getDeflated && putDeflated && putDeflatedDelta && putObjectAsForm && putObjectsAsForms ? (tx as WriteTx & PackFormWrites) : null;
}

/**
 * Stores `object`'s entry as its pack-ready form when the store has none: a whole stream as it is,
 * a delta when its base has a form and the chain is short enough. An object left without one is
 * deflated whole later (src/service/deflateCache.ts). False only when a delta's base has no form yet.
 */
export async function keepPackedForm(tx: WriteTx, object: PackObject): Promise<boolean> {
  const packed = object.packed;
  const forms = formWrites(tx);
  if (!packed || !forms) return true;
  if (!packed.base) {
    forms.putDeflated(object.oid, packed.deflated);
    return true;
  }
  const delta = await deltaFormOf(forms, packed.base, packed.dataBytes);
  // The base has no form yet: false, so a caller storing in several writes can try again later.
  if (delta === undefined) return false;
  if (delta) await forms.putDeflatedDelta(object.oid, delta, packed.deflated);
  return true;
}

/** A received delta as a form: undefined when its base has no form yet, null when the chain would be too deep. */
async function deltaFormOf(forms: PackFormWrites, base: Oid, bytes: number): Promise<DeltaForm | null | undefined> {
  const [baseForm] = await forms.getDeflated([base]);
  if (!baseForm) return undefined;
  const depth = (baseForm.delta?.depth ?? 0) + 1;
  return depth > DELTA_DEPTH_MAX ? null : { base, bytes, depth };
}

/**
 * Stores received objects (a checked pack's, or a seed's): trees and blobs first, bases before
 * their deltas, each as its pack entry alone when the store can keep it (putObjectsAsForms: the
 * history takes about the room git's pack does, and nothing is written twice), else whole with
 * the entry kept beside it when possible; then commits and tags, parents first, whole (the commit
 * index needs them) with their entries beside them. Returns the objects whose entry could not be
 * kept yet because a delta's base has no form: a caller storing in several writes tries them
 * again with keepPackedForm once everything is stored.
 */
export async function storeReceivedObjects(tx: WriteTx, objects: readonly PackObject[]): Promise<PackObject[]> {
  const late: PackObject[] = [];
  const contents = objects.filter((object) => object.type === 'tree' || object.type === 'blob');
  const forms = formWrites(tx);
  const carried = formsInBaseOrder(contents);
  // The store decides each delta's depth from its base's form (put here, or stored). In batches,
  // the event loop given a turn between them when a slice's time is up (a history's 40,000 entries
  // took most of a second).
  const kept: boolean[] = [];
  if (forms) {
    const slicer = new Slicer();
    for (let start = 0; start < carried.length; start += FORMS_PER_CALL) {
      kept.push(...(await forms.putObjectsAsForms(carried.slice(start, start + FORMS_PER_CALL).map(receivedForm), DELTA_DEPTH_MAX)));
      await slicer.pause();
    }
  }
  for (const [index, object] of [...carried, ...contents.filter((object) => !object.packed)].entries()) {
    if (kept[index]) continue;
    tx.putObjectWithId(object.oid, object.type, object.body);
    if (!(await keepPackedForm(tx, object))) late.push(object);
  }
  const others = parentsFirst(objects.filter((object) => object.type !== 'tree' && object.type !== 'blob'));
  for (const object of others) tx.putObjectWithId(object.oid, object.type, object.body);
  for (const object of formsInBaseOrder(others)) if (!(await keepPackedForm(tx, object))) late.push(object);
  return late;
}

/**
 * Stores received trees and blobs that carry their pack entry (`carried`, in base order) as their
 * forms alone, in writes of their own (AsyncStore.putFormsAlone), when the store offers that: for
 * objects nobody refers to yet (a git seed's). Returns those it did not keep (all of them when the
 * store does not offer it), which the caller stores through its writes.
 */
export async function storeFormsAlone(store: AsyncStore, project: number, carried: readonly PackObject[]): Promise<PackObject[]> {
  if (!store.putFormsAlone) return [...carried];
  const answers = await storeReceivedFormsAlone(store, project, carried.map(receivedForm));
  return carried.filter((_, index) => !answers[index]);
}

/**
 * storeFormsAlone for entries given as the store takes them (bases first): whether each was kept,
 * all false when the store does not offer it. `perWrite`: entries per write (fewer for commits,
 * which the store also keeps whole and indexes: some ten times a form's work each).
 */
export async function storeReceivedFormsAlone(store: AsyncStore, project: number, forms: readonly ReceivedForm[], perWrite = FORMS_ALONE_PER_WRITE, hold?: FormHold): Promise<boolean[]> {
  if (!store.putFormsAlone) return forms.map(() => false);
  const answers: boolean[] = [];
  for (const run of runsOf(forms, perWrite, FORMS_ALONE_BYTES_PER_WRITE, (form) => form.deflated.length)) {
    answers.push(...(await store.putFormsAlone(project, run, DELTA_DEPTH_MAX, hold)));
  }
  return answers;
}

/**
 * storeReceivedObjects in writes of at most RECEIVED_WRITE_BYTES of entries or bodies, and of the
 * store's writeObjectsMax objects (LMDB replays a write in one piece on the event loop), in the
 * order given (a commit after its parents). Returns the objects whose entry could not be kept yet
 * (see storeReceivedObjects), for keepPackedForm once everything is stored.
 */
export async function storeReceivedObjectsInWrites(store: AsyncStore, project: number, ordered: readonly PackObject[]): Promise<PackObject[]> {
  const late: PackObject[] = [];
  for (const run of runsOf(ordered, store.writeObjectsMax ?? Infinity, RECEIVED_WRITE_BYTES, storedBytes)) {
    // The callback only stores (a store may run it again): what it leaves late is taken from its result.
    late.push(...(await store.write((tx) => storeReceivedObjects(tx.project(project), run))));
  }
  return late;
}

/**
 * `items` cut into runs of at most `countMax` items and about `bytesMax` bytes (`bytesOf` each);
 * a run holds at least one.
 */
function* runsOf<T>(items: readonly T[], countMax: number, bytesMax: number, bytesOf: (item: T) => number): Generator<T[]> {
  for (let start = 0; start < items.length; ) {
    let end = start;
    let bytes = 0;
    while (end < items.length && (end === start || (end - start < countMax && bytes < bytesMax))) {
      bytes += bytesOf(items[end]);
      end++;
    }
    yield items.slice(start, end);
    start = end;
  }
}

/** What a write stores of a received object: its pack entry when it has one, else its body. */
const storedBytes = (object: PackObject): number => object.packed?.deflated.length ?? object.body.length;

/**
 * A received object with its pack entry, as the store takes it to keep as its form alone; a commit
 * (never a body rebuilt when read) goes with its body, which putFormsAlone stores whole and indexed.
 */
export function receivedForm(object: PackObject): ReceivedForm {
  const packed = object.packed!;
  // The length alone: a received blob's body may be rebuilt only when something reads it.
  const inflatedBytes = object.bodyBytes ?? object.body.length;
  const form: ReceivedForm = { oid: object.oid, type: object.type, inflatedBytes, deflated: packed.deflated, delta: packed.base ? { base: packed.base, bytes: packed.dataBytes } : null };
  // A body the receiver holds whole (not one to be rebuilt when read) goes along, for a store that keeps raw copies.
  if (object.bodyBytes === undefined) form.body = object.body;
  return form;
}
