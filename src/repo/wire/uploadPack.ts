/**
 * Serving fetches and clones: reference advertisements (v0 and v2), negotiation answers, and the
 * pack itself as a lazy stream of pkt-lines, so memory stays bounded by one object whatever the
 * repository's size. Objects go out in the pack-ready forms the store keeps (whole or as deltas),
 * copied; an object without one is deflated as it is sent.
 */
import { deflateSync } from 'node:zlib';
import { createDelta } from '../../git/delta.js';
import { OID_BYTES, oidToHex, type Oid } from '../../git/oid.js';
import { OidTable } from '../../git/oidTable.js';
import { DELTA_TARGET_BYTES_MIN, type PackForm } from '../../git/packForm.js';
import { PackWriter, type PackChunk } from '../../git/pack.js';
import { encodeDelim, encodeFlush, encodePktLine, encodeSideband, encodeSidebandPieces, SIDEBAND_DATA, SIDEBAND_PROGRESS } from '../../git/pktline.js';
import { branchRef } from '../../git/refname.js';
import {
  deepens,
  encodeLsRefs,
  encodeRefAdvertisement,
  encodeV2Advertisement,
  parseLsRefsArgs,
  parseV2FetchArgs,
  ProtocolError,
  RECEIVE_PACK_CAPABILITIES,
  servicePreamble,
  UPLOAD_PACK_CAPABILITIES_V0,
  type FetchRequest,
  type Service,
  type V2Command,
} from '../../git/smartProtocol.js';
import type { DeflatedObject, ProjectReadTx } from '../../store/types.js';
import { advertisedTips, checkWants, commonHaves, planPackSteps, planShallow, UploadRequestError, type PackPlan, type ShallowPlan } from './packObjects.js';
import { DELTA_DEPTH_MAX } from './packedForms.js';
import { MAIN_BRANCH, type Repo } from '../repo.js';
import { inSlices, projectReads, Slicer } from '../slices.js';

/** Objects per progress message on side-band 2. */
const PROGRESS_EVERY_OBJECTS = 10_000;
/** Largest side-band-64k packet payload. */
const SIDEBAND_CHUNK_BYTES = 65_515;
/** Pack bytes gathered per socket write. */
const WRITE_CHUNK_BYTES = 1 << 20;
/** Objects larger than this get their thin delta made off the event loop (UploadPackOptions.makeForm), or none. */
const THIN_DELTA_BYTES_MAX = 1024 * 1024;
/** Objects larger than this get no thin delta at all (a delta search holds both bodies in memory). */
const THIN_DELTA_OFF_LOOP_BYTES_MAX = 64 * 1024 * 1024;
/** Bytes of objects one pack makes thin deltas for; the rest go out as stored (a client chooses how much a fetch asks). */
const THIN_DELTA_PACK_BYTES_MAX = 64 * 1024 * 1024;
/** Objects the deflate cache has not reached yet are compressed fast, while the client waits. */
const INLINE_DEFLATE_LEVEL = 1;

/**
 * What the service lends upload-pack: `makeForm` makes a pack-ready form of `body` against `base`
 * (a delta when git's try_delta rule keeps it, else the body deflated) on a worker thread, for the
 * thin deltas of objects too large to diff on the event loop.
 */
export interface UploadPackOptions {
  makeForm?: (body: Buffer, base: Buffer) => Promise<PackForm>;
}

function headOf(tx: ProjectReadTx): { oid: Oid; target: string } | null {
  const oid = tx.getRef(branchRef(MAIN_BRANCH));
  return oid ? { oid, target: branchRef(MAIN_BRANCH) } : null;
}

export function advertise(repo: Repo, service: Service, version: 0 | 2): Buffer[] {
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    const preamble = servicePreamble(service);
    if (service === 'git-upload-pack' && version === 2) return [...preamble, ...encodeV2Advertisement()];
    const capabilities = service === 'git-upload-pack' ? UPLOAD_PACK_CAPABILITIES_V0 : RECEIVE_PACK_CAPABILITIES;
    const head = service === 'git-upload-pack' ? headOf(tx) : null;
    return [...preamble, ...encodeRefAdvertisement(advertisedTips(tx), head, capabilities)];
  });
}

export function lsRefs(repo: Repo, command: V2Command): Buffer[] {
  const args = parseLsRefsArgs(command.args);
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    return encodeLsRefs(advertisedTips(tx), headOf(tx), args);
  });
}

/** Response to a v0 upload-pack request (stateless: every request carries the whole state). */
export async function* uploadPackV0(repo: Repo, request: FetchRequest, options: UploadPackOptions = {}): AsyncGenerator<Buffer> {
  const sideband = request.capabilities.has('side-band-64k') || request.capabilities.has('side-band');
  const sidebandBytes = request.capabilities.has('side-band-64k') ? SIDEBAND_CHUNK_BYTES : 995;
  const progress = sideband && !request.capabilities.has('no-progress');
  const { plan, shallow, common } = await prepare(repo, request, () => request.negotiates && request.done);
  // git answers a shallow list (ended by a flush) only when a deepen was asked for; a shallow
  // client fetching without one expects the ACK/NAK lines straight away.
  if (deepens(request)) {
    for (const oid of shallow.shallow) yield encodePktLine(`shallow ${oidToHex(oid)}\n`);
    for (const oid of shallow.unshallow) yield encodePktLine(`unshallow ${oidToHex(oid)}\n`);
    yield encodeFlush();
  }
  // A stateless request that ends at the wants' flush only asks for the shallow list, as git answers it.
  if (!request.negotiates) return;
  if (!request.done) {
    for (const oid of common) yield encodePktLine(`ACK ${oidToHex(oid)} common\n`);
    if (common.length > 0) yield encodePktLine(`ACK ${oidToHex(common[common.length - 1])} ready\n`);
    yield encodePktLine('NAK\n');
    return;
  }
  yield encodePktLine(common.length > 0 ? `ACK ${oidToHex(common[common.length - 1])}\n` : 'NAK\n');
  yield* packStream(repo, plan!, packCapabilities(request.capabilities), sideband ? sidebandBytes : 0, progress, options);
  if (sideband) yield encodeFlush();
}

/** Response to a v2 fetch command (upload-pack.c upload_pack_v2). */
export async function* fetchV2(repo: Repo, command: V2Command, options: UploadPackOptions = {}): AsyncGenerator<Buffer> {
  const request = parseV2FetchArgs(command.args);
  if (request.wants.length === 0) throw new ProtocolError('fetch without any want');
  const progress = !request.capabilities.has('no-progress');
  const waitsForDone = request.capabilities.has('wait-for-done');
  const { plan, shallow, common } = await prepare(repo, request, (common) => request.done || request.haves.length === 0 || (common.length > 0 && !waitsForDone));
  // Without haves there is nothing to acknowledge: the pack follows at once.
  if (!request.done && request.haves.length > 0) {
    yield encodePktLine('acknowledgments\n');
    if (common.length === 0) yield encodePktLine('NAK\n');
    for (const oid of common) yield encodePktLine(`ACK ${oidToHex(oid)}\n`);
    if (common.length === 0 || waitsForDone) {
      yield encodeFlush();
      return;
    }
    yield encodePktLine('ready\n');
    yield encodeDelim();
  }
  // As git: the section comes whenever the client is shallow or deepens, even when it is empty.
  if (deepens(request) || request.clientShallows.length > 0) {
    yield encodePktLine('shallow-info\n');
    for (const oid of shallow.shallow) yield encodePktLine(`shallow ${oidToHex(oid)}\n`);
    for (const oid of shallow.unshallow) yield encodePktLine(`unshallow ${oidToHex(oid)}\n`);
    yield encodeDelim();
  }
  yield encodePktLine('packfile\n');
  yield* packStream(repo, plan!, packCapabilities(request.capabilities), SIDEBAND_CHUNK_BYTES, progress, options);
  yield encodeFlush();
}

/**
 * Everything a response needs: the shallow lines (answered on every round) and the common haves,
 * from one read transaction, then the objects when `sendsPack` says this answer carries the pack,
 * planned in slices (src/repo/slices.ts) so a clone of a large tree never holds the event loop.
 */
async function prepare(repo: Repo, request: FetchRequest, sendsPack: (common: Oid[]) => boolean): Promise<{ plan: PackPlan | null; shallow: ShallowPlan; common: Oid[] }> {
  try {
    const { shallow, common } = repo.store.read((store) => {
      const tx = store.project(repo.project);
      checkWants(tx, request.wants);
      return { shallow: planShallow(tx, request.wants, request), common: commonHaves(tx, request.haves) };
    });
    const plan = sendsPack(common) ? await inSlices(planPackSteps(projectReads(repo), { wants: request.wants, haves: common, shallow })) : null;
    return { plan, shallow, common };
  } catch (error) {
    if (error instanceof UploadRequestError) throw new ProtocolError(error.message);
    throw error;
  }
}

/**
 * A push to another repository (src/service/gitClient.ts, linked-repository sync) uses the same
 * planner and pack stream as a fetch from us: planned in slices, objects in their stored forms
 * (git's deltas included), raw pack bytes. `haves`: the receiver's ref tips that we hold.
 */
export function planPushPack(repo: Repo, wants: Oid[], haves: Oid[]): Promise<PackPlan> {
  return inSlices(planPackSteps(projectReads(repo), { wants, haves: repo.store.read((store) => commonHaves(store.project(repo.project), haves)) }));
}

/**
 * The pack of planPushPack's plan for a receiver that advertised `capabilities`: OFS_DELTA when it
 * takes `ofs-delta`, and thin (deltas against objects it holds) unless it says `no-thin`, as git's
 * send-pack decides (receive-pack completes a thin pack from its own objects).
 */
export function pushPackStream(repo: Repo, plan: PackPlan, capabilities: { has(name: string): boolean }): AsyncGenerator<Buffer> {
  return packStream(repo, plan, { ofsDelta: capabilities.has('ofs-delta'), thin: !capabilities.has('no-thin') }, 0, false, {});
}

/** What the client said it can take: OFS_DELTA entries, and deltas against objects it holds (a thin pack). */
interface PackCapabilities {
  ofsDelta: boolean;
  thin: boolean;
}

function packCapabilities(capabilities: ReadonlySet<string>): PackCapabilities {
  return { ofsDelta: capabilities.has('ofs-delta'), thin: capabilities.has('thin-pack') };
}

/**
 * The pack, framed in side-band packets of at most `sidebandBytes` (0: raw pack bytes).
 *
 * Each object goes out in its pack-ready form (src/store/types.ts DeflatedObject), copied as
 * stored: whole, or as a delta when its base is in this pack (written first if it is not yet, as
 * git's write_one does; OFS_DELTA when the client takes it) or, in a thin pack, held by the client.
 * A delta whose base the client will not have goes out whole, rebuilt and deflated here.
 */
async function* packStream(
  repo: Repo,
  plan: PackPlan,
  capabilities: PackCapabilities,
  sidebandBytes: number,
  progress: boolean,
  options: UploadPackOptions,
): AsyncGenerator<Buffer> {
  const writer = new PackWriter(plan.objects.length);
  const slicer = new Slicer();
  // Built at the first delta: a pack of whole objects (a tree written through the API) never needs it.
  let indexById: OidTable | null = null;
  const indexOf = (oid: Oid): number | undefined => {
    if (!indexById) {
      indexById = new OidTable(plan.objects.length);
      for (let index = 0; index < plan.objects.length; index++) indexById.add(plan.objects.oidView(index), 0, index);
    }
    const index = indexById.get(oid);
    return index < 0 ? undefined : index;
  };
  // Where each object was written (-1: not yet), for OFS_DELTA distances and to skip bases written early.
  const offsets = new Float64Array(plan.objects.length).fill(-1);
  const entries: PackEntries = { writer, plan, capabilities, indexOf, offsets, thinBytesLeft: THIN_DELTA_PACK_BYTES_MAX, madeOffLoop: new Map() };
  if (capabilities.thin && options.makeForm && plan.thinBases.size > 0) await makeLargeThinDeltas(repo, entries, options.makeForm);
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // Large writes: one socket write per megabyte or so, not one per object.
  function* flush(force: boolean): Generator<Buffer> {
    if (pendingBytes === 0 || (!force && pendingBytes < WRITE_CHUNK_BYTES)) return;
    const pieces = pending;
    const bytes = pendingBytes;
    pending = [];
    pendingBytes = 0;
    yield sidebandBytes === 0 ? Buffer.concat(pieces, bytes) : encodeSidebandPieces(SIDEBAND_DATA, pieces, bytes, sidebandBytes);
  }
  const add = (bytes: Buffer) => {
    pending.push(bytes);
    pendingBytes += bytes.length;
  };
  add(writer.start());
  let sent = 0;
  for (let index = 0; index < plan.objects.length; index++) {
    if (offsets[index] >= 0) continue;
    const written = repo.store.read((store) => writeWithBases(store.project(repo.project), entries, index));
    for (const bytes of written) add(bytes);
    yield* flush(false);
    const before = sent;
    sent += written.length;
    if (progress && sidebandBytes > 0 && Math.floor(sent / PROGRESS_EVERY_OBJECTS) > Math.floor(before / PROGRESS_EVERY_OBJECTS)) {
      yield* encodeSideband(SIDEBAND_PROGRESS, Buffer.from(`Counting objects: ${sent}/${plan.objects.length}\r`), sidebandBytes);
    }
    if (slicer.due) await slicer.pause();
  }
  add(writer.finish());
  yield* flush(true);
}

interface PackEntries {
  /** What is left of THIN_DELTA_PACK_BYTES_MAX. */
  thinBytesLeft: number;
  /** Thin deltas of large objects (by index in the plan), made on a worker before the pack started. */
  madeOffLoop: Map<number, PackForm>;
  writer: PackWriter;
  plan: PackPlan;
  capabilities: PackCapabilities;
  /** The index in the plan of an object, if the pack sends it. */
  indexOf: (oid: Oid) => number | undefined;
  offsets: Float64Array;
}

/**
 * Writes object `index`, after the unwritten bases in this pack its delta chain leads through
 * (bases first, so every OFS_DELTA points back); returns the entries' bytes in order.
 */
function writeWithBases(tx: ProjectReadTx, entries: PackEntries, index: number): Buffer[] {
  // Most objects are whole or have their base written already: one read of the form serves both.
  const own = tx.peekDeflated(entries.plan.objects.oidView(index));
  const baseIndex = own?.delta ? entries.indexOf(own.delta.base) : undefined;
  if (baseIndex === undefined || entries.offsets[baseIndex] >= 0) return [writeEntry(tx, entries, index, own)];
  const chain = [index, baseIndex];
  // Chains are acyclic (a form only names forms kept before it) and short; the bound is a guard.
  while (chain.length <= DELTA_DEPTH_MAX) {
    const form = tx.peekDeflated(entries.plan.objects.oidView(chain[chain.length - 1]));
    if (!form?.delta) break;
    const base = entries.indexOf(form.delta.base);
    if (base === undefined || entries.offsets[base] >= 0 || chain.includes(base)) break;
    chain.push(base);
  }
  const out: Buffer[] = [];
  for (let at = chain.length - 1; at >= 0; at--) out.push(writeEntry(tx, entries, chain[at]));
  return out;
}

/** A delta from `base` to `oid` worth sending (git's try_delta rule), or null. */
function thinDelta(tx: ProjectReadTx, entries: PackEntries, oid: Oid, base: Oid): Buffer | null {
  const size = tx.objectSize(oid) ?? Infinity;
  if (size > THIN_DELTA_BYTES_MAX || size > entries.thinBytesLeft) return null;
  entries.thinBytesLeft -= size;
  const target = tx.getObject(oid);
  const source = tx.getObject(base);
  if (!target || !source || target.body.length < DELTA_TARGET_BYTES_MIN || source.body.length === 0) return null;
  return createDelta(source.body, target.body, Math.floor(target.body.length / 2) - OID_BYTES);
}

/**
 * git's --thin for objects over THIN_DELTA_BYTES_MAX (a large file edited between the client's
 * commit and the one it fetches): each delta is made on a worker, one at a time, before the pack
 * starts, for the objects whose stored form the client cannot take as it is.
 */
async function makeLargeThinDeltas(repo: Repo, entries: PackEntries, makeForm: NonNullable<UploadPackOptions['makeForm']>): Promise<void> {
  for (const [index, base] of entries.plan.thinBases) {
    const bodies = repo.store.read((store) => {
      const tx = store.project(repo.project);
      const oid = entries.plan.objects.oidView(index);
      const size = tx.objectSize(oid) ?? Infinity;
      if (size <= THIN_DELTA_BYTES_MAX || size > THIN_DELTA_OFF_LOOP_BYTES_MAX || size > entries.thinBytesLeft) return null;
      const form = tx.peekDeflated(oid);
      if (form?.delta && storedDeltaGoesOut(entries, form.delta.base)) return null;
      entries.thinBytesLeft -= size;
      const target = tx.getObject(oid);
      const source = tx.getObject(base);
      return target && source ? { target: target.body, source: source.body } : null;
    });
    if (!bodies) continue;
    try {
      const made = await makeForm(bodies.target, bodies.source);
      if (made.deltaBytes !== null) entries.madeOffLoop.set(index, made);
    } catch {
      // No worker (it failed, or the service is stopping): the object goes out as stored.
    }
  }
}

/** Whether writeEntry sends a stored delta on `base` as it is: the base is in this pack, or (thin) the client holds it. */
function storedDeltaGoesOut(entries: PackEntries, base: Oid): boolean {
  return entries.indexOf(base) !== undefined || (entries.capabilities.thin && entries.plan.clientHas.has(base));
}

/** One pack entry: the stored form when the client can take it, else the body deflated now. */
function writeEntry(tx: ProjectReadTx, entries: PackEntries, index: number, known?: DeflatedObject): Buffer {
  const { writer, plan, capabilities, indexOf, offsets } = entries;
  const oid = plan.objects.oidView(index);
  // `known`: the form as read just before, with no read since.
  let form = known ?? tx.peekDeflated(oid);
  let chunk: PackChunk | null = null;
  // The add* methods copy the bytes before the next read can reuse them.
  if (form?.delta) {
    const base = indexOf(form.delta.base);
    if (base !== undefined && offsets[base] >= 0) {
      chunk = capabilities.ofsDelta
        ? writer.addDeflatedOfsDelta(offsets[base], form.delta.bytes, form.deflated)
        : writer.addDeflatedRefDelta(form.delta.base, form.delta.bytes, form.deflated);
    } else if (base === undefined && capabilities.thin && plan.clientHas.has(form.delta.base)) {
      chunk = writer.addDeflatedRefDelta(form.delta.base, form.delta.bytes, form.deflated);
    }
  }
  const thinBase = capabilities.thin ? plan.thinBases.get(index) : undefined;
  const made = chunk ? undefined : entries.madeOffLoop.get(index);
  if (made && thinBase) chunk = writer.addDeflatedRefDelta(thinBase, made.deltaBytes!, made.deflated);
  if (!chunk && thinBase) {
    // git's --thin: a delta against the version at the same path that the client holds, made now.
    const delta = thinDelta(tx, entries, oid, thinBase);
    if (delta) chunk = writer.addDeflatedRefDelta(thinBase, delta.length, deflateSync(delta));
    form = tx.peekDeflated(oid);
  }
  if (!chunk && form && !form.delta) chunk = writer.addDeflatedObject(form.type, form.inflatedBytes, form.deflated);
  if (!chunk) {
    const object = tx.getObject(oid);
    if (!object) throw new Error(`object ${oidToHex(oid)} vanished while packing`);
    chunk = writer.addDeflatedObject(object.type, object.body.length, deflateSync(object.body, { level: INLINE_DEFLATE_LEVEL }));
  }
  offsets[index] = chunk.offset;
  return chunk.bytes;
}
