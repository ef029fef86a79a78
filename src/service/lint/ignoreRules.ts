/**
 * Ignore files in gitignore syntax (.prettierignore, .gitignore at the project root): Prettier's
 * command line skips the files they name, so lint does not format-check them either.
 *
 * Supported: comments, blank lines, "!" negation, a trailing "/" for directories only, patterns
 * with a "/" anchored at the root, patterns without one matching a name at any depth, and the glob
 * syntax of glob.ts. As in git, a file inside an ignored directory cannot be re-included.
 */
import { globToRegExp } from './glob.js';

interface Rule {
  negate: boolean;
  directoryOnly: boolean;
  anchored: boolean;
  pattern: RegExp;
}

/** A pathological ignore file is cut off here rather than slowing every lint down. */
export const IGNORE_RULES_MAX = 1000;

export class IgnoreRules {
  private constructor(private readonly rules: readonly Rule[]) {}

  static readonly none = new IgnoreRules([]);

  static parse(text: string): IgnoreRules {
    const rules: Rule[] = [];
    for (const raw of text.split(/\r?\n/)) {
      if (rules.length === IGNORE_RULES_MAX) break;
      let line = raw.replace(/(?<!\\)\s+$/, '');
      if (line === '' || line.startsWith('#')) continue;
      const negate = line.startsWith('!');
      if (negate) line = line.slice(1);
      const directoryOnly = line.endsWith('/');
      if (directoryOnly) line = line.replace(/\/+$/, '');
      const anchored = line.includes('/');
      line = line.replace(/^\/+/, '');
      if (line === '') continue;
      rules.push({ negate, directoryOnly, anchored, pattern: globToRegExp(line) });
    }
    return new IgnoreRules(rules);
  }

  static merge(...sets: IgnoreRules[]): IgnoreRules {
    return new IgnoreRules(sets.flatMap((set) => set.rules));
  }

  get empty(): boolean {
    return this.rules.length === 0;
  }

  /** True when the file at `path` (relative to the root) is ignored. */
  ignores(path: string): boolean {
    if (this.rules.length === 0) return false;
    const components = path.split('/');
    let prefix = '';
    for (let i = 0; i < components.length; i++) {
      prefix = i === 0 ? components[0] : `${prefix}/${components[i]}`;
      if (this.matches(prefix, components[i], i < components.length - 1)) return true;
    }
    return false;
  }

  private matches(path: string, name: string, isDirectory: boolean): boolean {
    let ignored = false;
    for (const rule of this.rules) {
      if (rule.directoryOnly && !isDirectory) continue;
      if (rule.pattern.test(rule.anchored ? path : name)) ignored = !rule.negate;
    }
    return ignored;
  }
}
