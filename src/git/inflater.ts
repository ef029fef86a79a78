/**
 * Inflating a pack's entries one after another, as `git index-pack` does with one z_stream reset
 * between them (inflateReset): zlib.inflateSync builds a stream object, a native handle and zlib's
 * state and window for every call and closes them after it, which for the 43,000 entries of a
 * 3,000-commit history (175 bytes each on average) cost more than inflating them.
 *
 * node:zlib offers no reusable synchronous inflater, so this drives the native handle of one
 * zlib.Inflate the way node's own inflateSync does (lib/zlib.js, processChunkSync: writeSync into a
 * given output, the stream's write state holding what is left of input and output), and resets it
 * between entries. Those are node's internals: the constructor checks they are there and that they
 * inflate a known stream right, and falls back to inflateSync otherwise.
 */
import { constants, Inflate, inflateSync, type ZlibOptions } from 'node:zlib';
import { openZlibHandle, type ZlibHandle } from './zlibHandle.js';

/** "pack entry" and its zlib stream (zlib.deflateSync), to check a handle against. */
const PROBE_BODY = Buffer.from('pack entry');
const PROBE_STREAM = Buffer.from('789c2b484cce5648cd2b29aa0400150203f2', 'hex');

export class InflateError extends Error {
  override name = 'InflateError';
}

/** node:zlib refuses chunk sizes below 64 bytes; the fallback inflates large objects in chunks of up to 1 MiB. */
const INFLATE_CHUNK_BYTES_MIN = 64;
const INFLATE_CHUNK_BYTES_MAX = 1024 * 1024;

export class Inflater {
  private engine: Inflate | null = null;
  private handle: ZlibHandle | null = null;
  private state: Uint32Array | null = null;
  private failure: string | null = null;
  /** Whether node's internals were not as expected: every call then goes through inflateSync. */
  private readonly fallback: boolean;

  constructor(options: { fallback?: boolean } = {}) {
    this.fallback = options.fallback ?? !this.open();
    if (!this.fallback && !this.probe()) {
      this.close();
      this.fallback = true;
    }
  }

  /** Whether the handle inflates a known stream right, refuses a broken one, and then inflates right again. */
  private probe(): boolean {
    const inflatesRight = () => {
      const out = Buffer.alloc(PROBE_BODY.length + 1);
      const { bytes, consumed } = this.inflateInto(PROBE_STREAM, 0, PROBE_STREAM.length, out);
      return bytes === PROBE_BODY.length && consumed === PROBE_STREAM.length && out.subarray(0, bytes).equals(PROBE_BODY);
    };
    try {
      if (!inflatesRight()) return false;
      const broken = Buffer.from(PROBE_STREAM);
      broken[broken.length - 1] ^= 0xff;
      try {
        this.inflateInto(broken, 0, broken.length, Buffer.alloc(PROBE_BODY.length + 1));
        return false;
      } catch (error) {
        if (!(error instanceof InflateError)) return false;
      }
      return inflatesRight();
    } catch {
      return false;
    }
  }

  /**
   * Inflates the zlib stream at `start` (ending at or before `end`) into `output`, which must have
   * room for one byte more than the caller expects, so a stream that makes more shows as
   * `bytes === output.length`. Returns the bytes made and the input the stream took. Throws
   * InflateError for a stream zlib refuses or one cut off by `end`.
   */
  inflateInto(input: Buffer, start: number, end: number, output: Buffer): { bytes: number; consumed: number } {
    // Node checks the bounds by aborting the process.
    if (!(start >= 0 && start <= end && end <= input.length)) throw new InflateError(`input range ${start}-${end} outside ${input.length} bytes`);
    if (this.fallback) return this.inflateWithFallback(input, start, end, output);
    if (!this.handle && !this.open()) throw new InflateError('zlib could not be opened');
    const handle = this.handle!;
    this.failure = null;
    handle.reset();
    handle.writeSync(constants.Z_FINISH, input, start, end - start, output, 0, output.length);
    if (this.failure !== null) {
      // node's handle gives up after an error ("no hope of rescue"): a new one next time.
      const message = this.failure;
      this.close();
      throw new InflateError(message);
    }
    const [outputLeft, inputLeft] = this.state!;
    return { bytes: output.length - outputLeft, consumed: end - start - inputLeft };
  }

  /** Frees zlib's memory; the next call opens a new handle. */
  close(): void {
    const engine = this.engine;
    this.engine = this.handle = this.state = null;
    engine?.close();
  }

  private open(): boolean {
    const opened = openZlibHandle(() => new Inflate(), (message) => {
      this.failure = message;
    });
    if (!opened) return false;
    ({ engine: this.engine, handle: this.handle, state: this.state } = opened);
    return true;
  }


  private inflateWithFallback(input: Buffer, start: number, end: number, output: Buffer): { bytes: number; consumed: number } {
    const options: ZlibOptions & { info: true } = {
      info: true,
      maxOutputLength: Math.max(1, output.length),
      chunkSize: Math.min(INFLATE_CHUNK_BYTES_MAX, Math.max(INFLATE_CHUNK_BYTES_MIN, output.length)),
    };
    let result: { buffer: Buffer; engine: { bytesWritten: number } };
    try {
      result = inflateSync(input.subarray(start, end), options) as unknown as typeof result;
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') return { bytes: output.length, consumed: 0 };
      throw new InflateError((error as Error).message);
    }
    result.buffer.copy(output);
    return { bytes: result.buffer.length, consumed: result.engine.bytesWritten };
  }
}
