import { TreehouseError } from '../errors.js';
import { pathProblem } from '../git/path.js';

/** Throws invalid_request naming `field` when `path` breaks the rules of ../shared/API.md "Files". */
export function requireValidPath(path: string, field: string): void {
  const problem = pathProblem(path);
  if (problem) throw new TreehouseError('invalid_request', `Invalid path: ${problem}.`, { issues: [{ path: field, message: problem }] });
}
