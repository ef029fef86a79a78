/** Schemas several resources share (../shared/API.md "Conventions"). */
import { z } from 'zod';
import { identFieldProblem } from '../git/commit.js';
import { hasLoneSurrogate } from '../git/pathBytes.js';
import { base64PathProblem, pathFromBase64, textPathProblem } from './apiPath.js';
import { FRAMEWORKS } from '../service/framework.js';

export const branchField = z.string().min(1).max(255).default('main');
export const limitField = z.coerce.number().int().min(1).max(200).default(50);
export const cursorField = z.string().min(1).max(1000).optional();
/** Query booleans: true/false/1/0. */
export const queryBoolean = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');
export const projectIdParams = z.object({ id: z.string().min(1).max(100) });
export const frameworkField = z.enum(FRAMEWORKS as [string, ...string[]]).nullable();
export const contentEncoding = z.enum(['utf8', 'base64']);
/** A commit author: both fields must be writable into a commit git accepts (identFieldProblem). */
const identField = z.string().superRefine((value, context) => {
  const problem = identFieldProblem(value);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});
export const personField = z.strictObject({ name: identField.pipe(z.string().min(1).max(200)), email: identField.pipe(z.string().min(3).max(320)) });

/**
 * File paths in requests (README "File names are bytes"): `path` as text, where a lone surrogate
 * is refused because it names no bytes, or `path_base64` with the name's exact bytes. Both parse to
 * the path as the repository layer takes it (src/http/apiPath.ts).
 */
export const pathText = z
  .string()
  .superRefine((value, context) => {
    const problem = textPathProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  })
  .describe('A path as text (UTF-8). A name that is not valid UTF-8 is given as path_base64 instead.');

export const pathBase64 = z
  .string()
  .superRefine((value, context) => {
    const problem = base64PathProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  })
  .transform(pathFromBase64)
  .describe("A path as the base64 of its exact bytes, for names that are not valid UTF-8 (any bytes but NUL; '/' separates components).");

/** Requires exactly one of `<field>` and `<field>_base64` on a parsed object. */
export function exactlyOnePath(...fields: string[]) {
  return (value: Record<string, unknown>, context: z.RefinementCtx) => {
    for (const field of fields) {
      if ((value[field] === undefined) === (value[`${field}_base64`] === undefined)) {
        context.addIssue({ code: 'custom', path: [field], message: `give exactly one of ${field} and ${field}_base64` });
      }
    }
  };
}

const fileEntryFields = { path: pathText.optional(), path_base64: pathBase64.optional(), content: z.string(), encoding: contentEncoding.optional() };

/** One file of a files seed: `path` or `path_base64`, parsed into `path`. */
export const seedFileEntry = z
  .strictObject(fileEntryFields)
  .superRefine(exactlyOnePath('path'))
  .transform(({ path, path_base64, ...rest }) => ({ ...rest, path: (path ?? path_base64) as string }));

/** Text of a snippet edit: JSON text that names UTF-8 (a lone surrogate names no bytes). */
const editText = z.string().superRefine((value, context) => {
  if (hasLoneSurrogate(value)) context.addIssue({ code: 'custom', message: 'is not valid Unicode (it holds a lone surrogate)' });
});

/** A snippet edit: `old` must occur exactly once in the file's current text and becomes `new`. */
export const snippetEdit = z.strictObject({
  old: editText.pipe(z.string().min(1, 'old is empty; it would occur everywhere')).describe('Non-empty text that must occur exactly once (overlapping occurrences count) in the text the previous edits left; matched on UTF-8, no normalisation, no line-ending conversion.'),
  new: editText.describe('Its replacement (may be empty).'),
});

/**
 * One file of a batch: a seed file that may also set its lock, or (instead of `content`) snippet
 * edits of the file's current text.
 */
export const batchFileEntry = z
  .strictObject({
    path: fileEntryFields.path,
    path_base64: fileEntryFields.path_base64,
    content: z.string().optional().describe('The whole new content. Give exactly one of content and edits.'),
    encoding: contentEncoding.optional().describe('Of content; not allowed with edits.'),
    edits: z.array(snippetEdit).optional().describe('Instead of content: replacements applied in order to the file as the working tree holds it (README "Snippet edits").'),
    locked: z.boolean().optional(),
  })
  .superRefine(exactlyOnePath('path'))
  .superRefine((value, context) => {
    if ((value.content === undefined) === (value.edits === undefined)) context.addIssue({ code: 'custom', path: ['content'], message: 'give exactly one of content and edits' });
    if (value.edits !== undefined && value.encoding !== undefined) context.addIssue({ code: 'custom', path: ['encoding'], message: 'encoding is for content; edits are text' });
  })
  .transform(({ path, path_base64, content, encoding, edits, locked }) => {
    const named = { path: (path ?? path_base64) as string, locked };
    return edits !== undefined ? { ...named, edits } : { ...named, content: content as string, encoding };
  });

/**
 * A merge conflict's resolution: `path` or `path_base64` (the conflict's path, as merge_conflict
 * details name it) with the resolved `content`, or `delete: true`.
 */
export const mergeResolution = z
  .union([
    z.strictObject({ path: pathText.optional(), path_base64: pathBase64.optional(), content: z.string(), encoding: contentEncoding.optional() }),
    z.strictObject({ path: pathText.optional(), path_base64: pathBase64.optional(), delete: z.literal(true) }),
  ])
  .superRefine(exactlyOnePath('path'))
  .transform((value) => {
    const path = (value.path ?? value.path_base64) as string;
    return 'delete' in value ? { path, delete: true as const } : { path, content: value.content, encoding: value.encoding };
  });

/** A path to delete: text, `{path}` or `{path_base64}`. */
export const deleteEntry = z
  .union([pathText, z.strictObject({ path: pathText }), z.strictObject({ path_base64: pathBase64 })])
  .transform((entry) => (typeof entry === 'string' ? entry : 'path' in entry ? entry.path : entry.path_base64));

/** Paths in answers: text for display, and the exact bytes when they are not UTF-8. */
export const pathViewFields = {
  path: z.string().describe('The path as text. When path_base64 is present, bytes that are not UTF-8 show as U+FFFD and this is for display only.'),
  path_base64: z.string().optional().describe('Present only for a name that is not valid UTF-8: the base64 of its exact bytes, which is then the name to use.'),
};
/** A ref: a branch name, a commit id or unique prefix, or `worktree:<branch>`. */
export const refField = z.string().min(1).max(300);
/** A query parameter that may repeat (`paths=a&paths=b`), as a list. */
export const repeatedQuery = z
  .union([z.string().max(4096), z.array(z.string().max(4096)).max(1000)])
  .transform((value) => (Array.isArray(value) ? value : [value]));
