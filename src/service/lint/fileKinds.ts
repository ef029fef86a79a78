/**
 * Which checks apply to a file, from its path alone:
 * - format: the parser Prettier infers (every language Prettier formats, like `prettier --check .`);
 * - syntax: esbuild's loader for JavaScript, TypeScript, JSX, TSX and CSS (esbuild's defaults per
 *   extension: JSX only in .jsx and .tsx);
 * - json: .json files must be strict JSON, except the "JSON with comments" files of TypeScript and
 *   VS Code (tsconfig.json, jsconfig.json, .vscode/*.json, .jsonc), which may have comments and
 *   trailing commas.
 * Files below a node_modules directory are never checked.
 */
import { JSON_WITH_COMMENTS, STRICT_JSON, type JsonDialect } from './jsonCheck.js';
import type { PrettierSupport } from './prettierSupport.js';

export type SyntaxLoader = 'js' | 'jsx' | 'ts' | 'tsx' | 'css';

export interface FileChecks {
  /** Prettier parser, or null when Prettier does not format this kind of file. */
  parser: string | null;
  loader: SyntaxLoader | null;
  json: JsonDialect | null;
}

const LOADER_BY_EXTENSION: Record<string, SyntaxLoader> = {
  '.js': 'js',
  '.mjs': 'js',
  '.cjs': 'js',
  '.jsx': 'jsx',
  '.ts': 'ts',
  '.mts': 'ts',
  '.cts': 'ts',
  '.tsx': 'tsx',
  '.css': 'css',
};

const JSON_WITH_COMMENTS_NAME = /^(?:tsconfig|jsconfig)(?:\.[^/]*)?\.json$|^\.?devcontainer\.json$|^\.eslintrc\.json$/;

export function isSkippedPath(path: string): boolean {
  return path.startsWith('node_modules/') || path.includes('/node_modules/');
}

export function checksFor(path: string, prettier: PrettierSupport): FileChecks | null {
  if (isSkippedPath(path)) return null;
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  const extension = dot > 0 ? base.slice(dot).toLowerCase() : '';
  const loader = LOADER_BY_EXTENSION[extension] ?? null;
  let json: JsonDialect | null = null;
  if (extension === '.jsonc') json = JSON_WITH_COMMENTS;
  else if (extension === '.json') {
    json = JSON_WITH_COMMENTS_NAME.test(base) || path.startsWith('.vscode/') || path.includes('/.vscode/') ? JSON_WITH_COMMENTS : STRICT_JSON;
  }
  const parser = prettier.parserFor(path);
  if (!parser && !loader && !json) return null;
  return { parser, loader, json };
}
