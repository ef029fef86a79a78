/**
 * Object ids by the hundred thousand without one JavaScript object per id: a walk that plans a
 * clone of a 100,000-file tree kept a hex string, a Buffer view and a record per object, several
 * megabytes of young objects that every scavenge copied while the pack streamed (pauses of 15 to
 * 30 ms, felt by every other request) and that raised the server's resident memory.
 *
 * `OidTable` is an open-addressing hash table (linear probing, at most half full) whose keys live
 * in one Buffer; ids are SHA-1 output, so their first four bytes are a hash already. Each key
 * carries a number (an index, for example). `OidList` is ids and object types in insertion order.
 */
import { OID_BYTES, type ObjectType, type Oid } from './oid.js';

const INITIAL_SLOTS = 64;

export class OidTable {
  private slots: number;
  private keys: Buffer;
  /** The value of each slot plus one (0: the slot is empty). */
  private values: Float64Array;
  private count = 0;

  constructor(expected = 0) {
    let slots = INITIAL_SLOTS;
    while (slots < expected * 2) slots *= 2;
    this.slots = slots;
    this.keys = Buffer.alloc(slots * OID_BYTES);
    this.values = new Float64Array(slots);
  }

  get size(): number {
    return this.count;
  }

  /** The slot holding `oid` (at `offset` in its buffer), or the empty slot where it would go. */
  private find(oid: Uint8Array, offset: number): number {
    const mask = this.slots - 1;
    let slot = ((oid[offset] | (oid[offset + 1] << 8) | (oid[offset + 2] << 16) | (oid[offset + 3] << 24)) >>> 0) & mask;
    const keys = this.keys;
    for (;;) {
      if (this.values[slot] === 0) return slot;
      const at = slot * OID_BYTES;
      let same = true;
      for (let i = 0; i < OID_BYTES; i++) {
        if (keys[at + i] !== oid[offset + i]) {
          same = false;
          break;
        }
      }
      if (same) return slot;
      slot = (slot + 1) & mask;
    }
  }

  has(oid: Uint8Array, offset = 0): boolean {
    return this.values[this.find(oid, offset)] !== 0;
  }

  /** The number stored with `oid`, or -1. */
  get(oid: Uint8Array, offset = 0): number {
    return this.values[this.find(oid, offset)] - 1;
  }

  /** Adds `oid` with `value` (a number ≥ 0) unless it is there; true when it was added. */
  add(oid: Uint8Array, offset = 0, value = 0): boolean {
    const slot = this.find(oid, offset);
    if (this.values[slot] !== 0) return false;
    const keys = this.keys;
    const at = slot * OID_BYTES;
    for (let i = 0; i < OID_BYTES; i++) keys[at + i] = oid[offset + i];
    this.values[slot] = value + 1;
    if (++this.count * 2 > this.slots) this.grow();
    return true;
  }

  /** Sets the number stored with `oid` (a number ≥ 0), adding it when absent. */
  set(oid: Uint8Array, offset: number, value: number): void {
    const slot = this.find(oid, offset);
    if (this.values[slot] !== 0) {
      this.values[slot] = value + 1;
      return;
    }
    this.add(oid, offset, value);
  }

  private grow(): void {
    const { keys, values, slots } = this;
    this.slots = slots * 2;
    const grown = (this.keys = Buffer.alloc(this.slots * OID_BYTES));
    this.values = new Float64Array(this.slots);
    for (let slot = 0; slot < slots; slot++) {
      if (values[slot] === 0) continue;
      const from = slot * OID_BYTES;
      const moved = this.find(keys, from);
      const to = moved * OID_BYTES;
      // Byte by byte, as add() does: Buffer.copy's call costs more than 20 bytes' copy (a table's
      // growth to 43,000 ids took 20 ms of a push's event loop).
      for (let i = 0; i < OID_BYTES; i++) grown[to + i] = keys[from + i];
      this.values[moved] = values[slot];
    }
  }
}

const TYPE_CODES: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };
const TYPES: ObjectType[] = ['commit', 'commit', 'tree', 'blob', 'tag'];

export class OidList {
  private oids = Buffer.alloc(INITIAL_SLOTS * OID_BYTES);
  private types = new Uint8Array(INITIAL_SLOTS);
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(oid: Uint8Array, type: ObjectType, offset = 0): number {
    if (this.count === this.types.length) {
      const oids = Buffer.alloc(this.oids.length * 2);
      this.oids.copy(oids);
      this.oids = oids;
      const types = new Uint8Array(this.types.length * 2);
      types.set(this.types);
      this.types = types;
    }
    const oids = this.oids;
    const at = this.count * OID_BYTES;
    for (let i = 0; i < OID_BYTES; i++) oids[at + i] = oid[offset + i];
    this.types[this.count] = TYPE_CODES[type];
    return this.count++;
  }

  /** The id at `index`: a view into the list, valid as long as the list is not pushed to. */
  oidView(index: number): Oid {
    return this.oids.subarray(index * OID_BYTES, (index + 1) * OID_BYTES);
  }

  /** The id at `index`, as a copy. */
  oid(index: number): Oid {
    return Buffer.from(this.oidView(index));
  }

  type(index: number): ObjectType {
    return TYPES[this.types[index]];
  }

  /** The ids in order, 20 bytes each, as a copy. */
  idsBytes(): Buffer {
    return Buffer.from(this.oids.subarray(0, this.count * OID_BYTES));
  }

  /** Each id (a copy) and type, for callers that want records. */
  *[Symbol.iterator](): Generator<{ oid: Oid; type: ObjectType }> {
    for (let index = 0; index < this.count; index++) yield { oid: this.oid(index), type: this.type(index) };
  }
}
