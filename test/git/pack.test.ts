import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeCommit } from '../../src/git/commit.js';
import { createDelta } from '../../src/git/delta.js';
import { hashObject, oidToHex, type ObjectType, type Oid } from '../../src/git/oid.js';
import {
  encodeEntryHeader,
  encodeOfsDistance,
  OBJ_BLOB,
  OBJ_OFS_DELTA,
  OBJ_REF_DELTA,
  PACK_HEADER_BYTES,
  PackFormatError,
  PackWriter,
  parsePack,
  type ParsePackOptions,
} from '../../src/git/pack.js';
import { encodeTree } from '../../src/git/tree.js';
import { git, initBareRepo, scratchDir } from '../support/git.js';

const scratch = scratchDir();
afterAll(() => scratch.remove());
let repoCount = 0;
function bareRepo(): string {
  const path = `${scratch.path}/repo${repoCount++}.git`;
  initBareRepo(path);
  return path;
}

function lines(seed: string, count: number): Buffer {
  return Buffer.from(Array.from({ length: count }, (_, i) => `${seed} line ${i} ${(i * 7919) % 1000}\n`).join(''));
}

const signature = { name: 'Pack Tester', email: 'pack@example.com', timestamp: 1700000000, timezone: '+0000' };

/** A commit over four blobs, written with every kind of entry PackWriter offers. */
function writeSamplePack(): { pack: Buffer; chunks: Buffer[]; commitOid: Oid; oids: Oid[] } {
  const a = lines('alpha', 400);
  const b = lines('beta', 300);
  const c = Buffer.concat([a.subarray(0, 5000), Buffer.from('an edit in the middle\n'), a.subarray(5000)]);
  const d = Buffer.concat([b, Buffer.from('appended to beta\n')]);
  const [aOid, bOid, cOid, dOid] = [a, b, c, d].map((body) => hashObject('blob', body));
  const tree = encodeTree([
    { name: 'a.txt', mode: '100644', oid: aOid },
    { name: 'b.txt', mode: '100644', oid: bOid },
    { name: 'c.txt', mode: '100755', oid: cOid },
    { name: 'd.txt', mode: '100644', oid: dOid },
  ]);
  const treeOid = hashObject('tree', tree);
  const commit = encodeCommit({ tree: treeOid, parents: [], author: signature, committer: signature, extraHeaders: [], message: 'packed\n' });
  const commitOid = hashObject('commit', commit);

  const writer = new PackWriter(6);
  const chunks = [writer.start()];
  const aEntry = writer.addObject('blob', a);
  chunks.push(aEntry.bytes);
  chunks.push(writer.addDeflatedObject('blob', b.length, deflateSync(b, { level: 9 })).bytes);
  chunks.push(writer.addOfsDelta(aEntry.offset, createDelta(a, c)).bytes);
  chunks.push(writer.addRefDelta(bOid, createDelta(b, d)).bytes);
  chunks.push(writer.addObject('tree', tree).bytes);
  chunks.push(writer.addDeflatedObject('commit', commit.length, deflateSync(commit)).bytes);
  chunks.push(writer.finish());
  expect(writer.bytesWritten).toBe(Buffer.concat(chunks).length);
  return { pack: Buffer.concat(chunks), chunks, commitOid, oids: [aOid, bOid, cOid, dOid, treeOid, commitOid] };
}

describe('PackWriter', () => {
  it('writes a pack that git index-pack --strict accepts and git fsck --strict finds clean', () => {
    const { pack, chunks, commitOid, oids } = writeSamplePack();
    // Chunks are produced one entry at a time: no chunk holds more than one object.
    expect(chunks[0].length).toBe(PACK_HEADER_BYTES);
    expect(chunks.at(-1)?.length).toBe(20);

    const repo = bareRepo();
    const indexed = git(['index-pack', '--strict', '--stdin'], { cwd: repo, input: pack }).trim();
    const packHash = pack.subarray(pack.length - 20).toString('hex');
    expect(indexed).toBe(`pack\t${packHash}`);

    const verify = git(['verify-pack', '-v', `objects/pack/pack-${packHash}.idx`], { cwd: repo });
    const listed = verify
      .split('\n')
      .map((line) => line.split(/\s+/)[0])
      .filter((word) => /^[0-9a-f]{40}$/.test(word));
    expect(listed.sort()).toEqual(oids.map(oidToHex).sort());
    expect(verify).toMatch(/chain length = 1: 2 objects/);

    git(['update-ref', 'refs/heads/main', oidToHex(commitOid)], { cwd: repo });
    expect(git(['fsck', '--strict', '--no-dangling'], { cwd: repo })).toBe('');
    expect(git(['cat-file', '-p', 'main:c.txt'], { cwd: repo })).toContain('an edit in the middle');
  });

  it('round-trips through parsePack', () => {
    const { pack, oids } = writeSamplePack();
    const parsed = parsePack(pack);
    expect(parsed.version).toBe(2);
    expect(parsed.objects.map((object) => oidToHex(object.oid))).toEqual(oids.map(oidToHex));
    expect(parsed.objects.map((object) => object.deltaDepth)).toEqual([0, 0, 1, 1, 0, 0]);
    expect(parsed.objects.map((object) => object.type)).toEqual(['blob', 'blob', 'blob', 'blob', 'tree', 'commit']);
  });

  it('writes an empty pack git accepts', () => {
    const writer = new PackWriter(0);
    const pack = Buffer.concat([writer.start(), writer.finish()]);
    expect(parsePack(pack).objects).toEqual([]);
    git(['index-pack', '--strict', '--stdin'], { cwd: bareRepo(), input: pack });
  });

  it('enforces its own protocol: header first, the announced count, valid bases', () => {
    const early = new PackWriter(1);
    expect(() => early.addObject('blob', Buffer.from('x'))).toThrow(PackFormatError);
    early.start();
    expect(() => early.start()).toThrow(PackFormatError);
    expect(() => early.finish()).toThrow(/announced 1 objects but 0/);
    const first = early.addObject('blob', Buffer.from('x'));
    expect(() => early.addObject('blob', Buffer.from('y'))).toThrow(/only 1/);
    expect(first.offset).toBe(PACK_HEADER_BYTES);

    const writer = new PackWriter(3);
    writer.start();
    expect(() => writer.addOfsDelta(PACK_HEADER_BYTES, createDelta(Buffer.from('a'), Buffer.from('b')))).toThrow(/not an earlier entry/);
    const entry = writer.addObject('blob', Buffer.from('abc'));
    expect(() => writer.addOfsDelta(entry.offset + 1, createDelta(Buffer.from('a'), Buffer.from('b')))).toThrow(/not an earlier entry/);
    expect(() => writer.addDeflatedObject('blob', 3, Buffer.from('abc'))).toThrow(/not a zlib stream/);
    expect(() => writer.addRefDelta(Buffer.alloc(19), Buffer.from([1, 1, 1, 0x61]))).toThrow(/20 bytes/);
    expect(() => writer.addRefDelta(Buffer.alloc(20), Buffer.from([0x80]))).toThrow(/invalid delta/);
    // Deltas git cannot read back (see the interop test below): under 4 bytes, or an empty result.
    expect(() => writer.addOfsDelta(entry.offset, createDelta(Buffer.from('abc'), Buffer.alloc(0)))).toThrow(/shorter than git accepts/);
    expect(() => writer.addOfsDelta(entry.offset, createDelta(Buffer.alloc(200_000), Buffer.alloc(0)))).toThrow(/empty object/);
    expect(() => new PackWriter(-1)).toThrow(PackFormatError);
    expect(() => new PackWriter(2 ** 32)).toThrow(PackFormatError);
  });

  it('has git refuse the deltas it refuses to write: one under 4 bytes, one that makes an empty object', () => {
    const small = Buffer.from('abc');
    const short = packOf([wholeEntry(OBJ_BLOB, small), refDeltaEntry(hashObject('blob', small), createDelta(small, Buffer.alloc(0)))]);
    expect(() => git(['index-pack', '--strict', '--stdin'], { cwd: bareRepo(), input: short })).toThrow(/failed to apply delta/);
    const large = Buffer.alloc(200_000, 0x61);
    const empty = packOf([wholeEntry(OBJ_BLOB, large), refDeltaEntry(hashObject('blob', large), createDelta(large, Buffer.alloc(0)))]);
    const repo = bareRepo();
    git(['index-pack', '--strict', '--stdin'], { cwd: repo, input: empty });
    expect(() => git(['cat-file', 'blob', oidToHex(hashObject('blob', Buffer.alloc(0)))], { cwd: repo })).toThrow();
  });

  it('encodes sizes and OFS distances as gitformat-pack describes', () => {
    expect([...encodeEntryHeader(OBJ_BLOB, 15)]).toEqual([0x3f]);
    expect([...encodeEntryHeader(OBJ_BLOB, 16)]).toEqual([0xb0, 0x01]);
    expect([...encodeOfsDistance(127)]).toEqual([0x7f]);
    // Two bytes: (1 << 7 | 0) + 2^7 = 128.
    expect([...encodeOfsDistance(128)]).toEqual([0x80, 0x00]);
    expect([...encodeOfsDistance(16511)]).toEqual([0xff, 0x7f]);
    expect([...encodeOfsDistance(16512)]).toEqual([0x80, 0x80, 0x00]);
  });
});

// ---------------------------------------------------------------------------------------------
// Hand-made packs, valid and not

function withTrailer(withoutTrailer: Buffer): Buffer {
  return Buffer.concat([withoutTrailer, createHash('sha1').update(withoutTrailer).digest()]);
}

function header(count: number, version = 2): Buffer {
  const bytes = Buffer.alloc(PACK_HEADER_BYTES);
  bytes.write('PACK', 0, 'latin1');
  bytes.writeUInt32BE(version, 4);
  bytes.writeUInt32BE(count, 8);
  return bytes;
}

const wholeEntry = (type: number, body: Buffer) => Buffer.concat([encodeEntryHeader(type, body.length), deflateSync(body)]);
const refDeltaEntry = (base: Oid, delta: Buffer) => Buffer.concat([encodeEntryHeader(OBJ_REF_DELTA, delta.length), base, deflateSync(delta)]);
const ofsDeltaEntry = (distance: number, delta: Buffer) =>
  Buffer.concat([encodeEntryHeader(OBJ_OFS_DELTA, delta.length), encodeOfsDistance(distance), deflateSync(delta)]);

function packOf(entries: Buffer[], count = entries.length, version = 2): Buffer {
  return withTrailer(Buffer.concat([header(count, version), ...entries]));
}

function expectRefused(pack: Buffer, message: RegExp, options: ParsePackOptions = {}): void {
  const started = performance.now();
  expect(() => parsePack(pack, options)).toThrow(PackFormatError);
  expect(() => parsePack(pack, options)).toThrow(message);
  expect(performance.now() - started).toBeLessThan(2000);
}

describe('parsePack on valid hand-made packs', () => {
  it('resolves a REF_DELTA whose base comes later in the pack, and reads version 3', () => {
    const base = lines('base', 50);
    const target = Buffer.concat([base, Buffer.from('more\n')]);
    const entries = [refDeltaEntry(hashObject('blob', base), createDelta(base, target)), wholeEntry(OBJ_BLOB, base)];
    for (const version of [2, 3]) {
      const parsed = parsePack(packOf(entries, 2, version));
      expect(parsed.objects[0].body.equals(target)).toBe(true);
      expect(parsed.objects[1].body.equals(base)).toBe(true);
      expect(parsed.version).toBe(version);
    }
  });

  it('finds the end of each zlib stream exactly, whatever the compression', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.uint8Array({ maxLength: 3000 }), fc.integer({ min: 0, max: 9 })), { maxLength: 8 }), (bodies) => {
        const entries = bodies.map(([body, level]) => Buffer.concat([encodeEntryHeader(OBJ_BLOB, body.length), deflateSync(body, { level })]));
        const parsed = parsePack(packOf(entries));
        expect(parsed.objects.map((object) => object.body)).toEqual(bodies.map(([body]) => Buffer.from(body)));
      }),
      { numRuns: 100 },
    );
  });
});

describe('parsePack with dropBlobBodies', () => {
  it('keeps trees and commits, and rebuilds each blob from the pack on read, equal to a full parse, in any order', () => {
    const { pack, oids } = writeSamplePack();
    const full = parsePack(pack);
    for (const order of [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]]) {
      const dropped = parsePack(pack, { dropBlobBodies: true });
      expect(dropped.objects.map((object) => object.oid)).toEqual(oids);
      for (const object of dropped.objects) {
        const kept = object.type !== 'blob';
        // A kept body is the object's own; a dropped one is read through a getter (rebuilt then).
        expect(Object.getOwnPropertyDescriptor(object, 'body') !== undefined).toBe(kept);
        expect(object.bodyBytes === undefined).toBe(kept);
      }
      for (const index of order) {
        const object = dropped.objects[index];
        expect(object.bodyBytes).toBe(full.objects[index].body.length);
        expect(object.body.equals(full.objects[index].body)).toBe(true);
        // Rebuilt once, then the same buffer.
        expect(object.body).toBe(object.body);
      }
    }
  });

  it('resolves trees of blob deltas of any shape while reusing dropped bodies, every id and body right', () => {
    // Each blob is its parent's text with lines added or cut, so sizes rise and fall down a chain
    // and a later version fits (or not) where a dropped one was.
    const shapes = fc.array(fc.tuple(fc.nat(), fc.integer({ min: -40, max: 60 })), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(shapes, (nodes) => {
        const bodies: Buffer[] = [];
        const parents: number[] = [];
        nodes.forEach(([pick, change], i) => {
          const parent = i === 0 || pick % 4 === 0 ? -1 : pick % i;
          const from = parent < 0 ? lines(`root ${i}`, 50) : bodies[parent];
          const text = change >= 0 ? Buffer.concat([from, lines(`v${i}`, change)]) : from.subarray(0, Math.max(1, from.length + change * 20));
          bodies.push(Buffer.from(text));
          parents.push(parent);
        });
        const writer = new PackWriter(bodies.length);
        const chunks = [writer.start()];
        const offsets: number[] = [];
        bodies.forEach((body, i) => {
          const entry = parents[i] < 0 ? writer.addObject('blob', body) : writer.addOfsDelta(offsets[parents[i]], createDelta(bodies[parents[i]], body));
          offsets.push(entry.offset);
          chunks.push(entry.bytes);
        });
        chunks.push(writer.finish());
        const parsed = parsePack(Buffer.concat(chunks), { dropBlobBodies: true });
        expect(parsed.objects.map((object) => oidToHex(object.oid))).toEqual(bodies.map((body) => oidToHex(hashObject('blob', body))));
        parsed.objects.forEach((object, i) => expect(object.body.equals(bodies[i])).toBe(true));
      }),
      { numRuns: 200 },
    );
  });

  it('tells of each object once as it is resolved, every delta after its base, as the parse then gives it', () => {
    // Trees of OFS and REF deltas, a REF_DELTA's base sometimes later in the pack, blobs dropped.
    const shapes = fc.array(fc.tuple(fc.nat(), fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(shapes, (nodes) => {
        const bodies: Buffer[] = [];
        const parents: number[] = [];
        nodes.forEach(([pick], i) => {
          const parent = i === 0 || pick % 3 === 0 ? -1 : pick % i;
          bodies.push(Buffer.concat([parent < 0 ? lines(`root ${i}`, 40) : bodies[parent], lines(`v${i}`, 3)]));
          parents.push(parent);
        });
        // Pack order: a node whose REF flag is set goes in before its base (its base id is known).
        const order = bodies.map((_, i) => i).sort((a, b) => (nodes[a][2] && parents[a] >= 0 ? parents[a] - 0.5 : a) - (nodes[b][2] && parents[b] >= 0 ? parents[b] - 0.5 : b));
        const entries = order.map((i) => {
          if (parents[i] < 0) return wholeEntry(OBJ_BLOB, bodies[i]);
          return refDeltaEntry(hashObject('blob', bodies[parents[i]]), createDelta(bodies[parents[i]], bodies[i]));
        });
        const told: Array<{ index: number; oid: string; type: ObjectType; depth: number; base: string | null; deflated: Buffer; body: Buffer }> = [];
        const parsed = parsePack(packOf(entries), {
          dropBlobBodies: true,
          onResolved: (index, object) =>
            told.push({ index, oid: oidToHex(object.oid), type: object.type, depth: object.deltaDepth, base: object.packed?.base ? oidToHex(object.packed.base) : null, deflated: object.packed!.deflated, body: Buffer.from(object.body) }),
        });
        expect(told.map(({ index }) => index).sort((a, b) => a - b)).toEqual(order.map((_, index) => index));
        const toldAt = new Map(told.map(({ oid }, at) => [oid, at]));
        told.forEach(({ index, oid, type, depth, base, deflated, body }, at) => {
          const object = parsed.objects[index];
          expect({ oid, type, depth, base }).toEqual({ oid: oidToHex(object.oid), type: object.type, depth: object.deltaDepth, base: object.packed?.base ? oidToHex(object.packed.base) : null });
          expect(deflated).toEqual(object.packed!.deflated);
          expect(body.equals(bodies[order[index]])).toBe(true);
          if (base) expect(toldAt.get(base)!).toBeLessThan(at);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('rebuilds a thin delta from the external base it was resolved against', () => {
    const base = lines('external base', 80);
    const target = Buffer.concat([base, Buffer.from('and one more line\n')]);
    const baseOid = hashObject('blob', base);
    let asked = 0;
    const resolveExternal = (oid: Oid) => {
      asked++;
      return oid.equals(baseOid) ? { type: 'blob' as const, body: base } : undefined;
    };
    const parsed = parsePack(packOf([refDeltaEntry(baseOid, createDelta(base, target))], 1), { resolveExternal, dropBlobBodies: true });
    expect(parsed.objects[0].oid).toEqual(hashObject('blob', target));
    expect(asked).toBe(1);
    expect(parsed.objects[0].body.equals(target)).toBe(true);
    expect(asked).toBe(2);
  });
});

describe('parsePack refuses malformed packs', () => {
  const base = lines('base', 40);
  const target = Buffer.concat([base.subarray(0, 300), Buffer.from('changed'), base.subarray(300)]);
  const valid = packOf([wholeEntry(OBJ_BLOB, base)]);

  it('refuses truncated packs at every length', () => {
    const { pack } = writeSamplePack();
    for (let length = 0; length < pack.length; length += 7) {
      expectRefused(pack.subarray(0, length), /too short|checksum|announces/);
    }
  });

  it('refuses a bad checksum and a flipped byte', () => {
    const badTrailer = Buffer.from(valid);
    badTrailer[badTrailer.length - 1] ^= 1;
    expectRefused(badTrailer, /checksum/);
    const badBody = Buffer.from(valid);
    badBody[PACK_HEADER_BYTES + 5] ^= 0x40;
    expectRefused(badBody, /checksum/);
  });

  it('refuses a bad signature or version', () => {
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base)], 1, 4), /unsupported pack version 4/);
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base)], 1, 1), /unsupported pack version 1/);
    const wrongSignature = Buffer.from(valid);
    wrongSignature.write('KCAP', 0, 'latin1');
    expectRefused(wrongSignature, /signature/);
  });

  it('refuses a count that does not match the entries', () => {
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base)], 2), /announces 2 objects|ends after 1 of 2/);
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base), wholeEntry(OBJ_BLOB, target)], 1), /unexpected bytes after its last object/);
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base)], 0xffffffff), /over the limit/);
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base), wholeEntry(OBJ_BLOB, target)]), /2 objects is over the limit of 1/, { objectsMax: 1 });
  });

  it('refuses two REF_DELTAs that are each other’s base, asking for each base once', () => {
    const a = lines('cycle a', 20);
    const b = lines('cycle b', 20);
    const cyclic = packOf([refDeltaEntry(hashObject('blob', b), createDelta(b, a)), refDeltaEntry(hashObject('blob', a), createDelta(a, b))]);
    const asked: string[] = [];
    expectRefused(cyclic, /2 delta\(s\) could not be resolved: base missing or delta cycle/, {
      resolveExternal: (oid) => {
        asked.push(oidToHex(oid));
        return undefined;
      },
    });
    expect(asked.length).toBe(2 * 2); // two bases, and expectRefused parses twice
  });

  it('refuses OFS_DELTA offsets that leave the pack, point at themselves or into an entry', () => {
    const first = wholeEntry(OBJ_BLOB, base);
    const delta = createDelta(base, target);
    expectRefused(packOf([first, ofsDeltaEntry(first.length + PACK_HEADER_BYTES + 1, delta)]), /not the start of an earlier object/);
    expectRefused(packOf([first, ofsDeltaEntry(2 ** 40, delta)]), /not the start of an earlier object/);
    expectRefused(packOf([first, ofsDeltaEntry(first.length - 1, delta)]), /not the start of an earlier object/);
    // Distance 0 (the entry itself) cannot be encoded by encodeOfsDistance; write it by hand.
    const selfReference = Buffer.concat([encodeEntryHeader(OBJ_OFS_DELTA, delta.length), Buffer.from([0]), deflateSync(delta)]);
    expectRefused(packOf([first, selfReference]), /not the start of an earlier object/);
    // And the pack still parses with the right distance.
    expect(parsePack(packOf([first, ofsDeltaEntry(first.length, delta)])).objects[1].body.equals(target)).toBe(true);
  });

  it('refuses oversize declared sizes before inflating, and streams that disagree with them', () => {
    const small = deflateSync(Buffer.from('tiny'));
    expectRefused(packOf([Buffer.concat([encodeEntryHeader(OBJ_BLOB, 2 ** 40), small])]), /declares 1099511627776 bytes, over the limit/);
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base)]), /over the limit of 100/, { objectBytesMax: 100 });
    // A stream that inflates past its declared size (a zip bomb) is cut off at the declared size.
    const bomb = deflateSync(Buffer.alloc(10 * 1024 * 1024));
    expectRefused(packOf([Buffer.concat([encodeEntryHeader(OBJ_BLOB, 1000), bomb])]), /inflates past its declared size/);
    expectRefused(packOf([Buffer.concat([encodeEntryHeader(OBJ_BLOB, 5), small])]), /inflates to 4 bytes, declared 5/);
    expectRefused(packOf([Buffer.concat([encodeEntryHeader(OBJ_BLOB, 4), Buffer.from('not zlib at all')])]), /bad zlib stream/);
    expectRefused(packOf([wholeEntry(OBJ_BLOB, base), wholeEntry(OBJ_BLOB, target)]), /more than the limit of/, {
      totalBytesMax: base.length + 10,
    });
    // An endless size field.
    expectRefused(packOf([Buffer.concat([Buffer.alloc(12, 0xff), small])]), /oversized size field/);
  });

  it('refuses a delta whose result is over the limit, or that does not fit its base', () => {
    const first = wholeEntry(OBJ_BLOB, base);
    expectRefused(packOf([first, ofsDeltaEntry(first.length, createDelta(base, target))]), /makes \d+ bytes, over the limit/, {
      objectBytesMax: base.length + 1,
    });
    expectRefused(packOf([first, ofsDeltaEntry(first.length, createDelta(target, base))]), /delta at \d+: delta expects a base/);
  });

  it('refuses delta chains deeper than the limit', () => {
    const versions = Array.from({ length: 6 }, (_, i) => lines('version', 30 + i));
    const entries = [wholeEntry(OBJ_BLOB, versions[0])];
    for (let i = 1; i < versions.length; i++) entries.push(ofsDeltaEntry(entries[i - 1].length, createDelta(versions[i - 1], versions[i])));
    const chain = packOf(entries);
    expect(parsePack(chain, { deltaDepthMax: 5 }).objects.map((object) => object.deltaDepth)).toEqual([0, 1, 2, 3, 4, 5]);
    expectRefused(chain, /deeper than the limit of 4/, { deltaDepthMax: 4 });
  });

  it('refuses invalid and reserved types', () => {
    for (const type of [0, 5]) {
      const entry = Buffer.concat([Buffer.from([(type << 4) | 4]), deflateSync(Buffer.from('abcd'))]);
      expectRefused(packOf([entry]), new RegExp(`invalid type ${type}`));
    }
  });

  it('throws only PackFormatError on mutated packs, in bounded time', () => {
    const { pack } = writeSamplePack();
    const withoutTrailer = pack.subarray(0, pack.length - 20);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: withoutTrailer.length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.nat({ max: withoutTrailer.length }),
        (edits, cut) => {
          const mutated = Buffer.from(withoutTrailer.subarray(0, Math.max(cut, PACK_HEADER_BYTES)));
          for (const [at, value] of edits) if (at < mutated.length) mutated[at] = value;
          const started = performance.now();
          try {
            parsePack(withTrailer(mutated), { objectBytesMax: 1 << 20 });
          } catch (error) {
            expect(error).toBeInstanceOf(PackFormatError);
          }
          expect(performance.now() - started).toBeLessThan(1000);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('PackWriter output is deterministic', () => {
  it('produces the same bytes for the same objects', () => {
    const make = () => {
      const writer = new PackWriter(1, { compressionLevel: 1 });
      return Buffer.concat([writer.start(), writer.addObject('blob' as ObjectType, lines('same', 10)).bytes, writer.finish()]);
    };
    expect(make().equals(make())).toBe(true);
  });
});
