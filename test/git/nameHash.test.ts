/**
 * packNameHash against git's own: `git repack -adb` keeps every object's name hash in the bitmap's
 * name-hash cache (Documentation/technical/bitmap-format.txt: one 32-bit hash per object in index
 * order, the last extension before the trailer), computed from the names `rev-list --objects` gives.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packNameHash } from '../../src/git/nameHash.js';
import { git, gitBytes, scratchDir } from '../support/git.js';

const work = scratchDir('treehouse-name-hash-');
afterAll(() => work.remove());

/** Bytes after the name-hash cache: the bitmap's trailing checksum. */
const BITMAP_TRAILER_BYTES = 20;

describe('packNameHash', () => {
  it("equals git's name hash of every path and directory, from git's bitmap name-hash cache", () => {
    const repo = join(work.path, 'repo');
    git(['init', '-q', '--initial-branch=main', repo]);
    const paths = [
      'README.md',
      'a.c',
      'src/deep dir/x/file one.ts',
      'src/deep dir/a-very-long-file-name-indeed.c',
      'src/\tleading tab.txt',
      'docs/日本語のファイル名.md',
      'docs/café/naïve résumé.txt',
      'lib/same-tail-1234567890.js',
      'other/prefix/same-tail-1234567890.js',
      'x/y/z/w/v/u/t/s/r/q/p/o/n/m/l/k/j/i/h/g/f/e/d/c/b/a.rs',
      'Makefile',
      ' spaced name .txt',
    ];
    paths.forEach((path, index) => {
      mkdirSync(join(repo, dirname(path)), { recursive: true });
      // Distinct contents: a blob at two paths takes the name rev-list meets first.
      writeFileSync(join(repo, path), `file ${index}\n`);
    });
    git(['add', '-A'], { cwd: repo });
    git(['-c', 'user.name=Hash', '-c', 'user.email=hash@example.com', 'commit', '-qm', 'names'], { cwd: repo });
    git(['-c', 'pack.writeBitmapHashCache=true', 'repack', '-adbq'], { cwd: repo });

    const packDir = join(repo, '.git', 'objects', 'pack');
    const file = (suffix: string) => join(packDir, readdirSync(packDir).find((name) => name.endsWith(suffix))!);
    const indexOrder = git(['show-index'], { input: readFileSync(file('.idx')) }).trim().split('\n').map((line) => line.split(' ')[1]);
    const bitmap = readFileSync(file('.bitmap'));
    const cache = bitmap.subarray(bitmap.length - BITMAP_TRAILER_BYTES - 4 * indexOrder.length, bitmap.length - BITMAP_TRAILER_BYTES);
    const names = new Map(
      gitBytes(['rev-list', '--objects', '--all'], { cwd: repo })
        .toString('utf8')
        .replace(/\n$/, '')
        .split('\n')
        .map((line) => [line.slice(0, 40), line.slice(41)] as const),
    );
    const ours = indexOrder.map((oid) => ({ name: names.get(oid), hash: packNameHash(names.get(oid) ?? '') }));
    const gits = indexOrder.map((oid, index) => ({ name: names.get(oid), hash: cache.readUInt32BE(index * 4) }));
    expect(ours).toEqual(gits);
    // Every path and its directories were compared, and the hashes are not all alike.
    expect(names.size).toBeGreaterThan(paths.length);
    expect(new Set(gits.map(({ hash }) => hash)).size).toBeGreaterThan(paths.length);
  });

  it('depends on the last sixteen non-space bytes alone, the last weighing most', () => {
    expect(packNameHash('')).toBe(0);
    expect(packNameHash('some/dir/same-tail-1234567890.js')).toBe(packNameHash('other/same-tail-1234567890.js'));
    expect(packNameHash('a b\tc\r\nd.ts')).toBe(packNameHash('abcd.ts'));
    // A change in the last character moves the hash further than one before it: one extension sorts together.
    const distance = (a: string, b: string) => Math.abs(packNameHash(a) - packNameHash(b));
    expect(distance('src/one.c', 'src/one.d')).toBeGreaterThan(distance('src/one.c', 'src/two.c'));
    expect(distance('src/one.c', 'src/two.c')).toBeGreaterThan(distance('src/one.c', 'lib/one.c'));
  });
});
