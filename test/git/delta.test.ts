import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyDelta,
  createDelta,
  createDeltaWithIndex,
  DeltaError,
  DeltaIndex,
  DELTA_BLOCK_BYTES,
  DELTA_COPY_SIZE_ZERO_MEANS,
  DELTA_INSERT_BYTES_MAX,
  encodeDeltaSize,
  readDeltaHeader,
  readDeltaSize,
} from '../../src/git/delta.js';
import { hashObject, oidToHex, type ObjectType } from '../../src/git/oid.js';
import { PackWriter, parsePack, type PackObject } from '../../src/git/pack.js';
import { encodeTree } from '../../src/git/tree.js';
import { git, gitBytes, initBareRepo, scratchDir } from '../support/git.js';

const delta = (...parts: Array<number[] | Buffer>) => Buffer.concat(parts.map((part) => Buffer.from(part)));

/** Deterministic bytes without structure (SHA-256 in counter mode), so no short run repeats by chance. */
function noise(bytes: number, seed = 0): Buffer {
  const blocks: Buffer[] = [];
  for (let i = 0; i * 32 < bytes; i++) blocks.push(createHash('sha256').update(`${seed}:${i}`).digest());
  return Buffer.concat(blocks).subarray(0, bytes);
}

describe('applyDelta', () => {
  const base = Buffer.from('0123456789abcdef');

  it('copies and inserts', () => {
    // base 16, result 9: copy 4 bytes at offset 2, insert "XYZ", copy 2 bytes at offset 14.
    const d = delta([16, 9], [0x80 | 0x01 | 0x10, 2, 4], [3], Buffer.from('XYZ'), [0x80 | 0x01 | 0x10, 14, 2]);
    expect(applyDelta(base, d).toString()).toBe('2345XYZef');
  });

  it('reads omitted offset bytes as zero and a zero size as 0x10000', () => {
    const big = Buffer.alloc(DELTA_COPY_SIZE_ZERO_MEANS + 5, 1);
    big.write('tail!', DELTA_COPY_SIZE_ZERO_MEANS, 'latin1');
    // 0x80 alone: offset 0, size 0 => 0x10000. Then offset byte 3 only (0x04): offset 0x010000.
    const d = delta(encodeDeltaSize(big.length), encodeDeltaSize(DELTA_COPY_SIZE_ZERO_MEANS + 5), [0x80], [0x80 | 0x04 | 0x10, 0x01, 5]);
    const out = applyDelta(big, d);
    expect(out.length).toBe(DELTA_COPY_SIZE_ZERO_MEANS + 5);
    expect(out.subarray(DELTA_COPY_SIZE_ZERO_MEANS).toString()).toBe('tail!');
  });

  const malformed: Array<[string, Buffer, RegExp]> = [
    ['a wrong base size', delta([15, 1], [1], Buffer.from('x')), /base of 15 bytes/],
    ['a copy past the end of the base', delta([16, 4], [0x80 | 0x01 | 0x10, 14, 4]), /outside a base/],
    ['a copy at a huge offset', delta([16, 1], [0x80 | 0x08 | 0x10, 0xff, 1]), /outside a base/],
    ['a result shorter than declared', delta([16, 5], [1], Buffer.from('x')), /produced 1 bytes, declared 5/],
    ['a result longer than declared', delta([16, 1], [2], Buffer.from('xy')), /past its declared result/],
    ['a copy longer than declared', delta([16, 1], [0x80 | 0x10, 4]), /past its declared result/],
    ['the reserved opcode 0', delta([16, 1], [0], [1], Buffer.from('x')), /reserved/],
    ['a truncated insert', delta([16, 5], [5], Buffer.from('xy')), /truncated/],
    ['a truncated copy', delta([16, 5], [0x80 | 0x01 | 0x02]), /truncated/],
    ['a truncated size', delta([0x90]), /truncated/],
    ['an endless size', delta([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), /too large/],
    ['an empty delta', delta([]), /truncated/],
  ];
  for (const [label, bytes, message] of malformed) {
    it(`refuses ${label}`, () => {
      expect(() => applyDelta(base, bytes)).toThrow(DeltaError);
      expect(() => applyDelta(base, bytes)).toThrow(message);
    });
  }

  it('refuses a declared result over the limit before allocating it', () => {
    const d = delta([16], encodeDeltaSize(2 ** 40));
    expect(() => applyDelta(base, d)).toThrow(/over/);
    expect(() => applyDelta(base, delta([16, 100], [100], Buffer.alloc(100)), 99)).toThrow(/over 99/);
  });

  it('never throws anything but DeltaError on random deltas', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ maxLength: 64 }), (randomBase, randomDelta) => {
        try {
          applyDelta(randomBase, randomDelta, 1 << 20);
        } catch (error) {
          expect(error).toBeInstanceOf(DeltaError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('size encoding', () => {
  it('round-trips sizes up to 2^53', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), (n) => {
        const bytes = encodeDeltaSize(n);
        expect(readDeltaSize(bytes, 0)).toEqual({ value: n, next: bytes.length });
      }),
    );
    expect([...encodeDeltaSize(0)]).toEqual([0]);
    expect([...encodeDeltaSize(128)]).toEqual([0x80, 0x01]);
  });
});

describe('createDelta', () => {
  /** A target made from the base by a few edits, so copies are possible. */
  const editedPair = fc
    .tuple(
      fc.uint8Array({ minLength: 0, maxLength: 3000 }),
      fc.array(fc.tuple(fc.nat(), fc.nat({ max: 200 }), fc.uint8Array({ maxLength: 100 })), { maxLength: 6 }),
    )
    .map(([base, edits]) => {
      let target = Buffer.from(base);
      for (const [position, removed, inserted] of edits) {
        const at = target.length === 0 ? 0 : position % target.length;
        target = Buffer.concat([target.subarray(0, at), Buffer.from(inserted), target.subarray(at + removed)]);
      }
      return { base: Buffer.from(base), target };
    });

  it('round-trips edited and unrelated buffers', () => {
    fc.assert(
      fc.property(editedPair, ({ base, target }) => {
        const made = createDelta(base, target);
        expect(applyDelta(base, made).equals(target)).toBe(true);
        expect(readDeltaHeader(made)).toMatchObject({ baseBytes: base.length, resultBytes: target.length });
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 500 }), fc.uint8Array({ maxLength: 500 }), (a, b) => {
        expect(applyDelta(a, createDelta(a, b)).equals(Buffer.from(b))).toBe(true);
      }),
    );
  });

  it('is small for a small change to a large text and splits long copies', () => {
    const lines = Array.from({ length: 20000 }, (_, i) => `line ${i} of a long file\n`);
    const base = Buffer.from(lines.join(''));
    lines[7000] = 'a changed line\n';
    const target = Buffer.from(lines.join('') + 'appended\n');
    const made = createDelta(base, target);
    expect(made.length).toBeLessThan(200);
    expect(applyDelta(base, made).equals(target)).toBe(true);
  });

  it('gives up past deltaBytesMax', () => {
    const a = Buffer.alloc(1000, 1);
    const b = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 37) % 256));
    expect(createDelta(a, b, 100)).toBeNull();
    expect(createDelta(a, Buffer.concat([a, Buffer.from('x')]), 100)).not.toBeNull();
    // The limit is exact: the delta it would have made is returned at its own size and refused one byte under.
    const made = createDelta(a, b);
    expect(createDelta(a, b, made.length)?.equals(made)).toBe(true);
    expect(createDelta(a, b, made.length - 1)).toBeNull();
  });

  /** Pairs shaped like the cases a delta encoder gets wrong: edges, repetition, moved and long runs. */
  const trickyPair = fc.oneof(
    editedPair,
    fc.record({ base: fc.constant(Buffer.alloc(0)), target: fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)) }),
    fc.record({ base: fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)), target: fc.constant(Buffer.alloc(0)) }),
    fc.uint8Array({ maxLength: 2000 }).map((b) => ({ base: Buffer.from(b), target: Buffer.from(b) })),
    // Repeated blocks: a short unit many times, on both sides, with different counts and a twist.
    fc
      .tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.nat({ max: 300 }), fc.nat({ max: 300 }), fc.uint8Array({ maxLength: 20 }))
      .map(([unit, m, n, twist]) => {
        const repeat = (count: number) => Buffer.concat(Array.from({ length: count }, () => Buffer.from(unit)));
        return { base: repeat(m), target: Buffer.concat([repeat(n), Buffer.from(twist), repeat(m >> 1)]) };
      }),
    // Moved blocks: the target is slices of the base in another order, some twice.
    fc
      .tuple(fc.uint8Array({ minLength: 1, maxLength: 3000 }), fc.array(fc.tuple(fc.nat(), fc.nat({ max: 500 })), { maxLength: 8 }))
      .map(([bytes, slices]) => {
        const base = Buffer.from(bytes);
        const target = Buffer.concat(slices.map(([start, length]) => base.subarray(start % base.length, (start % base.length) + length)));
        return { base, target };
      }),
  );

  it('round-trips empty, identical, unrelated, repetitive and rearranged pairs', () => {
    fc.assert(
      fc.property(trickyPair, ({ base, target }) => {
        const made = createDelta(base, target);
        expect(applyDelta(base, made).equals(target)).toBe(true);
        for (const op of instructions(made)) {
          if (op.kind === 'copy') expect(op.bytes).toBeLessThanOrEqual(DELTA_COPY_SIZE_ZERO_MEANS);
          else expect(op.bytes).toBeLessThanOrEqual(DELTA_INSERT_BYTES_MAX);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('writes copy and insert instructions as git does', () => {
    // Only non-zero offset and size bytes are present; a copy of 0x10000 has no size byte at all.
    const base = noise(0x30000);
    const target = Buffer.concat([Buffer.from('new!'), base.subarray(0x10000, 0x20000), base.subarray(0x100, 0x180)]);
    const made = createDelta(base, target);
    const header = readDeltaHeader(made);
    expect([...made.subarray(header.instructionsOffset)]).toEqual([4, ...Buffer.from('new!'), 0x80 | 0x04, 0x01, 0x80 | 0x02 | 0x10, 0x01, 0x80]);
    expect(applyDelta(base, made).equals(target)).toBe(true);
  });

  it('makes copies of more than 64 KiB as several copies of at most 0x10000', () => {
    const base = noise(300_000);
    const target = Buffer.concat([base.subarray(0, 150_000), Buffer.from('x'), base.subarray(150_000)]);
    const made = createDelta(base, target);
    const ops = instructions(made);
    expect(ops.filter((op) => op.kind === 'insert').map((op) => op.bytes)).toEqual([1]);
    expect(ops.filter((op) => op.kind === 'copy').map((op) => op.bytes)).toEqual([0x10000, 0x10000, 150_000 - 0x20000, 0x10000, 0x10000, 150_000 - 0x20000]);
    expect(applyDelta(base, made).equals(target)).toBe(true);
  });

  it('handles bases and targets over 16 MiB, including runs of one byte, in a small delta', () => {
    const base = Buffer.alloc(17 * 1024 * 1024);
    for (let i = 0; i < base.length; i += 4096) base.write(`block ${i}\n`, i, 'latin1');
    const target = Buffer.concat([base.subarray(0, 9_000_000), Buffer.from('inserted text'), base.subarray(9_000_000, 16_000_000), Buffer.alloc(5000), base.subarray(16_000_000)]);
    const made = createDelta(base, target);
    expect(readDeltaHeader(made)).toMatchObject({ baseBytes: base.length, resultBytes: target.length });
    expect(made.length).toBeLessThan(3000);
    expect(applyDelta(base, made).equals(target)).toBe(true);
  });

  it('is under 1% of a 2.8 MB text for a few edited lines, about the size git makes', () => {
    const lines = Array.from({ length: 50_000 }, (_, i) => `${i}\tconst value${i} = compute(${(i * 7919) % 10007}, "${(i * 31).toString(36)}", options);\n`);
    const base = Buffer.from(lines.join(''));
    for (const at of [10, 9_000, 22_222, 48_000]) lines[at] = `changed ${at}\n`;
    lines.splice(30_000, 0, 'an inserted line\n', 'and another\n');
    const target = Buffer.from(lines.join(''));
    expect(base.length).toBeGreaterThan(2_800_000);
    const made = createDelta(base, target);
    expect(made.length).toBeLessThan(target.length / 100);
    // Four replaced lines and one insertion: a literal run and two copies around each (~10 bytes an edit).
    expect(made.length).toBeLessThan(300);
    expect(applyDelta(base, made).equals(target)).toBe(true);
  });

  it('indexes a huge base every few blocks when it would need more blocks than the cap', () => {
    const base = noise(100_000);
    const capped = new DeltaIndex(base, 1000);
    expect(capped.step).toBeGreaterThan(DELTA_BLOCK_BYTES);
    expect(capped.step % DELTA_BLOCK_BYTES).toBe(0);
    expect(capped.entries).toBeLessThanOrEqual(1000);
    const target = Buffer.concat([base.subarray(500, 60_000), Buffer.from('middle'), base.subarray(60_000)]);
    const made = createDeltaWithIndex(capped, target);
    expect(applyDelta(base, made).equals(target)).toBe(true);
    // Matches longer than the step are still found.
    expect(made.length).toBeLessThan(100);
    // Uncapped, the base is indexed at every block.
    expect(new DeltaIndex(base).step).toBe(DELTA_BLOCK_BYTES);
  });

  it('keeps one index entry for a run of equal blocks and at most 64 per bucket', () => {
    expect(new DeltaIndex(Buffer.alloc(1 << 20)).entries).toBe(1);
    // Blocks of period 32 alternate between two hashes: one entry each, however long the base.
    const periodic = Buffer.from(Array.from({ length: 1 << 20 }, (_, i) => (i % 32) * 7));
    expect(new DeltaIndex(periodic).entries).toBeLessThanOrEqual(128);
    const target = Buffer.concat([periodic.subarray(5, 70_000), Buffer.from('edit'), periodic.subarray(3)]);
    expect(applyDelta(periodic, createDelta(periodic, target)).equals(target)).toBe(true);
  });

  it('reuses one index for several targets', () => {
    const base = Buffer.from(Array.from({ length: 5000 }, (_, i) => `row ${i}\n`).join(''));
    const index = new DeltaIndex(base);
    for (const edit of ['a', 'bb', 'ccc']) {
      const target = Buffer.concat([base.subarray(0, 1000), Buffer.from(edit), base.subarray(1000)]);
      const made = createDeltaWithIndex(index, target);
      expect(made.equals(createDelta(base, target))).toBe(true);
      expect(applyDelta(base, made).equals(target)).toBe(true);
    }
  });
});

/** Decodes a delta's instructions (the delta is assumed valid; applyDelta checks them). */
function instructions(made: Buffer): Array<{ kind: 'copy' | 'insert'; bytes: number }> {
  const out: Array<{ kind: 'copy' | 'insert'; bytes: number }> = [];
  let at = readDeltaHeader(made).instructionsOffset;
  while (at < made.length) {
    const op = made[at++];
    if (op & 0x80) {
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) at++;
      let bytes = 0;
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) bytes += made[at++] * 2 ** (8 * bit);
      out.push({ kind: 'copy', bytes: bytes === 0 ? DELTA_COPY_SIZE_ZERO_MEANS : bytes });
    } else {
      out.push({ kind: 'insert', bytes: op });
      at += op;
    }
  }
  return out;
}

/** Deterministic text, so git finds deltas between versions. */
function textFile(seed: number, lines: number): string {
  let state = seed;
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    out.push(`${i}: ${state.toString(36)} lorem ipsum dolor sit amet ${state % 997}\n`);
  }
  return out.join('');
}

function editLines(text: string, every: number, tag: string): string {
  return text
    .split('\n')
    .map((line, i) => (i % every === 0 ? `${line} ${tag}` : line))
    .join('\n');
}

function catFile(cwd: string, oid: string): { type: ObjectType; body: Buffer } {
  const type = git(['cat-file', '-t', oid], { cwd }).trim() as ObjectType;
  return { type, body: gitBytes(['cat-file', type, oid], { cwd }) };
}

describe('deltas made by git', () => {
  const scratch = scratchDir();
  const repo = scratch.path;
  const commits: string[] = [];
  afterAll(() => scratch.remove());

  beforeAll(() => {
    git(['init', '--quiet', '--initial-branch=main', repo]);
    const files = Array.from({ length: 4 }, (_, i) => textFile(i + 1, 2000));
    for (let version = 0; version < 6; version++) {
      files.forEach((content, i) => {
        files[i] = version === 0 ? content : editLines(content, 37 + version * 5 + i, `v${version}`);
        writeFileSync(join(repo, `file${i}.txt`), files[i]);
      });
      git(['add', '-A'], { cwd: repo });
      git(['commit', '--quiet', '-m', `version ${version}`], { cwd: repo });
      commits.push(git(['rev-parse', 'HEAD'], { cwd: repo }).trim());
    }
  });

  it('parses a repacked repository: every id, type, size, offset and chain depth as git has them', () => {
    git(['repack', '-adf', '--window=10', '--depth=5', '--quiet'], { cwd: repo });
    const packDir = join(repo, '.git/objects/pack');
    const packName = readdirSync(packDir).find((name) => name.endsWith('.pack'));
    expect(packName).toBeDefined();
    const packPath = join(packDir, packName as string);
    const parsed = parsePack(readFileSync(packPath));

    // git cat-file --batch-check: "<oid> <type> <size>" for every object.
    const expected = git(['cat-file', '--batch-check', '--batch-all-objects'], { cwd: repo })
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const ours = new Map(parsed.objects.map((object) => [oidToHex(object.oid), object]));
    expect(ours.size).toBe(expected.length);
    for (const [oid, type, size] of expected) {
      const object = ours.get(oid) as PackObject;
      expect(object, oid).toBeDefined();
      expect(object.type).toBe(type);
      expect(object.body.length).toBe(Number(size));
    }

    // git verify-pack -v: "<oid> <type> <size> <size in pack> <offset> [<depth> <base>]".
    const verify = git(['verify-pack', '-v', packPath], { cwd: repo });
    let deltas = 0;
    for (const line of verify.split('\n')) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 5 || !/^[0-9a-f]{40}$/.test(fields[0])) continue;
      const object = ours.get(fields[0]) as PackObject;
      expect(object.offset).toBe(Number(fields[4]));
      expect(object.deltaDepth).toBe(fields.length >= 7 ? Number(fields[5]) : 0);
      if (object.deltaDepth > 0) deltas++;
    }
    expect(deltas).toBeGreaterThan(10);

    // Bodies, compared with git cat-file.
    const commit = ours.get(commits[5]) as PackObject;
    expect(commit.body.equals(gitBytes(['cat-file', '-p', commits[5]], { cwd: repo }))).toBe(true);
    for (const version of [0, 3, 5]) {
      const blobHex = git(['rev-parse', `${commits[version]}:file2.txt`], { cwd: repo }).trim();
      const blob = ours.get(blobHex) as PackObject;
      expect(blob.body.equals(gitBytes(['cat-file', '-p', blobHex], { cwd: repo }))).toBe(true);
    }
    const treeHex = git(['rev-parse', `${commits[2]}^{tree}`], { cwd: repo }).trim();
    expect((ours.get(treeHex) as PackObject).body.equals(gitBytes(['cat-file', 'tree', treeHex], { cwd: repo }))).toBe(true);
  });

  it('parses a thin pack, taking REF_DELTA bases from outside through resolveExternal', () => {
    const pack = gitBytes(['pack-objects', '--thin', '--stdout', '--revs', '--quiet'], {
      cwd: repo,
      input: `${commits[5]}\n^${commits[4]}\n`,
    });
    const asked: string[] = [];
    const parsed = parsePack(pack, {
      resolveExternal: (oid) => {
        asked.push(oidToHex(oid));
        return catFile(repo, oidToHex(oid));
      },
    });
    expect(parsed.externalBases.length).toBeGreaterThan(0);
    expect(parsed.externalBases.map(oidToHex).sort()).toEqual([...asked].sort());
    const expected = git(['rev-list', '--objects', commits[5], `^${commits[4]}`], { cwd: repo })
      .trim()
      .split('\n')
      .map((line) => line.split(' ')[0])
      .sort();
    expect(parsed.objects.map((object) => oidToHex(object.oid)).sort()).toEqual(expected);
    for (const object of parsed.objects) {
      expect(object.body.equals(catFile(repo, oidToHex(object.oid)).body)).toBe(true);
    }

    // Without the external bases the thin pack cannot be completed.
    expect(() => parsePack(pack)).toThrow(/could not be resolved/);
    expect(() => parsePack(pack, { resolveExternal: () => undefined })).toThrow(/could not be resolved/);
    // A resolver that returns the wrong object is caught.
    expect(() => parsePack(pack, { resolveExternal: () => ({ type: 'blob', body: Buffer.from('wrong') }) })).toThrow(/does not hash/);
  });
});

describe('our deltas in git', () => {
  const scratch = scratchDir();
  afterAll(() => scratch.remove());

  it('git index-pack --strict accepts our OFS_DELTA chains and REF_DELTAs and finds the same ids and bodies', () => {
    // A chain of text versions, a 2.8 MB text with a few edits, noise with an insert, and two trees.
    const versions = [textFile(7, 3000)];
    for (let v = 1; v < 6; v++) versions.push(editLines(versions[v - 1], 41 + v, `v${v}`));
    const bigLines = textFile(9, 48_000).split('\n');
    const bigBase = Buffer.from(bigLines.join('\n'));
    for (const at of [5, 20_000, 47_000]) bigLines[at] = `edited line ${at}`;
    const bigTarget = Buffer.from(bigLines.join('\n'));
    const noiseBase = noise(200_000, 1);
    const noiseTarget = Buffer.concat([noiseBase.subarray(0, 123_456), Buffer.from('inserted'), noiseBase.subarray(123_456)]);
    const blobs = [...versions.map((text) => Buffer.from(text)), bigBase, bigTarget, noiseBase, noiseTarget, Buffer.alloc(0)];
    const blobOids = blobs.map((body) => hashObject('blob', body));
    const treeOf = (text: Buffer, big: Buffer) =>
      encodeTree([
        { name: 'big.txt', mode: '100644', oid: hashObject('blob', big) },
        { name: 'empty', mode: '100644', oid: blobOids.at(-1)! },
        { name: 'noise.bin', mode: '100644', oid: blobOids[versions.length + 2] },
        { name: 'text.txt', mode: '100644', oid: hashObject('blob', text) },
      ]);
    const treeBase = treeOf(blobs[0], bigBase);
    const treeTarget = treeOf(blobs[versions.length - 1], bigTarget);

    const writer = new PackWriter(blobs.length + 2);
    const chunks = [writer.start()];
    // Text versions: each an OFS_DELTA of the one before (a chain 5 deep).
    let previous = writer.addObject('blob', blobs[0]);
    chunks.push(previous.bytes);
    for (let v = 1; v < versions.length; v++) {
      previous = writer.addOfsDelta(previous.offset, createDelta(blobs[v - 1], blobs[v]));
      chunks.push(previous.bytes);
    }
    const big = writer.addObject('blob', bigBase);
    chunks.push(big.bytes, writer.addOfsDelta(big.offset, createDelta(bigBase, bigTarget)).bytes);
    // REF_DELTA against an object earlier in the pack. (An empty body goes whole: see PackWriter.)
    chunks.push(writer.addObject('blob', noiseBase).bytes);
    chunks.push(writer.addRefDelta(blobOids[versions.length + 2], createDelta(noiseBase, noiseTarget)).bytes);
    chunks.push(writer.addObject('blob', Buffer.alloc(0)).bytes);
    const tree = writer.addObject('tree', treeBase);
    chunks.push(tree.bytes, writer.addOfsDelta(tree.offset, createDelta(treeBase, treeTarget)).bytes);
    chunks.push(writer.finish());
    const pack = Buffer.concat(chunks);

    const repo = join(scratch.path, 'ours.git');
    initBareRepo(repo);
    const indexed = git(['index-pack', '--strict', '--stdin'], { cwd: repo, input: pack }).trim();
    expect(indexed).toBe(`pack\t${pack.subarray(pack.length - 20).toString('hex')}`);
    const expected = [...blobs.map((body) => hashObject('blob', body)), hashObject('tree', treeBase), hashObject('tree', treeTarget)].map(oidToHex);
    const listed = git(['cat-file', '--batch-check=%(objectname)', '--batch-all-objects'], { cwd: repo }).trim().split('\n');
    expect(listed.sort()).toEqual([...new Set(expected)].sort());
    for (const [i, body] of blobs.entries()) expect(gitBytes(['cat-file', 'blob', oidToHex(blobOids[i])], { cwd: repo }).equals(body)).toBe(true);
    expect(gitBytes(['cat-file', 'tree', expected.at(-1)!], { cwd: repo }).equals(treeTarget)).toBe(true);

    // git sees them as deltas: the last text version at depth 5, the others at depth 1.
    const packPath = join(repo, 'objects/pack', readdirSync(join(repo, 'objects/pack')).find((name) => name.endsWith('.pack'))!);
    const depths = verifyPack(repo, packPath);
    expect(depths.get(oidToHex(blobOids[versions.length - 1]))?.depth).toBe(5);
    expect(depths.get(oidToHex(hashObject('blob', bigTarget)))?.depth).toBe(1);
    expect(depths.get(oidToHex(hashObject('blob', noiseTarget)))?.depth).toBe(1);
    expect(depths.get(expected.at(-1)!)?.depth).toBe(1);
    git(['fsck', '--strict', '--no-dangling'], { cwd: repo });
  });

  it('makes deltas about the size of git for the pairs git itself chose', () => {
    // Versions of a few text files; git repack -f --window=10 picks its pairs, we delta the same pairs.
    const repo = join(scratch.path, 'git.git');
    initBareRepo(repo);
    const files = [textFile(11, 1500), textFile(12, 4000), textFile(13, 400)];
    const oids: string[] = [];
    for (let v = 0; v < 8; v++) {
      files.forEach((text, i) => {
        files[i] = v === 0 ? text : editLines(text, 29 + 7 * v + i, `r${v}`);
        oids.push(git(['hash-object', '-w', '--stdin'], { cwd: repo, input: files[i] }).trim());
      });
    }
    // "oid name" lines, so pack-objects groups each file's versions as it groups a path's.
    const list = oids.map((oid, n) => `${oid} file${n % files.length}\n`).join('');
    git(['pack-objects', '-q', '--window=10', '--depth=50', '--no-reuse-delta', 'objects/pack/pack'], { cwd: repo, input: list });
    const pack = readdirSync(join(repo, 'objects/pack')).find((name) => name.endsWith('.pack'))!;
    let ours = 0;
    let theirs = 0;
    for (const [oid, entry] of verifyPack(repo, join(repo, 'objects/pack', pack))) {
      if (!entry.base) continue;
      const base = gitBytes(['cat-file', 'blob', entry.base], { cwd: repo });
      const target = gitBytes(['cat-file', 'blob', oid], { cwd: repo });
      ours += createDelta(base, target).length;
      theirs += entry.size;
    }
    expect(theirs).toBeGreaterThan(0);
    // bench/delta.bench.ts reports the ratio over a realistic history; here a loose guard against regressions.
    expect(ours / theirs).toBeLessThan(1.15);
  });
});

/**
 * git verify-pack -v: "<oid> <type> <size> <size in pack> <offset> [<depth> <base>]", where size
 * is the delta's own size for a deltified entry.
 */
function verifyPack(cwd: string, packPath: string): Map<string, { size: number; depth: number; base: string | null }> {
  const out = new Map<string, { size: number; depth: number; base: string | null }>();
  for (const line of git(['verify-pack', '-v', packPath], { cwd }).split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 5 || !/^[0-9a-f]{40}$/.test(fields[0])) continue;
    out.set(fields[0], { size: Number(fields[2]), depth: fields.length >= 7 ? Number(fields[5]) : 0, base: fields[6] ?? null });
  }
  return out;
}
