import { describe, expect, it } from 'vitest';
import { globToRegExp, matchesGlobs } from '../../../src/service/lint/glob.js';

describe('glob', () => {
  it('matches like micromatch does for Prettier overrides', () => {
    const cases: Array<[string, string, boolean]> = [
      ['*.js', 'a.js', true],
      ['*.js', 'a.ts', false],
      ['*.{js,ts}', 'a.ts', true],
      ['src/*.js', 'src/a.js', true],
      ['src/*.js', 'src/deep/a.js', false],
      ['src/**/*.js', 'src/a.js', true],
      ['src/**/*.js', 'src/x/y/a.js', true],
      ['**/*.md', 'README.md', true],
      ['legacy/**', 'legacy/a/b.js', true],
      ['a?.js', 'ab.js', true],
      ['a?.js', 'a/.js', false],
      ['[ab].js', 'b.js', true],
      ['[!ab].js', 'b.js', false],
      ['*.js', '.eslintrc.js', true],
      ['a.b', 'aXb', false],
    ];
    for (const [pattern, path, expected] of cases) expect(globToRegExp(pattern).test(path), `${pattern} ~ ${path}`).toBe(expected);
  });

  it('matches patterns without "/" against the base name, others against the whole path', () => {
    expect(matchesGlobs('deep/dir/a.test.ts', '*.test.ts')).toBe(true);
    expect(matchesGlobs('deep/dir/a.test.ts', 'dir/*.test.ts')).toBe(false);
    expect(matchesGlobs('deep/dir/a.test.ts', ['x', 'deep/**/*.ts'])).toBe(true);
  });
});
