/**
 * The checks of one file, which depend only on its content, its name and the Prettier options that
 * apply to it, so their result can be cached by blob id:
 * - syntax: esbuild parses the file (JS, TS, JSX, TSX, CSS) as a bundle entry whose every import is
 *   marked external by a plugin, so nothing is read from disk; the plugin also records each import
 *   with its position (esbuild attaches the import's location to a plugin's warning), for the
 *   import rule, which needs the whole tree and is checked afterwards (resolveImports.ts);
 * - json: jsonCheck.ts;
 * - format: Prettier's output compared with the file, reporting the first difference. A file that
 *   already failed syntax or json is not format-checked (one error says more than two).
 */
import { build, type Message, type Plugin } from 'esbuild';
import type { FileChecks, SyntaxLoader } from './fileKinds.js';
import type { Formatter } from './formatter.js';
import { jsonProblem } from './jsonCheck.js';
import type { PrettierOptions } from './prettierConfig.js';
import { columnFromByteColumn, firstDifference, lineAt, positionAt } from './textPosition.js';

export type FileRule = 'format' | 'syntax' | 'json';

export interface FileFinding {
  line: number;
  column: number;
  rule: FileRule;
  message: string;
}

/** One import of a file, as written (`import … from`, `export … from`, `import()`, `require()`, CSS `@import`/`url()`). */
export interface ImportUse {
  specifier: string;
  /** esbuild's import kind: import-statement, dynamic-import, require-call, import-rule, url-token, … */
  kind: string;
  line: number;
  column: number;
}

export interface FileReport {
  findings: FileFinding[];
  imports: ImportUse[];
  /** Prettier refused the options of the config that governs this file. */
  optionsError: string | null;
}

/** Files larger than this are checked for syntax but not formatted (Prettier's time grows quickly with size). */
export const FORMAT_BYTES_MAX = 1024 * 1024;

/** A directory that does not exist, so esbuild can never find anything on this machine's disk. */
const NOWHERE = '/nonexistent/treehouse-lint';
const IMPORT_MARK = '\u0000treehouse-import\u0000';
/** esbuild reports CSS it can recover from as warnings; these ids are the ones that are syntax errors. */
const CSS_SYNTAX_WARNINGS = new Set(['css-syntax-error', 'js-comment-in-css']);
const SNIPPET_CHARS_MAX = 80;

const captureImports: Plugin = {
  name: 'treehouse-capture-imports',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      return { path: args.path, external: true, warnings: [{ text: `${IMPORT_MARK}${args.kind}\u0000${args.path}` }] };
    });
  },
};

export interface FileToCheck {
  text: string;
  /** The file's base name (Prettier's TypeScript parser decides JSX by extension). */
  name: string;
  checks: FileChecks;
  /** Null when the file is not format-checked (no parser, ignored, too large, unusable config). */
  format: { parser: string; options: PrettierOptions } | null;
}

export async function checkFile(file: FileToCheck, formatter: Formatter): Promise<FileReport> {
  const report: FileReport = { findings: [], imports: [], optionsError: null };
  if (file.checks.loader) await checkSyntax(file, file.checks.loader, report);
  if (file.checks.json) {
    const problem = jsonProblem(file.text, file.checks.json);
    if (problem) report.findings.push({ ...positionAt(file.text, problem.offset), rule: 'json', message: problem.message });
  }
  if (file.format && report.findings.length === 0) await checkFormat(file, file.format, formatter, report);
  return report;
}

async function checkSyntax(file: FileToCheck, loader: SyntaxLoader, report: FileReport): Promise<void> {
  let errors: Message[];
  let warnings: Message[];
  try {
    const result = await build({
      stdin: { contents: file.text, loader, sourcefile: file.name, resolveDir: NOWHERE },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      target: 'esnext',
      logLevel: 'silent',
      // Keep imports that are used only as types, so that they are resolved too.
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
      plugins: [captureImports],
    });
    errors = result.errors;
    warnings = result.warnings;
  } catch (error) {
    const failure = error as { errors?: Message[]; warnings?: Message[] };
    if (!failure.errors) throw error;
    errors = failure.errors;
    warnings = failure.warnings ?? [];
  }
  for (const message of errors) {
    // Glob-style dynamic imports (`import(\`./${name}.js\`)`) make esbuild list a directory that
    // does not exist here; that is not a syntax problem of the file.
    if (message.text.startsWith('Could not resolve')) continue;
    report.findings.push({ ...esbuildPosition(message), rule: 'syntax', message: message.text });
  }
  for (const message of warnings) {
    if (message.text.startsWith(IMPORT_MARK)) {
      const [kind, specifier] = message.text.slice(IMPORT_MARK.length).split('\u0000');
      report.imports.push({ specifier, kind, ...esbuildPosition(message) });
    } else if (CSS_SYNTAX_WARNINGS.has(message.id)) {
      report.findings.push({ ...esbuildPosition(message), rule: 'syntax', message: message.text });
    }
  }
}

function esbuildPosition(message: Message): { line: number; column: number } {
  const location = message.location;
  if (!location) return { line: 1, column: 1 };
  return { line: location.line, column: columnFromByteColumn(location.lineText, location.column) };
}

async function checkFormat(file: FileToCheck, format: { parser: string; options: PrettierOptions }, formatter: Formatter, report: FileReport): Promise<void> {
  const outcome = await formatter.format(file.text, { ...format.options, parser: format.parser, filepath: file.name });
  if (outcome.kind === 'options') {
    report.optionsError = outcome.message;
  } else if (outcome.kind === 'syntax') {
    const message = `Prettier (${format.parser} parser) could not parse this file: ${outcome.message}`;
    report.findings.push({ line: outcome.line ?? 1, column: outcome.column ?? 1, rule: 'syntax', message });
  } else {
    const offset = firstDifference(file.text, outcome.text);
    if (offset === -1) return;
    const at = positionAt(file.text, offset);
    report.findings.push({ ...at, rule: 'format', message: describeDifference(file.text, outcome.text, offset, at.line) });
  }
}

function describeDifference(text: string, formatted: string, offset: number, line: number): string {
  const intro = 'Not formatted as Prettier formats it';
  if (text[offset] === '\r') return `${intro}: this line ends with "\\r\\n" and Prettier writes "\\n" (endOfLine)`;
  if (offset === text.length) return `${intro}: the file ends too early (Prettier adds ${JSON.stringify(snippet(formatted.slice(offset)))})`;
  if (offset === formatted.length) return `${intro}: Prettier would end the file before ${JSON.stringify(snippet(text.slice(offset)))}`;
  const column = positionAt(text, offset).column;
  return `${intro}: line ${line} is ${JSON.stringify(window(lineAt(text, line), column))}, Prettier writes ${JSON.stringify(window(lineAt(formatted, line), column))}`;
}

function snippet(text: string): string {
  return text.length > SNIPPET_CHARS_MAX ? `${text.slice(0, SNIPPET_CHARS_MAX - 1)}…` : text;
}

/** A long line cut to SNIPPET_CHARS_MAX characters around `column` (1-based), where the difference is. */
function window(line: string, column: number): string {
  if (line.length <= SNIPPET_CHARS_MAX) return line;
  const start = Math.max(0, Math.min(column - 1 - SNIPPET_CHARS_MAX / 2, line.length - SNIPPET_CHARS_MAX));
  const end = start + SNIPPET_CHARS_MAX;
  return `${start > 0 ? '…' : ''}${line.slice(start, end)}${end < line.length ? '…' : ''}`;
}
