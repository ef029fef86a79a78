import { describe, expect, it } from 'vitest';
import { IgnoreRules } from '../../../src/service/lint/ignoreRules.js';

describe('IgnoreRules', () => {
  const rules = IgnoreRules.parse(['# comment', '', 'dist/', '*.min.js', '/root-only.js', 'docs/**/*.md', '!keep.min.js', 'build'].join('\n'));

  it('follows gitignore rules', () => {
    const cases: Array<[string, boolean]> = [
      ['dist/a.js', true],
      ['packages/x/dist/a.js', true],
      ['dist', false], // "dist/" names directories only
      ['vendor/jquery.min.js', true],
      ['keep.min.js', false],
      ['root-only.js', true],
      ['src/root-only.js', false],
      ['docs/a/b.md', true],
      ['docs/a.md', true],
      ['src/a.md', false],
      ['build', true],
      ['app/build/out.js', true],
      ['src/index.js', false],
    ];
    for (const [path, ignored] of cases) expect(rules.ignores(path), path).toBe(ignored);
  });

  it('cannot re-include a file below an ignored directory, as git', () => {
    const nested = IgnoreRules.parse('out/\n!out/keep.js\n');
    expect(nested.ignores('out/keep.js')).toBe(true);
  });

  it('is empty for an empty file', () => {
    expect(IgnoreRules.parse('\n# nothing\n').empty).toBe(true);
    expect(IgnoreRules.none.ignores('anything')).toBe(false);
  });
});
