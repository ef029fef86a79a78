/**
 * The unreachable ids of a collection and the order they are removed in: an object goes before
 * everything it references and before the base of its delta form, so whatever is still stored
 * while the sweep runs has everything it references, and every form its chain. A writer that finds
 * an object stored (and is checked at its commit to find it still: src/store/asyncTypes.ts) may so
 * rely on all it references, as it may outside a collection.
 *
 * Commits, trees and tags (and the rare blob whose delta is on one of them) form a graph: their
 * references and delta bases among the candidates, read from the commit index and the bodies. A
 * pack may hold a tree whose delta is on a tree that names it, a cycle: its strongly connected
 * components (Tarjan's algorithm, iterative) are each removed in one transaction, in the reverse of
 * the order Tarjan finds them (it finds a component after all it reaches). Blobs reference nothing:
 * they go last, deepest delta first (a delta's depth is more than its base's), and are kept as
 * compact records rather than graph nodes, since a project's garbage is mostly blobs.
 */
import { decodeTag } from '../../git/tag.js';
import { ENTRY_FILE, ENTRY_TREE, TreeCursor } from '../../git/tree.js';
import { OID_BYTES, type ObjectType, type Oid } from '../../git/oid.js';
import { OidTable } from '../../git/oidTable.js';
import type { StoredEntry } from '../../store/types.js';
import type { MarkReads } from './mark.js';
import { Slicer } from '../slices.js';

const TYPE_CODES: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };
const COMMITS_PER_READ = 512;
const TREES_PER_READ = 128;
/** A delta form's depth is one byte in the store. */
const DEPTHS = 256;

/** Records in one growing buffer, `size` bytes each. */
class Records {
  bytes: Buffer;
  count = 0;

  constructor(readonly size: number) {
    this.bytes = Buffer.alloc(size * 64);
  }

  /** A new record's offset. */
  append(): number {
    if ((this.count + 1) * this.size > this.bytes.length) {
      const grown = Buffer.alloc(this.bytes.length * 2);
      this.bytes.copy(grown);
      this.bytes = grown;
    }
    return this.count++ * this.size;
  }
}

/** Growing arrays of 32-bit integers. */
class Ints {
  values = new Int32Array(64);
  length = 0;

  push(value: number): void {
    if (this.length === this.values.length) {
      const grown = new Int32Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = value;
  }
}

// A graph node: id, type code, bytes (u32), has a form base (u8), the base's id.
const NODE_BYTES = OID_BYTES + 1 + 4 + 1 + OID_BYTES;
// A blob: id, delta depth (u8), bytes (u32).
const BLOB_BYTES = OID_BYTES + 1 + 4;
// A blob whose form is a delta: id, depth, bytes, its base's id.
const BASED_BLOB_BYTES = BLOB_BYTES + OID_BYTES;

export class Candidates {
  private readonly nodes = new Records(NODE_BYTES);
  private readonly nodeIndex = new OidTable();
  private readonly blobs = new Records(BLOB_BYTES);
  private readonly basedBlobs = new Records(BASED_BLOB_BYTES);
  private readonly from = new Ints();
  private readonly to = new Ints();
  /** Node indices in removal order, and where each component ends in it. */
  private nodeOrder: Int32Array | null = null;
  private componentEnds: Uint8Array | null = null;
  /** Blobs in removal order: an index into `blobs`, or -1 - an index into `basedBlobs`. */
  private blobOrder: Int32Array | null = null;

  /** Adds an entry the mark did not reach. */
  add(entry: StoredEntry): void {
    const bytes = Math.min(entry.rawBytes + entry.formBytes + entry.indexBytes, 0xffffffff);
    if (entry.type === 'blob' || entry.type === undefined) {
      const records = entry.formBase ? this.basedBlobs : this.blobs;
      const at = records.append();
      entry.oid.copy(records.bytes, at);
      records.bytes[at + OID_BYTES] = entry.formDepth;
      records.bytes.writeUInt32BE(bytes, at + OID_BYTES + 1);
      entry.formBase?.copy(records.bytes, at + BLOB_BYTES);
      return;
    }
    this.addNode(entry.oid, TYPE_CODES[entry.type], bytes, entry.formBase);
  }

  private addNode(oid: Uint8Array, typeCode: number, bytes: number, base: Uint8Array | null, baseOffset = 0): void {
    const at = this.nodes.append();
    const records = this.nodes.bytes;
    records.set(oid.subarray(0, OID_BYTES), at);
    records[at + OID_BYTES] = typeCode;
    records.writeUInt32BE(bytes, at + OID_BYTES + 1);
    records[at + OID_BYTES + 5] = base ? 1 : 0;
    if (base) records.set(base.subarray(baseOffset, baseOffset + OID_BYTES), at + OID_BYTES + 6);
    this.nodeIndex.add(oid, 0, this.nodes.count - 1);
  }

  private nodeOid(index: number): Buffer {
    return this.nodes.bytes.subarray(index * NODE_BYTES, index * NODE_BYTES + OID_BYTES);
  }

  /** Reads what each graph node references among the nodes (the bodies of trees and tags), and orders them all. */
  async order(reads: MarkReads, slicer = new Slicer()): Promise<void> {
    // A blob whose delta is on a commit, tree or tag must go before it: into the graph.
    const inGraph = new Uint8Array(this.basedBlobs.count);
    for (let i = 0; i < this.basedBlobs.count; i++) {
      const at = i * BASED_BLOB_BYTES;
      const record = this.basedBlobs.bytes;
      if (!this.nodeIndex.has(record, at + BLOB_BYTES)) continue;
      this.addNode(record.subarray(at, at + OID_BYTES), TYPE_CODES.blob, record.readUInt32BE(at + OID_BYTES + 1), record, at + BLOB_BYTES);
      inGraph[i] = 1;
    }
    this.orderBlobs(inGraph);
    const byType = new Map<number, number[]>();
    for (let index = 0; index < this.nodes.count; index++) {
      const typeCode = this.nodes.bytes[index * NODE_BYTES + OID_BYTES];
      if (this.nodes.bytes[index * NODE_BYTES + OID_BYTES + 5] === 1) this.edgeTo(index, this.nodes.bytes, index * NODE_BYTES + OID_BYTES + 6);
      const list = byType.get(typeCode) ?? [];
      list.push(index);
      byType.set(typeCode, list);
    }
    await this.readCommitEdges(reads, byType.get(TYPE_CODES.commit) ?? [], slicer);
    await this.readBodyEdges(reads, [...(byType.get(TYPE_CODES.tree) ?? []), ...(byType.get(TYPE_CODES.tag) ?? [])], slicer);
    this.orderComponents();
  }

  private edgeTo(from: number, oid: Uint8Array, offset = 0): void {
    const to = this.nodeIndex.get(oid, offset);
    if (to < 0 || to === from) return;
    this.from.push(from);
    this.to.push(to);
  }

  private async readCommitEdges(reads: MarkReads, commits: number[], slicer: Slicer): Promise<void> {
    for (let start = 0; start < commits.length; start += COMMITS_PER_READ) {
      const batch = commits.slice(start, start + COMMITS_PER_READ);
      const infos = await reads.getCommitInfos(batch.map((index) => Buffer.from(this.nodeOid(index))));
      infos.forEach((info, i) => {
        if (!info) return;
        this.edgeTo(batch[i], info.tree);
        for (const parent of info.parents) this.edgeTo(batch[i], parent);
      });
      await slicer.pause();
    }
  }

  private async readBodyEdges(reads: MarkReads, nodes: number[], slicer: Slicer): Promise<void> {
    for (let start = 0; start < nodes.length; start += TREES_PER_READ) {
      const batch = nodes.slice(start, start + TREES_PER_READ);
      const objects = await reads.getObjects(batch.map((index) => Buffer.from(this.nodeOid(index))));
      objects.forEach((object, i) => {
        if (object?.type === 'tag') {
          this.edgeTo(batch[i], decodeTag(object.body).object);
          return;
        }
        if (object?.type !== 'tree') return;
        const cursor = new TreeCursor(object.body);
        while (cursor.next()) {
          if (cursor.kind === ENTRY_TREE || cursor.kind === ENTRY_FILE) this.edgeTo(batch[i], object.body, cursor.oidStart);
        }
      });
      await slicer.pause();
    }
  }

  /** Blobs deepest delta first (a counting sort by depth), leaving out those moved into the graph. */
  private orderBlobs(inGraph: Uint8Array): void {
    const starts = new Int32Array(DEPTHS + 1);
    const depthOf = (records: Records, i: number) => DEPTHS - 1 - records.bytes[i * records.size + OID_BYTES];
    for (let i = 0; i < this.blobs.count; i++) starts[depthOf(this.blobs, i) + 1]++;
    for (let i = 0; i < this.basedBlobs.count; i++) if (inGraph[i] === 0) starts[depthOf(this.basedBlobs, i) + 1]++;
    for (let d = 0; d < DEPTHS; d++) starts[d + 1] += starts[d];
    const order = new Int32Array(starts[DEPTHS]);
    for (let i = 0; i < this.blobs.count; i++) order[starts[depthOf(this.blobs, i)]++] = i;
    for (let i = 0; i < this.basedBlobs.count; i++) if (inGraph[i] === 0) order[starts[depthOf(this.basedBlobs, i)]++] = -1 - i;
    this.blobOrder = order;
  }

  /** Tarjan's strongly connected components, iteratively; `nodeOrder` ends up referrers first. */
  private orderComponents(): void {
    const count = this.nodes.count;
    // Edges as compressed rows: the targets of node n are targets[starts[n] .. starts[n + 1]).
    const starts = new Int32Array(count + 1);
    for (let e = 0; e < this.from.length; e++) starts[this.from.values[e] + 1]++;
    for (let n = 0; n < count; n++) starts[n + 1] += starts[n];
    const fill = starts.slice(0, count);
    const targets = new Int32Array(this.from.length);
    for (let e = 0; e < this.from.length; e++) targets[fill[this.from.values[e]]++] = this.to.values[e];
    const index = new Int32Array(count).fill(-1);
    const low = new Int32Array(count);
    const onStack = new Uint8Array(count);
    const stack = new Int32Array(count);
    let stackSize = 0;
    const callNode = new Int32Array(count);
    const callEdge = new Int32Array(count);
    const found = new Int32Array(count);
    const ends = new Uint8Array(count);
    let foundCount = 0;
    let nextIndex = 0;
    for (let root = 0; root < count; root++) {
      if (index[root] >= 0) continue;
      let depth = 0;
      callNode[0] = root;
      callEdge[0] = starts[root];
      index[root] = low[root] = nextIndex++;
      stack[stackSize++] = root;
      onStack[root] = 1;
      while (depth >= 0) {
        const node = callNode[depth];
        if (callEdge[depth] < starts[node + 1]) {
          const next = targets[callEdge[depth]++];
          if (index[next] < 0) {
            index[next] = low[next] = nextIndex++;
            stack[stackSize++] = next;
            onStack[next] = 1;
            depth++;
            callNode[depth] = next;
            callEdge[depth] = starts[next];
          } else if (onStack[next]) {
            low[node] = Math.min(low[node], index[next]);
          }
          continue;
        }
        if (low[node] === index[node]) {
          let member: number;
          do {
            member = stack[--stackSize];
            onStack[member] = 0;
            found[foundCount++] = member;
          } while (member !== node);
          ends[foundCount - 1] = 1;
        }
        depth--;
        if (depth >= 0) low[callNode[depth]] = Math.min(low[callNode[depth]], low[node]);
      }
    }
    // Tarjan finds a component after every component it references: removal goes the other way.
    this.nodeOrder = found.reverse();
    const reversedEnds = new Uint8Array(count);
    // A component that ended at position p of `found` starts at count - 1 - p once reversed; its
    // end is where the previous component (in `found`) ended, plus one.
    for (let p = 0; p < count; p++) if (ends[p] === 1 && p + 1 < count) reversedEnds[count - 1 - (p + 1)] = 1;
    if (count > 0) reversedEnds[count - 1] = 1;
    this.componentEnds = reversedEnds;
  }

  /**
   * The ids in removal order, in batches of about `batchIds` (a component is never split), each id
   * with its stored bytes.
   */
  *batches(batchIds: number): Generator<Array<{ oid: Oid; bytes: number }>> {
    if (!this.nodeOrder || !this.componentEnds || !this.blobOrder) throw new Error('order() has not run');
    let batch: Array<{ oid: Oid; bytes: number }> = [];
    for (let p = 0; p < this.nodeOrder.length; p++) {
      const node = this.nodeOrder[p];
      const at = node * NODE_BYTES;
      batch.push({ oid: Buffer.from(this.nodes.bytes.subarray(at, at + OID_BYTES)), bytes: this.nodes.bytes.readUInt32BE(at + OID_BYTES + 1) });
      if (this.componentEnds[p] === 1 && batch.length >= batchIds) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
    batch = [];
    for (const position of this.blobOrder) {
      const records = position >= 0 ? this.blobs : this.basedBlobs;
      const at = (position >= 0 ? position : -1 - position) * records.size;
      batch.push({ oid: Buffer.from(records.bytes.subarray(at, at + OID_BYTES)), bytes: records.bytes.readUInt32BE(at + OID_BYTES + 1) });
      if (batch.length >= batchIds) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }
}
