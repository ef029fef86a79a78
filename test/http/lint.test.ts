import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEMPLATES } from '../../src/service/templates/index.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

type Files = Record<string, string>;

async function createProject(files: Files, title = 'Lint project'): Promise<string> {
  const created = await server.call('POST', '/api/v1/projects', {
    title,
    source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.project.id;
}

async function lint(id: string, body: unknown = {}) {
  const response = await server.call('POST', `/api/v1/projects/${id}/lint`, body);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body as { success: boolean; totalFiles: number; errors: Array<{ path: string; line: number; column: number; rule: string; message: string }> };
}

const where = (errors: Array<{ path: string; line: number; column: number; rule: string }>) => errors.map(({ path, line, column, rule }) => ({ path, line, column, rule }));

/** Every file here is formatted as Prettier's defaults want and every import resolves. */
const CLEAN: Files = {
  'package.json': '{\n  "name": "clean",\n  "private": true,\n  "type": "module"\n}\n',
  // JSON with comments: the json rule allows the comment (Prettier keeps it).
  'tsconfig.json': '{\n  // TypeScript allows comments here.\n  "compilerOptions": { "strict": true }\n}\n',
  'index.html': '<!doctype html>\n<html lang="en">\n  <head>\n    <title>Clean</title>\n  </head>\n  <body></body>\n</html>\n',
  'src/main.ts': [
    'import { a } from "./a";',
    'import { b } from "./b.js";',
    'import { c } from "./lib";',
    'import data from "./data.json";',
    'import "./styles.css";',
    'import icon from "./icon.svg?raw";',
    'import React from "react";',
    '',
    'export const all = [a, b, c, data, icon, React];',
    'export const later = () => import("./lazy");',
    '',
  ].join('\n'),
  'src/a.ts': 'export const a = 1;\n',
  'src/b.ts': 'export const b = 2;\n',
  'src/lib/index.ts': 'export const c = 3;\n',
  'src/lazy.tsx': 'export const Lazy = () => <p>lazy</p>;\n',
  'src/data.json': '{ "answer": 42 }\n',
  'src/icon.svg': '<svg xmlns="http://www.w3.org/2000/svg"></svg>\n',
  'src/styles.css': '@import "./base.css";\n\nbody {\n  background: url(./bg.png);\n}\n',
  'src/base.css': 'html {\n  color: black;\n}\n',
  'src/bg.png': 'not really a png',
  'scripts/build.cjs': 'const path = require("node:path");\nconst config = require("../src/data.json");\n\nmodule.exports = { path, config };\n',
  'README.md': '# Clean\n\nA project that lints clean.\n',
};

describe('lint', () => {
  it('passes a clean project and counts the files it checked', async () => {
    const id = await createProject(CLEAN);
    const result = await lint(id);
    expect(result.errors).toEqual([]);
    expect(result.success).toBe(true);
    // Every file but the PNG and the SVG (Prettier has no SVG parser, and it is neither code nor JSON).
    expect(result.totalFiles).toBe(Object.keys(CLEAN).length - 2);
  });

  it('reports each rule at its exact line and column', async () => {
    const id = await createProject({
      ...CLEAN,
      // format: the missing semicolon is the first difference, at the end of line 2.
      'src/unformatted.ts': 'export const one = 1;\nexport const two = 2\n',
      // syntax (esbuild), line 2: "const y = ;" has its ";" at column 11.
      'src/broken.ts': 'export const x = 1;\nconst y = ;\n',
      // syntax with non-ASCII text before the error: columns count characters, not UTF-8 bytes.
      'src/unicode.ts': 'const ü = "ü"; const z = );\n',
      // syntax in CSS: the block is never closed (esbuild points at the end of the file).
      'src/unclosed.css': 'main {\n  color: red;\n',
      // import: a static import, a re-export, a dynamic import, a require and a CSS @import that do not resolve.
      'src/imports.ts': [
        'import { a } from "./a";',
        'import { gone } from "./gone";',
        'export * from "../outside/of/src";',
        'export const lazy = () => import("./lazy-missing");',
        'export const all = [a, gone];',
        '',
      ].join('\n'),
      'scripts/missing.cjs': 'module.exports = require("./nothing-here");\n',
      'src/theme.css': '@import "./missing.css";\n',
      // json: the trailing comma on line 2, column 9.
      'config/bad.json': '{\n  "a": 1,\n}\n',
    });
    const result = await lint(id);
    expect(result.success).toBe(false);
    expect(where(result.errors)).toEqual([
      { path: 'config/bad.json', line: 2, column: 9, rule: 'json' },
      { path: 'scripts/missing.cjs', line: 1, column: 26, rule: 'import' },
      { path: 'src/broken.ts', line: 2, column: 11, rule: 'syntax' },
      { path: 'src/imports.ts', line: 2, column: 22, rule: 'import' },
      { path: 'src/imports.ts', line: 3, column: 15, rule: 'import' },
      { path: 'src/imports.ts', line: 4, column: 34, rule: 'import' },
      { path: 'src/theme.css', line: 1, column: 9, rule: 'import' },
      { path: 'src/unclosed.css', line: 3, column: 1, rule: 'syntax' },
      { path: 'src/unformatted.ts', line: 2, column: 21, rule: 'format' },
      { path: 'src/unicode.ts', line: 1, column: 26, rule: 'syntax' },
    ]);
    const byPath = new Map(result.errors.map((error) => [`${error.path}:${error.line}`, error.message]));
    expect(byPath.get('config/bad.json:2')).toBe('Trailing commas are not allowed in JSON');
    expect(byPath.get('src/broken.ts:2')).toBe('Unexpected ";"');
    expect(byPath.get('src/unclosed.css:3')).toBe('Expected "}" to go with "{"');
    expect(byPath.get('src/unformatted.ts:2')).toBe('Not formatted as Prettier formats it: line 2 is "export const two = 2", Prettier writes "export const two = 2;"');
    expect(byPath.get('src/imports.ts:2')).toBe('Cannot resolve "./gone": no file "src/gone" (also tried .ts .tsx .js .jsx .mjs .cjs .json .css and index files)');
    expect(byPath.get('src/imports.ts:3')).toBe('Cannot resolve "../outside/of/src": no file "outside/of/src" (also tried .ts .tsx .js .jsx .mjs .cjs .json .css and index files)');
    expect(result.totalFiles).toBe(Object.keys(CLEAN).length - 2 + 8);
  });

  it('reports JSON problems with their position and a missing final newline as a format error', async () => {
    const id = await createProject({
      'a.json': '{\n  "list": [1, 2\n}\n',
      'b.json': "{ 'single': true }\n",
      'c.json': '{ "a": 1 } // trailing comment\n',
      'd.json': '',
      'e.json': '{ "ok": true }',
    });
    const result = await lint(id);
    expect(result.errors.map(({ path, line, column, rule, message }) => ({ path, line, column, rule, message }))).toEqual([
      { path: 'a.json', line: 3, column: 1, rule: 'json', message: 'Expected "," or "]" after an array element but found "}"' },
      { path: 'b.json', line: 1, column: 3, rule: 'json', message: 'Expected a property name in double quotes but found "\'"' },
      { path: 'c.json', line: 1, column: 12, rule: 'json', message: 'Comments are not allowed in JSON' },
      { path: 'd.json', line: 1, column: 1, rule: 'json', message: 'The file is empty; expected a JSON value' },
      { path: 'e.json', line: 1, column: 15, rule: 'format', message: 'Not formatted as Prettier formats it: the file ends too early (Prettier adds "\\n")' },
    ]);
  });

  it("uses the project's own Prettier config (.prettierrc) where the defaults would complain", async () => {
    const noSemicolons: Files = {
      'src/index.ts': "import { greet } from './greet'\n\nconsole.log(greet('world'))\n",
      'src/greet.ts': 'export const greet = (name: string) => `hello ${name}`\n',
    };
    const withDefaults = await lint(await createProject(noSemicolons, 'Defaults'));
    expect(where(withDefaults.errors)).toEqual([
      { path: 'src/greet.ts', line: 1, column: 55, rule: 'format' },
      { path: 'src/index.ts', line: 1, column: 23, rule: 'format' },
    ]);
    // .prettierrc is YAML (or JSON); Prettier itself formats it as YAML.
    const withRc = await lint(await createProject({ ...noSemicolons, '.prettierrc': 'semi: false\nsingleQuote: true\n' }, 'Own config'));
    expect(withRc.errors).toEqual([]);
    expect(withRc.totalFiles).toBe(3);
    const withJson = await lint(await createProject({ ...noSemicolons, '.prettierrc.json': '{ "semi": false, "singleQuote": true }\n' }, 'JSON config'));
    expect(withJson.errors).toEqual([]);
    const inPackageJson = await lint(
      await createProject({ ...noSemicolons, 'package.json': '{\n  "name": "x",\n  "prettier": {\n    "semi": false,\n    "singleQuote": true\n  }\n}\n' }, 'Package config'),
    );
    expect(inPackageJson.errors).toEqual([]);
  });

  it('applies overrides and the nearest config, and skips files named in .prettierignore', async () => {
    const id = await createProject({
      '.prettierrc.json': JSON.stringify({ overrides: [{ files: 'legacy/**/*.js', options: { semi: false } }] }, null, 2) + '\n',
      'legacy/old.js': 'export const old = 1\n',
      'src/new.js': 'export const fresh = 1\n',
      'packages/tabs/.prettierrc': 'useTabs: true\n',
      'packages/tabs/index.js': 'export function f() {\n\treturn 1;\n}\n',
      '.prettierignore': '# generated\nvendor/\n',
      'vendor/lib.min.js': 'export const v=1',
      'vendor/broken.js': 'export const = 1;\n',
    });
    const result = await lint(id);
    expect(where(result.errors)).toEqual([
      { path: 'src/new.js', line: 1, column: 23, rule: 'format' },
      // Ignored for formatting, still checked for syntax.
      { path: 'vendor/broken.js', line: 1, column: 14, rule: 'syntax' },
    ]);
  });

  it('reports a JavaScript config once instead of running it, and a config Prettier refuses', async () => {
    const jsConfig = await lint(
      await createProject({ 'prettier.config.js': 'export default { semi: false };\n', 'src/a.js': 'export const a = 1\n' }, 'JS config'),
    );
    expect(jsConfig.errors.map(({ path, line, column, rule }) => ({ path, line, column, rule }))).toEqual([
      { path: 'prettier.config.js', line: 1, column: 1, rule: 'format' },
    ]);
    expect(jsConfig.errors[0].message).toContain('never runs');
    const refused = await lint(await createProject({ '.prettierrc.json': '{ "printWidth": "wide" }\n', 'a.js': 'export const a = 1;\n' }, 'Bad option'));
    expect(where(refused.errors)).toEqual([{ path: '.prettierrc.json', line: 1, column: 1, rule: 'format' }]);
    expect(refused.errors[0].message).toContain('printWidth');
    const badYaml = await lint(await createProject({ '.prettierrc': 'semi: [\n', 'a.js': 'export const a = 1;\n' }, 'Bad YAML'));
    // The YAML reader notices the unclosed "[" at the end of the text.
    expect(where(badYaml.errors)).toEqual([{ path: '.prettierrc', line: 2, column: 1, rule: 'format' }]);
    expect(badYaml.errors[0].message).toMatch(/^\.prettierrc is not valid YAML or JSON: /);
  });

  it('lints every template clean', async () => {
    for (const template of TEMPLATES) {
      const created = await server.call('POST', '/api/v1/projects', { title: template.name, source: { kind: 'template', name: template.name } });
      const result = await lint(created.body.project.id);
      expect(result.errors, template.name).toEqual([]);
      expect(result.success).toBe(true);
      expect(result.totalFiles).toBe(Object.keys(template.files).length);
    }
  });

  it("reads the branch's working tree, uncommitted changes included, and caches by blob", async () => {
    const id = await createProject(CLEAN, 'Branches');
    expect((await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: 'feature/x' })).status).toBe(201);
    const write = await server.call('POST', `/api/v1/projects/${id}/files/batch`, { branch: 'feature/x', files: [{ path: 'src/a.ts', content: 'export const a = ;\n' }] });
    expect(write.status).toBe(200);
    expect((await lint(id)).success).toBe(true);
    const onBranch = await lint(id, { branch: 'feature/x' });
    expect(where(onBranch.errors)).toEqual([{ path: 'src/a.ts', line: 1, column: 18, rule: 'syntax' }]);
    const cached = server.th.linter.cachedFiles;
    // The same tree again, and main again: nothing new is checked.
    expect(await lint(id, { branch: 'feature/x' })).toEqual(onBranch);
    expect((await server.call('POST', `/api/v1/projects/${id}/lint`)).body.success).toBe(true);
    expect(server.th.linter.cachedFiles).toBe(cached);
  });

  it('reports files whose names are not UTF-8 by their bytes, and tells two such trees apart', async () => {
    const id = await createProject({}, 'Byte names');
    const b64 = (latin1: string) => Buffer.from(latin1, 'latin1').toString('base64');
    const write = await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path_base64: b64('x\xe9.js'), content: 'export const a = ;\n' }] });
    expect(write.status).toBe(200);
    const first = await lint(id);
    expect(first.errors).toEqual([expect.objectContaining({ path: 'x\ufffd.js', path_base64: b64('x\xe9.js'), rule: 'syntax' })]);
    // Another name that shows the same way: a new tree, so a new answer naming its own file.
    const moved = await server.call('POST', `/api/v1/projects/${id}/files/move`, { from_base64: b64('x\xe9.js'), to_base64: b64('x\xe8.js') });
    expect(moved.status).toBe(200);
    const second = await lint(id);
    expect(second.errors).toEqual([expect.objectContaining({ path: 'x\ufffd.js', path_base64: b64('x\xe8.js'), rule: 'syntax' })]);
  });

  it('refuses unknown branches, bad bodies and other teams', async () => {
    const id = await createProject({ 'a.js': 'export const a = 1;\n' }, 'Refusals');
    const unknown = await server.call('POST', `/api/v1/projects/${id}/lint`, { branch: 'nope' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const bad = await server.call('POST', `/api/v1/projects/${id}/lint`, { branch: 'main', extra: true });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    await server.th.accounts.createTeam('lint-other');
    const { key } = await server.th.accounts.createKey('lint-other');
    expect((await server.call('POST', `/api/v1/projects/${id}/lint`, {}, { key })).status).toBe(404);
    expect((await server.call('POST', `/api/v1/projects/${id}/lint`, {}, { key: null })).status).toBe(401);
    const doc = await server.call('GET', '/api/v1/openapi.json', undefined, { key: null });
    expect(doc.body.paths['/api/v1/projects/{id}/lint'].post).toBeDefined();
  });
});
