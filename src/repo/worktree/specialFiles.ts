/**
 * Files git checks by their name (README ".gitmodules and .gitattributes"): `git fsck --strict`,
 * and so every clone with fsckObjects, refuses a tree whose .gitmodules (in any spelling HFS+ or
 * NTFS would equate) is not a blob its config parser accepts without disallowed submodule names,
 * URLs, paths or update commands, or whose .gitattributes has a line too long to read. The same
 * rules apply to what the API writes, moves, seeds and merges (pushes and git seeds are checked
 * object by object in src/git/fsck.ts).
 */
import { fsckSpecialObject, isFsckFailure, specialFileOf } from '../../git/fsck.js';
import type { ObjectType } from '../../git/oid.js';
import { basename } from '../../git/path.js';
import { encodePath } from '../../git/pathBytes.js';
import { MODE_SYMLINK, type TreeMode } from '../../git/tree.js';

/**
 * Why an entry of this mode and content cannot stand at `path`, or null. `object` is the blob (or
 * whatever the entry names; undefined when it is not in the repository, as for a submodule).
 */
export function specialFileProblem(path: string, mode: TreeMode, object: { type: ObjectType; body: Buffer } | undefined): string | null {
  const file = specialFileOf(encodePath(basename(path)));
  if (!file) return null;
  if (mode === MODE_SYMLINK) return file === 'gitmodules' ? 'gitmodulesSymlink: .gitmodules is a symbolic link' : null;
  const failure = fsckSpecialObject(file, object).find(isFsckFailure);
  return failure ? failure.message : null;
}

/** True when a path names a file git checks by name (its content must then pass specialFileProblem). */
export function isSpecialFilePath(path: string): boolean {
  return specialFileOf(encodePath(basename(path))) !== null;
}
