/**
 * Buffers carved from large slabs, for work that makes many objects which all live as long as one
 * another (a received pack's rebuilt objects). Each Buffer.allocUnsafe over Node's small pool is an
 * external allocation that V8 counts towards its next collection: rebuilding the 43,000 objects of
 * a 3,000-commit push spent more time collecting garbage than applying deltas. A slab lives until
 * every view into it is gone.
 */
const SLAB_BYTES = 4 * 1024 * 1024;
/** Larger buffers get an allocation of their own, so a slab is never mostly waste. */
const OWN_ALLOCATION_BYTES = 256 * 1024;

export class SlabAllocator {
  private slab: Buffer = Buffer.alloc(0);
  private used = 0;

  readonly allocate = (bytes: number): Buffer => {
    if (bytes >= OWN_ALLOCATION_BYTES) return Buffer.allocUnsafeSlow(bytes);
    if (this.used + bytes > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.used = 0;
    }
    const out = this.slab.subarray(this.used, this.used + bytes);
    this.used += bytes;
    return out;
  };
}
