/**
 * Paths at the API's edge (README "File names are bytes"). Inside, a path is the string
 * src/git/pathBytes.ts decodes from its bytes; a name that is not valid UTF-8 holds escapes
 * (lone surrogates U+DC80..U+DCFF) that JSON cannot carry faithfully. So:
 *
 * - answers give `path` as text for display (each byte that is not UTF-8 shown as U+FFFD) and,
 *   only for such names, `path_base64` with the exact bytes, which is then the name;
 * - requests give either `path` (text; a lone surrogate in it is refused, since it names no
 *   bytes) or `path_base64` (any bytes).
 */
import { TreehouseError } from '../errors.js';
import { decodePath, displayPath, encodePath, hasLoneSurrogate, isUtf8Path } from '../git/pathBytes.js';

export interface PathView {
  path: string;
  path_base64?: string;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** `{path}` for a UTF-8 name; `{path: display form, path_base64}` otherwise. */
export function pathView(path: string): PathView {
  return isUtf8Path(path) ? { path } : { path: displayPath(path), path_base64: encodePath(path).toString('base64') };
}

/** The same for a field with another name (`from`, `to`): `{from, from_base64?}`. */
export function namedPathView<K extends string>(field: K, path: string): Record<K, string> & Partial<Record<`${K}_base64`, string>> {
  const view = pathView(path);
  const out: Record<string, string> = { [field]: view.path };
  if (view.path_base64 !== undefined) out[`${field}_base64`] = view.path_base64;
  return out as Record<K, string> & Partial<Record<`${K}_base64`, string>>;
}

/** Why a path given as text cannot be taken, or null. */
export function textPathProblem(path: string): string | null {
  return hasLoneSurrogate(path) ? 'is not valid Unicode (it holds a lone surrogate); give names that are not UTF-8 as path_base64' : null;
}

/** Why a `path_base64` value cannot be taken, or null. */
export function base64PathProblem(text: string): string | null {
  return BASE64.test(text) && text.length % 4 !== 1 ? null : 'is not valid base64';
}

/** The path a `path_base64` value names (check it with base64PathProblem first). */
export function pathFromBase64(text: string): string {
  return decodePath(Buffer.from(text, 'base64'));
}

/**
 * The path of a request that gives `path` or `path_base64` (exactly one). Throws invalid_request
 * naming `field` (or `field_base64`).
 */
export function requestPath(input: { text?: string; base64?: string }, field: string): string {
  const issue = (path: string, message: string) => new TreehouseError('invalid_request', `Invalid ${path}: ${message}.`, { issues: [{ path, message }] });
  if ((input.text === undefined) === (input.base64 === undefined)) throw issue(field, `give exactly one of ${field} and ${field}_base64`);
  if (input.text !== undefined) {
    const problem = textPathProblem(input.text);
    if (problem) throw issue(field, problem);
    return input.text;
  }
  const problem = base64PathProblem(input.base64!);
  if (problem) throw issue(`${field}_base64`, problem);
  return pathFromBase64(input.base64!);
}

/**
 * Error details that name paths, in the same two forms: `paths` for display and, when any of them
 * is not UTF-8, `paths_base64` beside it (same order, every path).
 */
export function pathsDetail(paths: readonly string[]): { paths: string[]; paths_base64?: string[] } {
  if (paths.every(isUtf8Path)) return { paths: [...paths] };
  return { paths: paths.map(displayPath), paths_base64: paths.map((path) => encodePath(path).toString('base64')) };
}
