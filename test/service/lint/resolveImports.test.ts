import { describe, expect, it } from 'vitest';
import { isRelativeImport, resolveImport } from '../../../src/service/lint/resolveImports.js';

const paths = new Set(['src/a.ts', 'src/b.tsx', 'src/lib/index.js', 'src/data.json', 'src/style.css', 'src/img/logo.svg', 'index.ts', 'src/c.mts', 'src/my file.png']);

describe('resolveImports', () => {
  it('decides what is relative, in JavaScript and in CSS', () => {
    expect(isRelativeImport({ specifier: './a', kind: 'import-statement' })).toBe(true);
    expect(isRelativeImport({ specifier: '../a', kind: 'require-call' })).toBe(true);
    expect(isRelativeImport({ specifier: 'react', kind: 'import-statement' })).toBe(false);
    expect(isRelativeImport({ specifier: '@/a', kind: 'import-statement' })).toBe(false);
    expect(isRelativeImport({ specifier: 'other.css', kind: 'import-rule' })).toBe(true);
    expect(isRelativeImport({ specifier: 'data:image/png;base64,xx', kind: 'url-token' })).toBe(false);
    expect(isRelativeImport({ specifier: 'https://x/y.css', kind: 'import-rule' })).toBe(false);
    expect(isRelativeImport({ specifier: '/abs.png', kind: 'url-token' })).toBe(false);
    expect(isRelativeImport({ specifier: '~pkg/a.css', kind: 'import-rule' })).toBe(false);
  });

  it('tries extensions, index files and the TypeScript twin of a .js name', () => {
    const found = (from: string, specifier: string, kind = 'import-statement') => {
      const resolution = resolveImport(from, { specifier, kind }, paths);
      return resolution.found;
    };
    expect(found('src/main.ts', './a')).toBe('src/a.ts');
    expect(found('src/main.ts', './a.js')).toBe('src/a.ts');
    expect(found('src/main.ts', './b.jsx')).toBe('src/b.tsx');
    expect(found('src/main.ts', './c.mjs')).toBe('src/c.mts');
    expect(found('src/main.ts', './lib')).toBe('src/lib/index.js');
    expect(found('src/main.ts', './data.json')).toBe('src/data.json');
    expect(found('src/main.ts', './img/logo.svg?react')).toBe('src/img/logo.svg');
    expect(found('src/deep/x.ts', '../a')).toBe('src/a.ts');
    expect(found('src/main.ts', '..')).toBe('index.ts');
    expect(found('src/style2.css', 'my%20file.png', 'url-token')).toBe('src/my file.png');
    expect(found('src/style2.css', 'style.css#x', 'import-rule')).toBe('src/style.css');
    expect(found('src/main.ts', './missing')).toBeNull();
  });

  it('says why an import does not resolve', () => {
    expect(resolveImport('src/main.ts', { specifier: './gone', kind: 'import-statement' }, paths)).toEqual({
      found: null,
      reason: 'no file "src/gone" (also tried .ts .tsx .js .jsx .mjs .cjs .json .css and index files)',
    });
    expect(resolveImport('a.ts', { specifier: '../../etc/passwd', kind: 'import-statement' }, paths)).toEqual({ found: null, reason: 'it points outside the project' });
  });
});
