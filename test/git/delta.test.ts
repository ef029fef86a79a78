import fc from 'fast-check';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyDelta,
  createDelta,
  DeltaError,
  DELTA_COPY_SIZE_ZERO_MEANS,
  encodeDeltaSize,
  readDeltaHeader,
  readDeltaSize,
} from '../../src/git/delta.js';
import { oidToHex, type ObjectType } from '../../src/git/oid.js';
import { parsePack, type PackObject } from '../../src/git/pack.js';
import { git, gitBytes, scratchDir } from '../support/git.js';

const delta = (...parts: Array<number[] | Buffer>) => Buffer.concat(parts.map((part) => Buffer.from(part)));

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
  });
});

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
