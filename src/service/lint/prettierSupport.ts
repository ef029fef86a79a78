/**
 * What lint needs to know about the installed Prettier, loaded once and lazily (Prettier is large,
 * and a server that never lints should not pay for it): which parser Prettier infers for a file
 * name, which options a config may set, and Prettier's own YAML reader for config files.
 */
import type { SupportLanguage } from 'prettier';

export interface PrettierSupport {
  version: string;
  /** The parser Prettier would infer from the file name, as `prettier --check` does; null: not formatted. */
  parserFor(path: string): string | null;
  /** Options a project's config may set (Prettier's own list, minus the ones lint controls). */
  optionNames: ReadonlySet<string>;
  /** Parsers built into Prettier (a config may name one in `parser`). */
  parserNames: ReadonlySet<string>;
  /** Prettier's reader for YAML (and JSON) config files; it evaluates nothing. */
  parseYamlConfig(text: string): unknown;
}

/** Options lint sets itself or that would load code: never taken from a project's config. */
const RESERVED_OPTIONS = new Set(['plugins', 'filepath', 'cursorOffset', 'rangeStart', 'rangeEnd']);

let loading: Promise<PrettierSupport> | undefined;

export function prettierSupport(): Promise<PrettierSupport> {
  loading ??= load();
  return loading;
}

async function load(): Promise<PrettierSupport> {
  const prettier = await import('prettier');
  // Not in Prettier's type declarations: the YAML config reader its own config loader uses.
  const yamlPlugin = (await import('prettier/plugins/yaml')) as unknown as { __parsePrettierYamlConfig?: (text: string) => unknown };
  const parseYamlConfig = yamlPlugin.__parsePrettierYamlConfig;
  if (typeof parseYamlConfig !== 'function') throw new Error(`prettier ${prettier.version} no longer exports its YAML config reader`);
  const info = await prettier.getSupportInfo();
  const languages = info.languages;
  const optionNames = new Set<string>();
  for (const option of info.options) if (option.name && !RESERVED_OPTIONS.has(option.name)) optionNames.add(option.name);
  const parserNames = new Set(languages.flatMap((language) => language.parsers));
  const inferred = new Map<string, string | null>();
  return {
    version: prettier.version,
    parserFor(path) {
      const base = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
      let parser = inferred.get(base);
      if (parser === undefined) {
        parser = languageOf(languages, base)?.parsers[0] ?? null;
        if (inferred.size > 100_000) inferred.clear();
        inferred.set(base, parser);
      }
      return parser;
    },
    optionNames,
    parserNames,
    parseYamlConfig,
  };
}

/** Prettier's getLanguageByFileName: an exact file name first, then the first matching extension. */
function languageOf(languages: readonly SupportLanguage[], base: string): SupportLanguage | undefined {
  return (
    languages.find((language) => language.filenames?.some((name) => name.toLowerCase() === base)) ??
    languages.find((language) => language.extensions?.some((extension) => base.endsWith(extension)))
  );
}
