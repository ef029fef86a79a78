/**
 * Deflating many small objects one after another with one zlib stream, reset between them, as
 * src/git/inflater.ts inflates a pack's entries: zlib.deflateSync builds a stream object, a native
 * handle and about 256 KB of zlib state for every call, which for the 100,000 objects of a clone
 * made without stored forms cost more of the request thread than compressing them.
 *
 * It drives the native handle of one zlib.Deflate as node's own deflateSync does (lib/zlib.js,
 * processChunkSync), with an output buffer of zlib's compressBound so that one Z_FINISH call
 * finishes; the bytes equal deflateSync's at the same level. Those are node's internals: the
 * constructor checks they are there and deflate a known body to deflateSync's bytes, and falls back
 * to deflateSync otherwise.
 */
import { constants, Deflate, deflateSync } from 'node:zlib';
import { openZlibHandle, type ZlibHandle } from './zlibHandle.js';

const PROBE_BODY = Buffer.from('tree 0\0a pack entry, deflated twice the same way');

/** zlib's compressBound: the most a deflated stream of `bytes` can take (zlib.h). */
function compressBound(bytes: number): number {
  return bytes + (bytes >>> 12) + (bytes >>> 14) + (bytes >>> 25) + 13;
}

/** Bodies larger than this go through deflateSync (its chunked output), not a scratch buffer of their size. */
const SCRATCH_BYTES_MAX = 4 * 1024 * 1024;

export class Deflater {
  private engine: Deflate | null = null;
  private handle: ZlibHandle | null = null;
  private state: Uint32Array | null = null;
  private failure: string | null = null;
  private scratch = Buffer.alloc(0);
  private readonly fallback: boolean;

  constructor(private readonly level: number) {
    let usable = this.open();
    if (usable) {
      try {
        usable = this.deflate(PROBE_BODY).equals(deflateSync(PROBE_BODY, { level })) && this.deflate(PROBE_BODY).equals(deflateSync(PROBE_BODY, { level }));
      } catch {
        usable = false;
      }
    }
    if (!usable) this.close();
    this.fallback = !usable;
  }

  /** Whether node's native handle is driven (false: every call goes through deflateSync). */
  get native(): boolean {
    return !this.fallback;
  }

  /** `body` as a zlib stream at this deflater's level: the same bytes deflateSync makes. */
  deflate(body: Buffer): Buffer {
    const bound = compressBound(body.length);
    if (this.fallback || bound > SCRATCH_BYTES_MAX || (!this.handle && !this.open())) return deflateSync(body, { level: this.level });
    if (this.scratch.length < bound) this.scratch = Buffer.allocUnsafe(Math.max(bound, 64 * 1024));
    const handle = this.handle!;
    this.failure = null;
    handle.reset();
    handle.writeSync(constants.Z_FINISH, body, 0, body.length, this.scratch, 0, bound);
    const [outputLeft, inputLeft] = this.state!;
    if (this.failure !== null || inputLeft !== 0) {
      // Not expected with compressBound of room; deflateSync says what is wrong, if anything.
      this.close();
      return deflateSync(body, { level: this.level });
    }
    return Buffer.from(this.scratch.subarray(0, bound - outputLeft));
  }

  close(): void {
    const engine = this.engine;
    this.engine = this.handle = this.state = null;
    engine?.close();
  }

  private open(): boolean {
    const opened = openZlibHandle(() => new Deflate({ level: this.level }), (message) => {
      this.failure = message;
    });
    if (!opened) return false;
    ({ engine: this.engine, handle: this.handle, state: this.state } = opened);
    return true;
  }

}
