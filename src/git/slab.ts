/**
 * Buffers carved from large slabs, for work that makes many objects which all live as long as one
 * another (a received pack's rebuilt objects). Each Buffer.allocUnsafe over Node's small pool is an
 * external allocation that V8 counts towards its next collection: rebuilding the 43,000 objects of
 * a 3,000-commit push spent more time collecting garbage than applying deltas. A slab lives until
 * every view into it is gone.
 *
 * Slabs start small and double up to SLAB_BYTES_MAX: an allocator per write transaction that keeps
 * a few ids must not take megabytes. One 4 MB slab each made every small write during a collection's
 * grace period (WriteBuffer.keep) an external allocation that brought V8's full collection on every
 * third or fourth write (59 in 200 one-file write + commit rounds on a 100,000-file project; 3 since).
 */
const SLAB_BYTES_MIN = 16 * 1024;
const SLAB_BYTES_MAX = 4 * 1024 * 1024;
/** Larger buffers get an allocation of their own, so a slab is never mostly waste. */
const OWN_ALLOCATION_BYTES = 256 * 1024;

export class SlabAllocator {
  private slab: Buffer = Buffer.alloc(0);
  private used = 0;
  private nextSlabBytes = SLAB_BYTES_MIN;

  readonly allocate = (bytes: number): Buffer => {
    if (bytes >= OWN_ALLOCATION_BYTES) return Buffer.allocUnsafeSlow(bytes);
    if (this.used + bytes > this.slab.length) {
      const slabBytes = Math.max(this.nextSlabBytes, bytes);
      this.nextSlabBytes = Math.min(SLAB_BYTES_MAX, this.nextSlabBytes * 2);
      this.slab = Buffer.allocUnsafeSlow(slabBytes);
      this.used = 0;
    }
    const out = this.slab.subarray(this.used, this.used + bytes);
    this.used += bytes;
    return out;
  };
}
