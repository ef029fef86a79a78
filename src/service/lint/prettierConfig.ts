/**
 * A project's own Prettier configuration, read from the tree without running anything.
 *
 * Prettier looks for its config from a file's directory upwards and takes the first file it finds,
 * in each directory in the order of PRETTIER_CONFIG_FILES (package.json and package.yaml count only
 * when they have a "prettier" key). Lint does the same inside the project's tree. Of the forms
 * Prettier accepts, the data ones are read: .prettierrc (YAML or JSON), .prettierrc.json,
 * .prettierrc.yaml/.yml, .prettierrc.json5 when it is plain JSON, and the "prettier" key of
 * package.json or package.yaml. JavaScript and TypeScript configs (prettier.config.*, .prettierrc.js
 * and the like) would have to be executed, a string naming a shared config package would have to be
 * loaded, and TOML has no reader here: such a config is reported as one `format` error on the
 * config file, and the files it governs are not format-checked. `plugins` are never loaded (they are
 * code); the rest of such a config still applies.
 */
import { dirname } from '../../git/path.js';
import { jsonProblem } from './jsonCheck.js';
import { matchesGlobs } from './glob.js';
import type { PrettierSupport } from './prettierSupport.js';
import { positionAt, type TextPosition } from './textPosition.js';

/** Prettier's search order within one directory (src/config/prettier-config/config-searcher.js). */
export const PRETTIER_CONFIG_FILES: readonly string[] = [
  'package.json',
  'package.yaml',
  '.prettierrc',
  '.prettierrc.json',
  '.prettierrc.yml',
  '.prettierrc.yaml',
  '.prettierrc.json5',
  '.prettierrc.js',
  'prettier.config.js',
  '.prettierrc.ts',
  'prettier.config.ts',
  '.prettierrc.mjs',
  'prettier.config.mjs',
  '.prettierrc.mts',
  'prettier.config.mts',
  '.prettierrc.cjs',
  'prettier.config.cjs',
  '.prettierrc.cts',
  'prettier.config.cts',
  '.prettierrc.toml',
];

const CONFIG_RANK = new Map(PRETTIER_CONFIG_FILES.map((name, index) => [name, index]));

export type PrettierOptions = Record<string, unknown>;

interface Override {
  files: string[];
  excludeFiles: string[];
  options: PrettierOptions;
}

export interface ConfigProblem extends TextPosition {
  message: string;
}

export interface ProjectConfig {
  /** The config file's path in the project. */
  path: string;
  /** Its directory ("" for the root); it governs the files below. */
  dir: string;
  options: PrettierOptions;
  overrides: Override[];
  /** Set when the config cannot be used; the files it governs are then not format-checked. */
  problem: ConfigProblem | null;
}

export function isConfigFileName(path: string): boolean {
  return CONFIG_RANK.has(path.slice(path.lastIndexOf('/') + 1));
}

/**
 * Reads one candidate config file. Null when it is not a config after all (a package.json without a
 * "prettier" key, or one that is not valid JSON, which the json rule reports).
 */
export function parseConfigFile(path: string, text: string, prettier: PrettierSupport): ProjectConfig | null {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const config: ProjectConfig = { path, dir: dirname(path), options: {}, overrides: [], problem: null };
  const fail = (message: string, at: TextPosition = { line: 1, column: 1 }) => ({ ...config, problem: { ...at, message } });
  let data: unknown;
  if (name === 'package.json' || name === 'package.yaml') {
    let document: unknown;
    try {
      document = name === 'package.json' ? JSON.parse(stripBom(text)) : prettier.parseYamlConfig(text);
    } catch {
      return null;
    }
    data = isPlainObject(document) ? document.prettier : undefined;
    if (data === undefined || data === null) return null;
  } else if (name === '.prettierrc' || name === '.prettierrc.yml' || name === '.prettierrc.yaml') {
    try {
      data = prettier.parseYamlConfig(text);
    } catch (error) {
      const at = (error as { linePos?: Array<{ line: number; col: number }> }).linePos?.[0];
      return fail(`${name} is not valid YAML or JSON: ${firstLine(error)}`, at ? { line: at.line, column: at.col } : undefined);
    }
    if (data === null || data === undefined) return config;
  } else if (name === '.prettierrc.json' || name === '.prettierrc.json5') {
    const problem = jsonProblem(stripBom(text));
    if (problem) {
      const why = name === '.prettierrc.json' ? `is not valid JSON: ${problem.message}` : 'uses JSON5 syntax, which lint does not read; write it as plain JSON';
      return fail(`${name} ${why}`, positionAt(text, problem.offset));
    }
    data = JSON.parse(stripBom(text));
  } else {
    const kind = name.endsWith('.toml') ? 'TOML, which lint does not read' : 'code, which Treehouse never runs';
    return fail(`${name} is ${kind}; formatting was not checked. Put the options in .prettierrc.json instead.`);
  }
  if (typeof data === 'string') {
    return fail(`The Prettier config names the shared config ${JSON.stringify(data)}; Treehouse does not load packages, so formatting was not checked. Copy its options into .prettierrc.json.`);
  }
  if (!isPlainObject(data)) return fail('The Prettier config must be an object of options.');
  const options = sanitise(data, prettier);
  if (typeof options === 'string') return fail(options);
  const overrides: Override[] = [];
  if (data.overrides !== undefined) {
    if (!Array.isArray(data.overrides)) return fail('"overrides" must be a list of {files, excludeFiles?, options}.');
    for (const [index, raw] of data.overrides.entries()) {
      const files = globList(isPlainObject(raw) ? raw.files : undefined);
      const excludeFiles = isPlainObject(raw) && raw.excludeFiles !== undefined ? globList(raw.excludeFiles) : [];
      const overrideOptions = isPlainObject(raw) && isPlainObject(raw.options) ? sanitise(raw.options, prettier) : 'options must be an object';
      if (!files || !excludeFiles || typeof overrideOptions === 'string') {
        const why = typeof overrideOptions === 'string' && files && excludeFiles ? overrideOptions : '"files" (and "excludeFiles") must be a glob or a list of globs';
        return fail(`overrides[${index}]: ${why}.`);
      }
      overrides.push({ files, excludeFiles, options: overrideOptions });
    }
  }
  return { ...config, options, overrides };
}

/** Finds the config that governs each file: the nearest directory upwards that has one. */
export class ConfigResolver {
  private readonly byDir = new Map<string, ProjectConfig>();

  constructor(configs: readonly ProjectConfig[]) {
    const rank = (config: ProjectConfig) => CONFIG_RANK.get(config.path.slice(config.path.lastIndexOf('/') + 1)) ?? Infinity;
    for (const config of configs) {
      const existing = this.byDir.get(config.dir);
      if (!existing || rank(config) < rank(existing)) this.byDir.set(config.dir, config);
    }
  }

  get configs(): ProjectConfig[] {
    return [...this.byDir.values()];
  }

  configFor(path: string): ProjectConfig | null {
    if (this.byDir.size === 0) return null;
    let dir = dirname(path);
    for (;;) {
      const config = this.byDir.get(dir);
      if (config) return config;
      if (dir === '') return null;
      dir = dirname(dir);
    }
  }
}

/** The options for one file: the config's, then every override whose globs match, in order. */
export function optionsFor(path: string, config: ProjectConfig | null): PrettierOptions {
  if (!config) return {};
  const relative = config.dir === '' ? path : path.slice(config.dir.length + 1);
  let options = config.options;
  for (const override of config.overrides) {
    if (matchesGlobs(relative, override.files) && !(override.excludeFiles.length > 0 && matchesGlobs(relative, override.excludeFiles))) {
      options = { ...options, ...override.options };
    }
  }
  return options;
}

/** Options as one string with sorted keys, for cache keys. */
export function optionsKey(options: PrettierOptions): string {
  const keys = Object.keys(options).sort();
  return keys.length === 0 ? '' : JSON.stringify(keys.map((key) => [key, options[key]]));
}

function sanitise(data: Record<string, unknown>, prettier: PrettierSupport): PrettierOptions | string {
  const options: PrettierOptions = {};
  for (const [key, value] of Object.entries(data)) {
    if (!prettier.optionNames.has(key)) continue;
    if (key === 'parser' && (typeof value !== 'string' || !prettier.parserNames.has(value))) {
      return `"parser": ${JSON.stringify(value)} is not one of Prettier's built-in parsers`;
    }
    options[key] = value;
  }
  return options;
}

function globList(value: unknown): string[] | null {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'string')) return value as string[];
  return null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
}
