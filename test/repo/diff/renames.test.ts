/**
 * Rename detection's reads (src/repo/diff/renames.ts): sizes first, then only the blobs of pairs
 * their sizes do not rule out, in batches when the access offers them, and the same pairs whether
 * it does or not. What git pairs is checked against git by the compare and blame interop tests.
 */
import { describe, expect, it } from 'vitest';
import { hashObject, oidToHex, type Oid } from '../../../src/git/oid.js';
import { detectRenames, type BlobAccess, type RenameSide } from '../../../src/repo/diff/renames.js';

/** Blobs in memory, counting what is read and how. */
function memoryBlobs(contents: Buffer[], batched: boolean) {
  const byHex = new Map(contents.map((body) => [oidToHex(hashObject('blob', body)), body]));
  const read: string[] = [];
  const calls = { readBlob: 0, blobSize: 0, readBlobs: 0, blobSizes: 0 };
  const body = (oid: Oid) => {
    const found = byHex.get(oidToHex(oid));
    if (!found) throw new Error(`blob ${oidToHex(oid)} is missing`);
    read.push(oidToHex(oid));
    return found;
  };
  const access: BlobAccess = {
    readBlob: async (oid) => {
      calls.readBlob++;
      return body(oid);
    },
    blobSize: async (oid) => {
      calls.blobSize++;
      return byHex.get(oidToHex(oid))?.length ?? 0;
    },
  };
  if (batched) {
    access.readBlobs = async (oids) => {
      calls.readBlobs++;
      return oids.map(body);
    };
    access.blobSizes = async (oids) => {
      calls.blobSizes++;
      return oids.map((oid) => byHex.get(oidToHex(oid))?.length ?? 0);
    };
  }
  return { access, read, calls };
}

const lines = (seed: number, count: number) => Buffer.from(Array.from({ length: count }, (_, i) => `line ${seed} ${i} ${'x'.repeat((seed * 7 + i) % 13)}`).join('\n') + '\n');
const side = (path: string, body: Buffer, mode: RenameSide['version']['mode'] = '100644'): RenameSide => ({ path, version: { mode, oid: hashObject('blob', body) } });

describe('detectRenames', () => {
  // Sources and destinations that take every step: exact, basename and the matrix, with a pair too
  // different in size to be read.
  const bodies = Array.from({ length: 40 }, (_, i) => lines(i, 40 + (i % 5) * 10));
  const edited = (i: number) => Buffer.concat([bodies[i], Buffer.from(`edit ${i}\n`)]);
  const tiny = Buffer.from('tiny\n');
  const huge = lines(99, 4000);
  const sources = [
    side('a/exact.txt', bodies[0]),
    side('a/same-name.txt', bodies[1]),
    ...Array.from({ length: 20 }, (_, i) => side(`old/m${i}.txt`, bodies[10 + i])),
    side('small/tiny.txt', tiny),
    side('link', bodies[2], '120000'),
  ];
  const destinations = [
    side('b/exact-moved.txt', bodies[0]),
    side('b/same-name.txt', edited(1)),
    ...Array.from({ length: 20 }, (_, i) => side(`new/n${i}.txt`, edited(10 + ((i * 7) % 20)))),
    side('big/huge.txt', huge),
    side('link2', bodies[2], '120000'),
  ];
  const contents = [...bodies, ...Array.from({ length: 40 }, (_, i) => edited(i)), tiny, huge];

  it('pairs the same files whether the blob access reads in batches or not', async () => {
    const single = memoryBlobs(contents, false);
    const batched = memoryBlobs(contents, true);
    const one = await detectRenames(sources, destinations, single.access);
    const other = await detectRenames(sources, destinations, batched.access);
    expect([...other]).toEqual([...one]);
    expect(one.get(0)).toEqual({ source: 0, score: 60000 });
    expect(one.get(1)?.source).toBe(1);
    expect(one.get(23)).toEqual({ source: 23, score: 60000 });
    for (let i = 0; i < 20; i++) expect(one.get(2 + i)?.source).toBe(2 + ((i * 7) % 20));
    expect(one.has(22)).toBe(false);
    // Batched: a read of sizes and one of blobs per step, never one per blob.
    expect(batched.calls.readBlob + batched.calls.blobSize).toBe(0);
    expect(batched.calls.blobSizes).toBeLessThanOrEqual(3);
    expect(batched.calls.readBlobs).toBeLessThanOrEqual(1 + destinations.length);
  });

  it('reads each blob once, and never one whose size rules every pair out', async () => {
    const batched = memoryBlobs(contents, true);
    await detectRenames(sources, destinations, batched.access);
    expect(new Set(batched.read).size).toBe(batched.read.length);
    // The huge file is far larger than every source, the tiny one far smaller than every destination;
    // exact renames need no content at all.
    for (const body of [huge, tiny, bodies[0], bodies[2]]) expect(batched.read).not.toContain(oidToHex(hashObject('blob', body)));
  });

  it('reads nothing when sizes alone decide', async () => {
    const batched = memoryBlobs([tiny, huge], true);
    const found = await detectRenames([side('a/x.txt', tiny)], [side('b/x.txt', huge)], batched.access);
    expect(found.size).toBe(0);
    expect(batched.read).toEqual([]);
  });
});
