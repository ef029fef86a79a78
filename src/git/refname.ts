/**
 * Branch names as `git check-ref-format --branch` accepts them (Documentation/git-check-ref-format.txt).
 */
export const BRANCH_NAME_BYTES_MAX = 255;
const FORBIDDEN_CHARACTERS = /[\x00-\x20\x7f~^:?*[\\]/;

export function branchNameProblem(name: string): string | null {
  if (name.length === 0) return 'branch name is empty';
  if (Buffer.byteLength(name, 'utf8') > BRANCH_NAME_BYTES_MAX) return 'branch name is too long';
  if (name === '@' || name === 'HEAD') return `"${name}" is not a valid branch name`;
  if (name.startsWith('-')) return 'branch name must not start with "-"';
  if (FORBIDDEN_CHARACTERS.test(name)) return 'branch name contains a forbidden character';
  if (name.includes('..')) return 'branch name must not contain ".."';
  if (name.includes('@{')) return 'branch name must not contain "@{"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'branch name has an empty component';
  if (name.endsWith('.')) return 'branch name must not end with "."';
  for (const component of name.split('/')) {
    if (component.startsWith('.')) return 'a branch name component must not start with "."';
    if (component.endsWith('.lock')) return 'a branch name component must not end with ".lock"';
  }
  return null;
}

export const BRANCH_REF_PREFIX = 'refs/heads/';

export function branchRef(name: string): string {
  return `${BRANCH_REF_PREFIX}${name}`;
}
