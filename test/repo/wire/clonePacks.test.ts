import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { oidFromHex } from '../../../src/git/oid.js';
import type { FetchRequest } from '../../../src/git/smartProtocol.js';
import { branchHead, inReadTx, type Repo } from '../../../src/repo/repo.js';
import { uploadPackV0 } from '../../../src/repo/wire/uploadPack.js';
import { newTestRepo, openTestStore } from '../../support/store.js';
import { ClonePacks, type ClonePackShape } from '../../../src/repo/wire/clonePacks.js';

const a = oidFromHex('a'.repeat(40));
const b = oidFromHex('b'.repeat(40));
/** A kept pack's object ids, where a test needs none. */
const NO_IDS = () => Buffer.alloc(0);
/** A whole clone taking OFS_DELTA entries. */
const WHOLE: ClonePackShape = { ofsDelta: true, depth: null, deepenSince: null };

/** Records `bytes` bytes for a clone of `wants` and finishes the pack. */
function made(packs: ClonePacks, project: number, wants: Buffer[], bytes: number, fill = 1, shape: ClonePackShape = WHOLE): void {
  const found = packs.find(project, wants, shape);
  if (!('recording' in found)) throw new Error('expected a miss');
  found.recording.add(Buffer.alloc(bytes, fill));
  found.recording.finish(NO_IDS);
}

describe('ClonePacks', () => {
  it('answers a clone of the same wants in any order and with repeats, per project and per delta form', () => {
    const packs = new ClonePacks({ bytesMax: 1000, entryBytesMax: 500, recordingBytesMax: 1000 });
    made(packs, 1, [a, b], 100);
    expect(packs.find(1, [b, a, b], WHOLE)).toEqual({ pack: [Buffer.alloc(100, 1)] });
    expect('recording' in packs.find(1, [a, b], { ...WHOLE, ofsDelta: false })).toBe(true);
    expect('recording' in packs.find(2, [a, b], WHOLE)).toBe(true);
    expect('recording' in packs.find(1, [a], WHOLE)).toBe(true);
    // A shallow clone's pack is its depth's: kept apart from the whole clone's and other depths'.
    made(packs, 1, [a, b], 50, 2, { ...WHOLE, depth: 1 });
    expect(packs.find(1, [a, b], { ...WHOLE, depth: 1 })).toEqual({ pack: [Buffer.alloc(50, 2)] });
    expect(packs.find(1, [a, b], WHOLE)).toEqual({ pack: [Buffer.alloc(100, 1)] });
    expect('recording' in packs.find(1, [a, b], { ...WHOLE, depth: 2 })).toBe(true);
    expect('recording' in packs.find(1, [a, b], { ...WHOLE, deepenSince: 1_700_000_000 })).toBe(true);
    expect({ hits: packs.hits, misses: packs.misses }).toEqual({ hits: 3, misses: 7 });
    // A miss whose pack grows a kept one counts as grown instead.
    packs.grew();
    expect({ hits: packs.hits, grown: packs.grown, misses: packs.misses }).toEqual({ hits: 3, grown: 1, misses: 6 });
  });

  it('keeps the pieces in order, as one pack', () => {
    const packs = new ClonePacks({ bytesMax: 1000, entryBytesMax: 500, recordingBytesMax: 1000 });
    const found = packs.find(1, [a], WHOLE);
    if (!('recording' in found)) throw new Error('expected a miss');
    found.recording.add(Buffer.from('PACK'));
    found.recording.add(Buffer.from('-body'));
    found.recording.finish(NO_IDS);
    const kept = packs.find(1, [a], WHOLE);
    expect('pack' in kept && Buffer.concat(kept.pack)).toEqual(Buffer.from('PACK-body'));
  });

  it('keeps no pack over the entry limit, nor one abandoned or never finished', () => {
    const packs = new ClonePacks({ bytesMax: 1000, entryBytesMax: 500, recordingBytesMax: 1000 });
    const large = packs.find(1, [a], WHOLE);
    if (!('recording' in large)) throw new Error('expected a miss');
    large.recording.add(Buffer.alloc(300));
    large.recording.add(Buffer.alloc(300));
    expect(large.recording.recording).toBe(false);
    large.recording.finish(NO_IDS);
    const abandoned = packs.find(1, [b], WHOLE);
    if (!('recording' in abandoned)) throw new Error('expected a miss');
    abandoned.recording.add(Buffer.alloc(10));
    abandoned.recording.abandon();
    abandoned.recording.finish(NO_IDS);
    const cut = packs.find(2, [a], WHOLE);
    if (!('recording' in cut)) throw new Error('expected a miss');
    cut.recording.add(Buffer.alloc(10));
    expect(packs.bytesUsed).toBe(0);
    for (const [project, wants] of [[1, [a]], [1, [b]], [2, [a]]] as const) expect('recording' in packs.find(project, [...wants], WHOLE)).toBe(true);
  });

  it('holds at most recordingBytesMax in the recordings under way together, and frees what a finished or abandoned one held', () => {
    const packs = new ClonePacks({ bytesMax: 1000, entryBytesMax: 500, recordingBytesMax: 600 });
    const recordingOf = (wants: Buffer[]) => {
      const found = packs.find(1, wants, WHOLE);
      if (!('recording' in found)) throw new Error('expected a miss');
      return found.recording;
    };
    const first = recordingOf([a]);
    const second = recordingOf([b]);
    first.add(Buffer.alloc(400));
    second.add(Buffer.alloc(150));
    expect(packs.recordingBytes).toBe(550);
    // 100 more would pass 600 together: that recording stops, and what it held is free again.
    second.add(Buffer.alloc(100));
    expect(second.recording).toBe(false);
    expect(packs.recordingBytes).toBe(400);
    first.finish(NO_IDS);
    expect(packs.recordingBytes).toBe(0);
    expect(packs.bytesUsed).toBe(400);
    const third = recordingOf([a, b]);
    third.add(Buffer.alloc(300));
    third.abandon();
    third.finish(NO_IDS);
    expect(packs.recordingBytes).toBe(0);
    expect(packs.bytesUsed).toBe(400);
  });

  it('offers the pack last kept for a whole clone of the project in the same entry form, with its tips and ids, to grow', () => {
    const packs = new ClonePacks({ bytesMax: 1000, entryBytesMax: 500, recordingBytesMax: 1000 });
    const missed = (project: number, wants: Buffer[], shape: ClonePackShape = WHOLE) => {
      const found = packs.find(project, wants, shape);
      if (!('recording' in found)) throw new Error('expected a miss');
      return found;
    };
    expect(missed(1, [a]).grows).toBeUndefined();
    const first = missed(1, [a]);
    first.recording.add(Buffer.alloc(100, 1));
    first.recording.finish(() => Buffer.from(a));
    // A shallow clone's pack is not offered: it does not hold every object its tips reach.
    made(packs, 1, [b], 50, 2, { ...WHOLE, depth: 1 });
    const grows = missed(1, [b]).grows;
    expect(grows).toEqual({ pieces: [Buffer.alloc(100, 1)], tips: [a], ids: Buffer.from(a) });
    expect(missed(1, [a, b], { ...WHOLE, depth: 2 }).grows).toBeUndefined();
    expect(missed(1, [b], { ...WHOLE, ofsDelta: false }).grows).toBeUndefined();
    expect(missed(2, [b]).grows).toBeUndefined();
    // The ids count in the bytes kept.
    expect(packs.bytesUsed).toBe(100 + 20 + 50);
    // The pack kept last is the one offered.
    made(packs, 1, [a, b], 30, 3);
    expect(missed(1, [b]).grows?.tips).toEqual([a, b]);
    packs.forgetProject(1);
    expect(missed(1, [b]).grows).toBeUndefined();
  });

  it('stays within its bytes, forgetting the least recently served first, and forgets a dropped project', () => {
    const packs = new ClonePacks({ bytesMax: 1000, entryBytesMax: 500, recordingBytesMax: 1000 });
    made(packs, 1, [a], 400);
    made(packs, 2, [a], 400);
    expect('pack' in packs.find(1, [a], WHOLE)).toBe(true);
    made(packs, 3, [a], 400);
    expect(packs.bytesUsed).toBe(800);
    expect('pack' in packs.find(1, [a], WHOLE)).toBe(true);
    expect('recording' in packs.find(2, [a], WHOLE)).toBe(true);
    packs.forgetProject(1);
    expect(packs.bytesUsed).toBe(400);
    expect('recording' in packs.find(1, [a], WHOLE)).toBe(true);
    expect('pack' in packs.find(3, [a], WHOLE)).toBe(true);
  });
});

describe('a clone cut short', () => {
  it('frees what its recording held and keeps nothing', async () => {
    const { store, close } = openTestStore();
    try {
      // Incompressible files, so the pack takes more than one write (about a megabyte each).
      const files = [1, 2, 3].map((n) => ({ path: `noise-${n}.bin`, bytes: randomBytes(600 * 1024) }));
      const repo: Repo = { ...(await newTestRepo(store, files)), clonePacks: new ClonePacks({ bytesMax: 64 << 20, entryBytesMax: 16 << 20, recordingBytesMax: 32 << 20 }) };
      const head = await inReadTx(repo, (tx) => branchHead(tx, 'main'));
      const request: FetchRequest = { wants: [head], haves: [], clientShallows: [], depth: null, deepenRelative: false, deepenSince: null, deepenNot: [], filter: null, done: true, negotiates: true, capabilities: new Set(['ofs-delta']) };
      const answer = uploadPackV0(repo, request);
      let received = 0;
      while (received < 1024 * 1024) {
        const next = await answer.next();
        if (next.done) throw new Error('the pack ended within a megabyte');
        received += next.value.length;
      }
      expect(repo.clonePacks!.recordingBytes).toBeGreaterThan(0);
      // The client goes away: the server's stream is returned early.
      await answer.return(undefined);
      expect(repo.clonePacks!.recordingBytes).toBe(0);
      expect(repo.clonePacks!.bytesUsed).toBe(0);
    } finally {
      await close();
    }
  });
});
