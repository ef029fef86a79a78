/**
 * Parses `git diff` patch output (no color, default prefixes) into the shapes Treehouse answers
 * with, so differential tests compare data rather than text.
 */
import type { FilePatch, PatchHunk } from '../../src/repo/diff/patch.js';

export interface GitFileDiff {
  /** The new path (the old one for a deletion). */
  path: string;
  oldPath: string | null;
  status: 'added' | 'deleted' | 'modified' | 'renamed' | 'copied' | 'type_changed';
  oldMode: string | null;
  newMode: string | null;
  oldOid: string | null;
  newOid: string | null;
  binary: boolean;
  patch: FilePatch;
}

/** Unquotes a path git printed in C style ("a\\303\\251"), or returns it as is. */
export function unquoteGitPath(text: string): string {
  if (!text.startsWith('"')) return text;
  const bytes: number[] = [];
  for (let i = 1; i < text.length - 1; i++) {
    const c = text[i];
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const next = text[++i];
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(text.slice(i, i + 3), 8));
      i += 2;
    } else {
      bytes.push(({ n: 10, t: 9, r: 13, '"': 34, '\\': 92, a: 7, b: 8, f: 12, v: 11 } as Record<string, number>)[next]);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Splits git diff output into files. Expects `--no-color`; works for any -U and with -M. */
export function parseGitPatch(out: string): GitFileDiff[] {
  const files: GitFileDiff[] = [];
  let file: GitFileDiff | null = null;
  let hunk: PatchHunk | null = null;
  const lines = out.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    if (line.startsWith('diff --git ')) {
      file = {
        path: '',
        oldPath: null,
        status: 'modified',
        oldMode: null,
        newMode: null,
        oldOid: null,
        newOid: null,
        binary: false,
        patch: { hunks: [], additions: 0, deletions: 0, oldMissingNewline: false, newMissingNewline: false, bytes: 0 },
      };
      hunk = null;
      files.push(file);
      continue;
    }
    if (!file) continue;
    if (hunk) {
      if (line.startsWith('\\')) {
        const previous = hunk.lines[hunk.lines.length - 1][0];
        if (previous !== '+') file.patch.oldMissingNewline = true;
        if (previous !== '-') file.patch.newMissingNewline = true;
        continue;
      }
      if (line.startsWith(' ') || line.startsWith('-') || line.startsWith('+')) {
        hunk.lines.push(line);
        if (line[0] === '+') file.patch.additions++;
        if (line[0] === '-') file.patch.deletions++;
        continue;
      }
    }
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (header) {
      hunk = {
        old_start: Number(header[1]),
        old_lines: header[2] === undefined ? 1 : Number(header[2]),
        new_start: Number(header[3]),
        new_lines: header[4] === undefined ? 1 : Number(header[4]),
        header: line,
        lines: [],
      };
      file.patch.hunks.push(hunk);
      continue;
    }
    let match: RegExpExecArray | null;
    if ((match = /^--- (?:a\/)?(.*)$/.exec(line)) && match[1] !== '/dev/null') file.oldPath ??= unquoteGitPath(match[1].startsWith('"a/') ? `"${match[1].slice(3)}` : match[1]);
    else if ((match = /^\+\+\+ (?:b\/)?(.*)$/.exec(line)) && match[1] !== '/dev/null') file.path = unquoteGitPath(match[1].startsWith('"b/') ? `"${match[1].slice(3)}` : match[1]);
    else if ((match = /^new file mode (\d+)$/.exec(line))) {
      file.status = 'added';
      file.newMode = match[1];
    } else if ((match = /^deleted file mode (\d+)$/.exec(line))) {
      file.status = 'deleted';
      file.oldMode = match[1];
    } else if ((match = /^old mode (\d+)$/.exec(line))) file.oldMode = match[1];
    else if ((match = /^new mode (\d+)$/.exec(line))) file.newMode = match[1];
    else if ((match = /^rename from (.*)$/.exec(line))) {
      file.status = 'renamed';
      file.oldPath = unquoteGitPath(match[1]);
    } else if ((match = /^rename to (.*)$/.exec(line))) file.path = unquoteGitPath(match[1]);
    else if ((match = /^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$/.exec(line))) {
      file.oldOid = match[1];
      file.newOid = match[2];
      if (match[3]) file.oldMode = file.newMode = match[3];
    } else if (/^Binary files .* differ$/.test(line)) file.binary = true;
  }
  return files;
}
