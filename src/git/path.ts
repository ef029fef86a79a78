/**
 * Path rules for files in a project (../shared/API.md "Files"), modelled on git's verify_path():
 * relative POSIX paths, no empty, "." or ".." components, no NUL, no ".git" component in any case,
 * nor any name NTFS or HFS+ would open as ".git" ("git~1", ".git.", ".g\u200cit"): git fsck --strict
 * refuses trees holding them (hasDotgit), and a checkout on those systems would write into .git.
 * Paths are decoded strings (src/git/pathBytes.ts): limits count the bytes they stand for.
 */
import { isDotGitName, specialFileOf } from './fsck.js';
import { encodePath, isEncodablePath, pathByteLength } from './pathBytes.js';
import { pathDepth, TREE_DEPTH_MAX } from './treeDepth.js';

export const PATH_BYTES_MAX = 4096;
export const PATH_COMPONENT_BYTES_MAX = 255;

/** Returns why `path` is not a valid project path, or null when it is. */
export function pathProblem(path: string): string | null {
  if (path.length === 0) return 'path is empty';
  if (path.includes('\0')) return 'path contains NUL';
  if (!isEncodablePath(path)) return 'path is not valid Unicode (it holds a lone surrogate)';
  // Named before the byte limit, which a path this deep also breaks: the depth is the reason.
  if (pathDepth(path) > TREE_DEPTH_MAX) return `path is deeper than ${TREE_DEPTH_MAX} components (git's core.maxTreeDepth)`;
  if (pathByteLength(path) > PATH_BYTES_MAX) return `path is longer than ${PATH_BYTES_MAX} bytes`;
  if (path.startsWith('/')) return 'path must be relative (no leading "/")';
  if (path.includes('\\')) return 'path must use "/" as separator (no "\\")';
  const components = path.split('/');
  for (const component of components) {
    const problem = componentProblem(component);
    if (problem) return problem;
  }
  // git fsck checks the object a .gitmodules or .gitattributes entry names: a directory so named
  // fails as gitmodulesBlob / gitattributesBlob, so none may be made.
  for (const component of components.slice(0, -1)) {
    const special = specialFileOf(encodePath(component));
    if (special) return `path has a directory named like .${special} (git fsck refuses a non-blob there)`;
  }
  return null;
}

export function componentProblem(component: string): string | null {
  if (component.length === 0) return 'path has an empty component';
  if (component === '.' || component === '..') return `path has a "${component}" component`;
  if (component.toLowerCase() === '.git' || isDotGitName(encodePath(component))) return 'path has a ".git" component';
  if (pathByteLength(component) > PATH_COMPONENT_BYTES_MAX) {
    return `path component is longer than ${PATH_COMPONENT_BYTES_MAX} bytes`;
  }
  return null;
}

/** Parent directory of a path ("" for the root). */
export function dirname(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

export function joinPath(directory: string, name: string): string {
  return directory === '' ? name : `${directory}/${name}`;
}

/** Every proper ancestor directory of `path`, nearest first, ending with "" (the root). */
export function ancestors(path: string): string[] {
  const result: string[] = [];
  let current = path;
  while (current !== '') {
    current = dirname(current);
    result.push(current);
  }
  return result;
}

/** True when `path` equals `directory` or lies below it ("" is the root and contains everything). */
export function isWithin(path: string, directory: string): boolean {
  return directory === '' || path === directory || path.startsWith(`${directory}/`);
}
