/**
 * The native handle behind one of node:zlib's stream objects (node's lib/zlib.js), which
 * src/git/inflater.ts and src/git/deflater.ts drive directly to reuse one zlib stream across many
 * small objects (reset between them) where inflateSync and deflateSync build one per call.
 */
import type { Deflate, Inflate } from 'node:zlib';

export interface ZlibHandle {
  writeSync(flush: number, input: Uint8Array, inputOffset: number, inputBytes: number, output: Uint8Array, outputOffset: number, outputBytes: number): void;
  reset(): void;
  close(): void;
  onerror: (message: string, errno: number) => void;
}

/** A stream object, its handle, and the handle's write state: [output bytes left, input bytes left]. */
export interface OpenedZlib<Engine extends Inflate | Deflate> {
  engine: Engine;
  handle: ZlibHandle;
  state: Uint32Array;
}

/**
 * A new stream object from `make` and its handle, with the handle's errors sent to `onError` (node's
 * handle gives up after one: open another), or null, the engine closed, when node's internals are
 * not as expected (the caller then falls back to the public one-shot functions).
 */
export function openZlibHandle<Engine extends Inflate | Deflate>(make: () => Engine, onError: (message: string) => void): OpenedZlib<Engine> | null {
  let engine: Engine;
  try {
    engine = make();
  } catch {
    return null;
  }
  try {
    const internals = engine as unknown as { _handle?: ZlibHandle; _writeState?: Uint32Array };
    const handle = internals._handle;
    const state = internals._writeState;
    if (!handle || typeof handle.writeSync !== 'function' || typeof handle.reset !== 'function' || !(state instanceof Uint32Array) || state.length < 2) {
      engine.close();
      return null;
    }
    // Errors come here instead of destroying the stream object; and should one reach the stream
    // anyway, its 'error' event has a listener (an unheard one would end the process).
    handle.onerror = (message) => onError(message);
    engine.on('error', () => {});
    return { engine, handle, state };
  } catch {
    return null;
  }
}
