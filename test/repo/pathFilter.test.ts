import { describe, expect, it } from 'vitest';
import { isTreehouseError } from '../../src/errors.js';
import { PATH_FILTER_ENTRIES_MAX, PathFilter } from '../../src/repo/pathFilter.js';

describe('PathFilter', () => {
  it('matches whole path components only', () => {
    const filter = PathFilter.parse(['src', 'docs/a.md'], 'paths');
    expect(filter.matchesFile('src')).toBe(true);
    expect(filter.matchesFile('src/a.ts')).toBe(true);
    expect(filter.matchesFile('srcx/a.ts')).toBe(false);
    expect(filter.matchesFile('src.ts')).toBe(false);
    expect(filter.matchesFile('docs/a.md')).toBe(true);
    expect(filter.matchesFile('docs/a.mdx')).toBe(false);
    expect(filter.reachesDirectory('docs')).toBe(true);
    expect(filter.reachesDirectory('doc')).toBe(false);
    expect(filter.reachesDirectory('src/deep/er')).toBe(true);
    expect(filter.reachesDirectory('')).toBe(true);
  });

  it('takes a trailing slash as the directory, and no entries as everything', () => {
    expect(PathFilter.parse(['lib/'], 'paths').matchesFile('lib/x')).toBe(true);
    expect(PathFilter.parse([], 'paths').isAll).toBe(true);
    expect(PathFilter.parse(undefined, 'paths').matchesFile('anything')).toBe(true);
  });

  it.each([['../up'], ['/abs'], ['a//b'], ['.git/config'], ['a/./b'], [''], ['x\u0000y'], ['a\\b']])('refuses %j with invalid_request', (entry) => {
    let caught: unknown;
    try {
      PathFilter.parse([entry], 'paths');
    } catch (error) {
      caught = error;
    }
    expect(isTreehouseError(caught) && caught.code === 'invalid_request').toBe(true);
  });

  it(`refuses more than ${PATH_FILTER_ENTRIES_MAX} entries`, () => {
    expect(() => PathFilter.parse(Array.from({ length: PATH_FILTER_ENTRIES_MAX + 1 }, (_, i) => `p${i}`), 'paths')).toThrow(/At most/);
    expect(PathFilter.parse(Array.from({ length: PATH_FILTER_ENTRIES_MAX }, (_, i) => `p${i}`), 'paths').isAll).toBe(false);
  });
});
