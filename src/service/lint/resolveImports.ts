/**
 * Resolves a file's relative imports against the files of the tree, as a bundler would: the exact
 * path, then with each of RESOLVE_EXTENSIONS, then as a directory with an index file; an import of
 * "./x.js" also finds "./x.ts" or "./x.tsx" (TypeScript's ESM convention, which esbuild and Vite
 * follow). A query or fragment ("./icon.svg?raw", "./sprite.svg#logo") is not part of the path.
 *
 * What counts as relative: in JavaScript, a specifier starting with "./" or "../" (anything else is
 * a package or an alias); in CSS (@import and url()), any URL without a scheme that does not start
 * with "/", "#" or "~", because CSS resolves "other.css" against the stylesheet.
 */
import { dirname } from '../../git/path.js';
import type { ImportUse } from './checkFile.js';

export const RESOLVE_EXTENSIONS: readonly string[] = ['.ts', '.tsx', '.js', '.jsx', '.mjs', '.cjs', '.json', '.css'];

/** esbuild's rewrittenFileExtensions: an import of the JavaScript name may mean the TypeScript file. */
const TYPESCRIPT_TWINS: Record<string, readonly string[]> = {
  '.js': ['.ts', '.tsx'],
  '.jsx': ['.ts', '.tsx'],
  '.mjs': ['.mts'],
  '.cjs': ['.cts'],
};

const TRIED = `${RESOLVE_EXTENSIONS.join(' ')} and index files`;
const CSS_KINDS = new Set(['import-rule', 'url-token', 'composes-from']);
const URL_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:/;

export function isRelativeImport(use: Pick<ImportUse, 'specifier' | 'kind'>): boolean {
  const specifier = use.specifier;
  if (specifier === '.' || specifier === '..' || specifier.startsWith('./') || specifier.startsWith('../')) return true;
  if (!CSS_KINDS.has(use.kind)) return false;
  return specifier !== '' && !URL_SCHEME.test(specifier) && !/^[/#~]/.test(specifier);
}

export type ImportResolution = { found: string } | { found: null; reason: string };

/** Resolves one relative import of the file at `fromPath` among `paths` (every file of the tree). */
export function resolveImport(fromPath: string, use: Pick<ImportUse, 'specifier' | 'kind'>, paths: ReadonlySet<string>): ImportResolution {
  let specifier = use.specifier.replace(/[?#].*$/s, '');
  if (CSS_KINDS.has(use.kind)) {
    try {
      specifier = decodeURI(specifier);
    } catch {
      // Not percent-encoded after all; use it as written.
    }
  }
  const target = joinRelative(dirname(fromPath), specifier);
  if (target === null) return { found: null, reason: 'it points outside the project' };
  for (const candidate of candidates(target)) if (paths.has(candidate)) return { found: candidate };
  return { found: null, reason: `no file ${target === '' ? 'at the project root' : JSON.stringify(target)} (also tried ${TRIED})` };
}

function* candidates(target: string): Generator<string> {
  if (target !== '') {
    yield target;
    const dot = target.lastIndexOf('.');
    const extension = dot > target.lastIndexOf('/') ? target.slice(dot) : '';
    for (const twin of TYPESCRIPT_TWINS[extension] ?? []) yield target.slice(0, dot) + twin;
    for (const added of RESOLVE_EXTENSIONS) yield target + added;
  }
  const index = target === '' ? 'index' : `${target}/index`;
  for (const added of RESOLVE_EXTENSIONS) yield index + added;
}

/** `dir` joined with a relative path, normalised; null when it climbs above the root. */
function joinRelative(dir: string, relative: string): string | null {
  const parts = dir === '' ? [] : dir.split('/');
  for (const part of relative.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) return null;
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  return parts.join('/');
}
