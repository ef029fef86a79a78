import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigResolver, optionsFor, optionsKey, parseConfigFile, type ProjectConfig } from '../../../src/service/lint/prettierConfig.js';
import { prettierSupport, type PrettierSupport } from '../../../src/service/lint/prettierSupport.js';

let prettier: PrettierSupport;
beforeAll(async () => {
  prettier = await prettierSupport();
});

describe('prettierConfig', () => {
  it('reads YAML and JSON .prettierrc, .prettierrc.json and the "prettier" key of package.json', () => {
    expect(parseConfigFile('.prettierrc', 'semi: false\n# comment\ntabWidth: 4\n', prettier)?.options).toEqual({ semi: false, tabWidth: 4 });
    expect(parseConfigFile('.prettierrc', '{ "semi": false }', prettier)?.options).toEqual({ semi: false });
    expect(parseConfigFile('a/.prettierrc.json', '{ "singleQuote": true }', prettier)).toMatchObject({ dir: 'a', options: { singleQuote: true }, problem: null });
    expect(parseConfigFile('package.json', '{ "name": "x", "prettier": { "semi": false } }', prettier)?.options).toEqual({ semi: false });
    expect(parseConfigFile('package.json', '{ "name": "x" }', prettier)).toBeNull();
    expect(parseConfigFile('package.json', '{ broken', prettier)).toBeNull();
  });

  it('never loads code: JavaScript configs, shared configs and plugins', () => {
    expect(parseConfigFile('prettier.config.mjs', 'export default {}', prettier)?.problem?.message).toContain('never runs');
    expect(parseConfigFile('.prettierrc.toml', 'semi = false', prettier)?.problem?.message).toContain('TOML');
    expect(parseConfigFile('package.json', '{ "prettier": "@acme/prettier-config" }', prettier)?.problem?.message).toContain('@acme/prettier-config');
    const withPlugins = parseConfigFile('.prettierrc.json', '{ "plugins": ["./evil.js"], "semi": false, "filepath": "x", "$schema": "y" }', prettier);
    expect(withPlugins?.options).toEqual({ semi: false });
    expect(parseConfigFile('.prettierrc.json', '{ "parser": "./my-parser.js" }', prettier)?.problem?.message).toContain('built-in parsers');
  });

  it('reports unreadable configs with a position', () => {
    expect(parseConfigFile('.prettierrc.json', '{\n  "semi": false,\n}', prettier)?.problem).toEqual({ line: 2, column: 16, message: '.prettierrc.json is not valid JSON: Trailing commas are not allowed in JSON' });
    expect(parseConfigFile('.prettierrc.json', '[1]', prettier)?.problem?.message).toBe('The Prettier config must be an object of options.');
    expect(parseConfigFile('.prettierrc.json', '{ "overrides": [{ "options": {} }] }', prettier)?.problem?.message).toContain('overrides[0]');
  });

  it('finds the nearest config and applies matching overrides in order', () => {
    const root = parseConfigFile(
      '.prettierrc.json',
      JSON.stringify({
        semi: false,
        overrides: [
          { files: '*.test.ts', options: { semi: true } },
          { files: ['legacy/**'], excludeFiles: 'legacy/new/**', options: { tabWidth: 4 } },
        ],
      }),
      prettier,
    ) as ProjectConfig;
    const nested = parseConfigFile('packages/ui/.prettierrc', 'useTabs: true\n', prettier) as ProjectConfig;
    const lower = parseConfigFile('packages/ui/package.json', '{ "prettier": { "semi": true } }', prettier) as ProjectConfig;
    const resolver = new ConfigResolver([root, nested, lower]);
    // package.json comes before .prettierrc in Prettier's search order.
    expect(resolver.configFor('packages/ui/src/a.ts')).toBe(lower);
    expect(resolver.configFor('src/a.ts')).toBe(root);
    expect(optionsFor('src/a.ts', root)).toEqual({ semi: false });
    expect(optionsFor('src/a.test.ts', root)).toEqual({ semi: true });
    expect(optionsFor('legacy/old/a.js', root)).toEqual({ semi: false, tabWidth: 4 });
    expect(optionsFor('legacy/new/a.js', root)).toEqual({ semi: false });
    expect(optionsFor('a.ts', null)).toEqual({});
    expect(optionsKey({ b: 1, a: 2 })).toBe(optionsKey({ a: 2, b: 1 }));
  });
});
