/**
 * Lint of a branch's working tree (../shared/API.md "Projects", POST /projects/{id}/lint): Prettier
 * formatting (its defaults, or the project's own config: lint/prettierConfig.ts), syntax of
 * JavaScript, TypeScript, JSX, TSX and CSS (esbuild), strict JSON, and relative imports that must
 * resolve to a file of the tree.
 *
 * Everything but the import rule depends only on a file's content, name and Prettier options, so
 * results are cached by blob id in a bounded LRU: linting a tree again costs a listing, a cache
 * lookup per file and the import resolution (set lookups). Files not in the cache are read one by
 * one and checked with bounded concurrency; esbuild parses in its own process on every core, and
 * Prettier runs on a pool of worker threads (lint/formatter.ts).
 */
import { createHash } from 'node:crypto';
import { basename, dirname } from '../git/path.js';
import { encodePath } from '../git/pathBytes.js';
import { MODE_EXECUTABLE, MODE_FILE } from '../git/tree.js';
import { readBlobs } from '../repo/readBlobs.js';
import type { Repo } from '../repo/repo.js';
import { workingTreeFiles, type WorkingTreeFile } from '../repo/worktree/workingTreeFiles.js';
import { checkFile, FORMAT_BYTES_MAX, type FileReport, type FileToCheck } from './lint/checkFile.js';
import { checksFor, isSkippedPath, type FileChecks } from './lint/fileKinds.js';
import { InlineFormatter, WorkerPoolFormatter, defaultPoolSize, type Formatter } from './lint/formatter.js';
import { IgnoreRules } from './lint/ignoreRules.js';
import { LruCache } from '../store/lruCache.js';
import { ConfigResolver, isConfigFileName, optionsFor, optionsKey, parseConfigFile, type PrettierOptions, type ProjectConfig } from './lint/prettierConfig.js';
import { prettierSupport } from './lint/prettierSupport.js';
import { isRelativeImport, resolveImport, type ImportResolution } from './lint/resolveImports.js';

export type LintRule = 'format' | 'syntax' | 'import' | 'json';

export interface LintError {
  path: string;
  line: number;
  column: number;
  rule: LintRule;
  message: string;
}

/** Results may be shared between callers (they are cached): treat them as read-only. */
export interface LintResult {
  success: boolean;
  totalFiles: number;
  errors: LintError[];
}

export interface LinterOptions {
  /** File results kept in memory; each is a few hundred bytes. */
  cacheEntriesMax?: number;
  /** Prettier worker threads; 0 runs Prettier in the main thread. Default: one per core. */
  workers?: number;
  /** Files checked at once (each holds its text in memory until it is done). */
  concurrency?: number;
}

export const LINT_CACHE_ENTRIES_DEFAULT = 100_000;
export const LINT_CONCURRENCY_DEFAULT = 64;
/** Whole lint results kept (each holds its error list). */
export const LINT_RESULTS_CACHED_MAX = 32;
/** Config and ignore files larger than this are not read. */
const CONFIG_BYTES_MAX = 256 * 1024;
const IGNORE_FILES = ['.prettierignore', '.gitignore'];

const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

interface PlannedFile {
  file: WorkingTreeFile;
  key: string;
  name: string;
  checks: FileChecks;
  format: { parser: string; options: PrettierOptions } | null;
  config: ProjectConfig | null;
}

/** An LRU cache bounded in entries (each counts one). */
function entryBoundCache<K, V>(entriesMax: number): LruCache<K, V> {
  if (!Number.isSafeInteger(entriesMax) || entriesMax < 1) throw new RangeError('entriesMax must be a positive integer');
  return new LruCache<K, V>(entriesMax, 1, () => 1);
}

export class Linter {
  private readonly cache: LruCache<string, FileReport>;
  /** Whole results by tree fingerprint: an unchanged tree is answered without looking at its files. */
  private readonly results = entryBoundCache<string, LintResult>(LINT_RESULTS_CACHED_MAX);
  private readonly inflight = new Map<string, Promise<FileReport>>();
  private readonly formatter: Formatter;
  private readonly concurrency: number;

  constructor(options: LinterOptions = {}) {
    this.cache = entryBoundCache(options.cacheEntriesMax ?? LINT_CACHE_ENTRIES_DEFAULT);
    const workers = options.workers ?? defaultPoolSize();
    this.formatter = workers === 0 ? new InlineFormatter() : new WorkerPoolFormatter(workers);
    this.concurrency = options.concurrency ?? LINT_CONCURRENCY_DEFAULT;
  }

  /** Cached file results (for tests and the benchmark). */
  get cachedFiles(): number {
    return this.cache.size;
  }

  /** Forgets cached results: all of them, or only the whole-tree ones (the benchmark measures both). */
  clearCache(what: 'all' | 'trees' = 'all'): void {
    if (what === 'all') this.cache.clear();
    this.results.clear();
  }

  async lint(repo: Repo, input: { branch: string }): Promise<LintResult> {
    const prettier = await prettierSupport();
    const files = await workingTreeFiles(repo, input);
    // The whole result is a function of the listing (paths, blob ids, modes; configs are files too).
    const fingerprint = treeFingerprint(files);
    const known = this.results.get(fingerprint);
    if (known) return known;
    const paths = new Set(files.filter((file) => file.mode !== '160000').map((file) => file.path));
    const regular = files.filter((file) => file.mode === MODE_FILE || file.mode === MODE_EXECUTABLE);

    const settings = regular.filter(
      (file) => file.size <= CONFIG_BYTES_MAX && (IGNORE_FILES.includes(file.path) || (isConfigFileName(file.path) && !isSkippedPath(file.path))),
    );
    const settingTexts = await readBlobs(repo, settings.map((file) => file.oid));
    const textOf = (file: WorkingTreeFile) => utf8.decode(settingTexts.get(file.oid));
    const configs: ProjectConfig[] = [];
    let ignore = IgnoreRules.none;
    for (const file of settings) {
      if (IGNORE_FILES.includes(file.path)) ignore = IgnoreRules.merge(ignore, IgnoreRules.parse(textOf(file)));
      if (isConfigFileName(file.path)) {
        const config = parseConfigFile(file.path, textOf(file), prettier);
        if (config) configs.push(config);
      }
    }
    const resolver = new ConfigResolver(configs);

    const planned: PlannedFile[] = [];
    for (const file of regular) {
      const checks = checksFor(file.path, prettier);
      if (!checks) continue;
      const config = resolver.configFor(file.path);
      let format: PlannedFile['format'] = null;
      if (checks.parser && file.size <= FORMAT_BYTES_MAX && !config?.problem && !ignore.ignores(file.path)) {
        const { parser, ...options } = optionsFor(file.path, config);
        format = { parser: typeof parser === 'string' ? parser : checks.parser, options };
      }
      const name = basename(file.path);
      const jsonKind = checks.json ? (checks.json.comments ? 'jsonc' : 'json') : '';
      const key = `${file.oid}|${name}|${checks.loader ?? ''}|${jsonKind}|${format ? `${format.parser}|${optionsKey(format.options)}` : '-'}`;
      planned.push({ file, key, name, checks, format, config });
    }

    const reports = await this.reportsFor(repo, planned);
    const result = assemble(planned, reports, paths, resolver);
    this.results.set(fingerprint, result);
    return result;
  }

  async close(): Promise<void> {
    await this.formatter.close();
  }

  /** The report of every planned file: from the cache, or checked now (at most `concurrency` at once). */
  private async reportsFor(repo: Repo, planned: readonly PlannedFile[]): Promise<Map<string, FileReport>> {
    const reports = new Map<string, FileReport>();
    const queue: PlannedFile[] = [];
    const queued = new Set<string>();
    for (const item of planned) {
      if (reports.has(item.key) || queued.has(item.key)) continue;
      const cached = this.cache.get(item.key);
      if (cached) {
        reports.set(item.key, cached);
      } else {
        queue.push(item);
        queued.add(item.key);
      }
    }
    let next = 0;
    const runner = async () => {
      while (next < queue.length) {
        const item = queue[next++];
        reports.set(item.key, await this.check(repo, item));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, queue.length) }, runner));
    return reports;
  }

  private check(repo: Repo, item: PlannedFile): Promise<FileReport> {
    let running = this.inflight.get(item.key);
    if (!running) {
      running = (async () => {
        const text = utf8.decode((await readBlobs(repo, [item.file.oid])).get(item.file.oid));
        const toCheck: FileToCheck = { text, name: item.name, checks: item.checks, format: item.format };
        const report = await checkFile(toCheck, this.formatter);
        this.cache.set(item.key, report);
        return report;
      })().finally(() => this.inflight.delete(item.key));
      this.inflight.set(item.key, running);
    }
    return running;
  }
}

function treeFingerprint(files: readonly WorkingTreeFile[]): string {
  const hash = createHash('sha1');
  // The path's bytes: hashing the string would write every byte that is not UTF-8 as U+FFFD, and
  // two trees that differ only in such names would share one answer.
  for (const file of files) hash.update(encodePath(file.path)).update(`\0${file.mode}\0${file.oid}\n`);
  return hash.digest('hex');
}

function assemble(planned: readonly PlannedFile[], reports: Map<string, FileReport>, paths: ReadonlySet<string>, resolver: ConfigResolver): LintResult {
  const errors: LintError[] = [];
  const refusedOptions = new Map<string, string>();
  // Files of one directory often import the same modules: resolve each (directory, import) once.
  const resolutions = new Map<string, ImportResolution>();
  for (const item of planned) {
    const report = reports.get(item.key)!;
    const path = item.file.path;
    for (const finding of report.findings) errors.push({ path, ...finding });
    for (const use of report.imports) {
      if (!isRelativeImport(use)) continue;
      const memoKey = `${dirname(path)}\0${use.kind}\0${use.specifier}`;
      let resolution = resolutions.get(memoKey);
      if (!resolution) resolutions.set(memoKey, (resolution = resolveImport(path, use, paths)));
      if (resolution.found === null) {
        errors.push({ path, line: use.line, column: use.column, rule: 'import', message: `Cannot resolve ${JSON.stringify(use.specifier)}: ${resolution.reason}` });
      }
    }
    if (report.optionsError && item.config) refusedOptions.set(item.config.path, report.optionsError);
  }
  for (const config of resolver.configs) {
    if (config.problem) errors.push({ path: config.path, line: config.problem.line, column: config.problem.column, rule: 'format', message: config.problem.message });
  }
  for (const [path, message] of refusedOptions) {
    errors.push({ path, line: 1, column: 1, rule: 'format', message: `Prettier refused this config's options (${message}); files it governs were not format-checked` });
  }
  errors.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line || a.column - b.column || (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0)));
  return { success: errors.length === 0, totalFiles: planned.length, errors };
}
