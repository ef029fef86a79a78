/**
 * git's name hash of a path (pack_name_hash in pack-objects.h, described in
 * Documentation/technical/pack-heuristics.txt): the number by which pack-objects sorts objects for
 * its delta search, so that versions of one file, and files of one name or extension, sit side by
 * side (src/git/deltaWindow.ts). Writers that know an object's path pass it to the store with the
 * object (ProjectWrites.putObject), which hands it to the deflate cache.
 */

const SPACE = 0x20;
const TAB = 0x09;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const ASCII_END = 0x80;

/** git's isspace(): the bytes the name hash skips. */
const isGitSpace = (byte: number): boolean => byte === SPACE || byte === TAB || byte === NEWLINE || byte === CARRIAGE_RETURN;

/**
 * git's name hash: a number that sorts by a path's last sixteen bytes (whitespace skipped), the
 * last weighing most, so `*.c` files sort together and versions of one file sit side by side.
 * The path as git names an object: a file's path from the root, a directory's ("" for the root: 0).
 */
export function packNameHash(path: string): number {
  let hash = 0;
  for (let i = 0; i < path.length; i++) {
    const code = path.charCodeAt(i);
    // A path with other characters is hashed over its UTF-8 bytes, as git sees it.
    if (code >= ASCII_END) return nameHashOfBytes(Buffer.from(path, 'utf8'));
    if (!isGitSpace(code)) hash = ((hash >>> 2) + (code << 24)) >>> 0;
  }
  return hash;
}

function nameHashOfBytes(bytes: Uint8Array): number {
  let hash = 0;
  for (const byte of bytes) if (!isGitSpace(byte)) hash = ((hash >>> 2) + (byte << 24)) >>> 0;
  return hash;
}
