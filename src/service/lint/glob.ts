/**
 * The glob patterns of Prettier's `overrides` (`files`, `excludeFiles`), matched as Prettier does
 * with micromatch: `*` and `?` stay inside one path component, `**` spans components (and zero of
 * them), `{a,b}` and `[abc]` work, dot files match. A pattern without "/" matches the file's base
 * name in any directory; one with "/" matches the path relative to the config file's directory.
 */
const cache = new Map<string, RegExp>();
const CACHE_ENTRIES_MAX = 1000;

export function globToRegExp(pattern: string): RegExp {
  let regExp = cache.get(pattern);
  if (!regExp) {
    regExp = new RegExp(`^${translate(pattern.replace(/^\.\//, ''))}$`);
    if (cache.size >= CACHE_ENTRIES_MAX) cache.clear();
    cache.set(pattern, regExp);
  }
  return regExp;
}

/** True when `relativePath` matches one of `patterns` (Prettier's pathMatchesGlobs). */
export function matchesGlobs(relativePath: string, patterns: string | readonly string[]): boolean {
  const list = typeof patterns === 'string' ? [patterns] : patterns;
  const base = relativePath.slice(relativePath.lastIndexOf('/') + 1);
  return list.some((pattern) => globToRegExp(pattern).test(pattern.includes('/') ? relativePath : base));
}

function translate(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '*') {
      if (pattern[i + 1] === '*') {
        const atStart = i === 0 || pattern[i - 1] === '/';
        const atEnd = i + 2 === pattern.length || pattern[i + 2] === '/';
        if (atStart && atEnd) {
          // "**/" is zero or more whole components; a trailing "**" is anything below.
          if (pattern[i + 2] === '/') {
            out += '(?:[^/]*/)*';
            i += 2;
          } else {
            out += '.*';
            i += 1;
          }
          continue;
        }
        i += 1;
      }
      out += '[^/]*';
    } else if (char === '?') {
      out += '[^/]';
    } else if (char === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) {
        out += '\\[';
        continue;
      }
      let body = pattern.slice(i + 1, end);
      if (body.startsWith('!')) body = `^${body.slice(1)}`;
      out += `[${body.replace(/\\/g, '\\\\').replace(/\//g, '')}]`;
      i = end;
    } else if (char === '{') {
      const end = matchingBrace(pattern, i);
      if (end === -1) {
        out += '\\{';
        continue;
      }
      const alternatives = splitTopLevel(pattern.slice(i + 1, end));
      out += `(?:${alternatives.map(translate).join('|')})`;
      i = end;
    } else if (char === '\\' && i + 1 < pattern.length) {
      out += escapeRegExp(pattern[++i]);
    } else {
      out += escapeRegExp(char);
    }
  }
  return out;
}

function matchingBrace(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; i++) {
    if (pattern[i] === '{') depth++;
    else if (pattern[i] === '}' && --depth === 0) return i;
  }
  return -1;
}

function splitTopLevel(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '{') depth++;
    else if (body[i] === '}') depth--;
    else if (body[i] === ',' && depth === 0) {
      parts.push(body.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(body.slice(start));
  return parts;
}

function escapeRegExp(char: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(char) ? `\\${char}` : char;
}
