import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { namedPathView, pathView } from '../apiPath.js';
import type { Treehouse } from '../../service/treehouse.js';
import { defineRoute, defineWriteRoute } from '../route.js';
import { batchFileEntry, branchField, deleteEntry, exactlyOnePath, pathBase64, pathText, pathViewFields, projectIdParams, queryBoolean } from '../schemas.js';

const fileParams = projectIdParams.extend({ '*': pathText.pipe(z.string().min(1)) });
const branchQuery = z.object({ branch: branchField });
/** `GET`/`DELETE …/file`: the path as a query parameter, so names that are not UTF-8 can be given as bytes. */
const fileQuery = z
  .object({ branch: branchField, path: pathText.optional(), path_base64: pathBase64.optional() })
  .superRefine(exactlyOnePath('path'))
  .transform(({ branch, path, path_base64 }) => ({ branch, path: (path ?? path_base64) as string }));

/** Answers, for the OpenAPI document. */
const contentFields = { content: z.string().optional(), encoding: z.literal('base64').optional().describe('Present when content is base64 (the file is not UTF-8).') };
const listedFile = z.object({
  ...pathViewFields,
  size: z.number().int(),
  locked: z.boolean(),
  type: z.enum(['symlink', 'submodule']).optional().describe('Absent for regular files. A submodule (gitlink) has no content here: reading it is a 404.'),
  commit: z.string().optional().describe('For a submodule: the commit of the other repository it pins.'),
  ...contentFields,
});
const readAnswer = z.object({ ...pathViewFields, ...contentFields, locked: z.boolean(), size: z.number().int(), oid: z.string() });
const moveAnswer = z.object({
  from: pathViewFields.path,
  from_base64: pathViewFields.path_base64,
  to: pathViewFields.path,
  to_base64: pathViewFields.path_base64,
});

export function fileRoutes(app: FastifyInstance, th: Treehouse): void {
  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/projects/:id/files',
      summary: 'List files',
      params: projectIdParams,
      response: z.object({ files: z.array(listedFile) }),
      query: z
        .object({
          branch: branchField,
          content: queryBoolean.default(false),
          prefix: pathText.pipe(z.string().max(4096)).optional(),
          prefix_base64: pathBase64.optional(),
        })
        .superRefine((value, context) => {
          if (value.prefix !== undefined && value.prefix_base64 !== undefined) {
            context.addIssue({ code: 'custom', path: ['prefix'], message: 'give at most one of prefix and prefix_base64' });
          }
        })
        .transform(({ prefix, prefix_base64, ...rest }) => ({ ...rest, prefix: prefix ?? prefix_base64 })),
    },
    async ({ params, query, principal }) => ({
      // The contract lists no blob ids; content and encoding are present only when asked for.
      files: (await th.workspace.listFiles(principal, params.id, query)).map(({ path, size, locked, type, commit, content, encoding }) => ({ ...pathView(path), size, locked, type, commit, content, encoding })),
    }),
  );

  const readFile = async (principal: Parameters<Treehouse['workspace']['readFile']>[0], id: string, input: { branch: string; path: string }) => {
    const { path, ...read } = await th.workspace.readFile(principal, id, input);
    return { ...pathView(path), ...read };
  };
  const deleteAnswer = (deleted: { path: string }) => ({ body: pathView(deleted.path) });

  defineRoute(
    app,
    { method: 'GET', url: '/api/v1/projects/:id/files/*', summary: 'Read a file', params: fileParams, query: branchQuery, response: readAnswer },
    ({ params, query, principal }) => readFile(principal, params.id, { branch: query.branch, path: params['*'] }),
  );

  defineRoute(
    app,
    { method: 'GET', url: '/api/v1/projects/:id/file', summary: 'Read a file named by path or path_base64', params: projectIdParams, query: fileQuery, response: readAnswer },
    ({ params, query, principal }) => readFile(principal, params.id, query),
  );

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/files/batch',
      summary: 'Write and delete files in one batch',
      params: projectIdParams,
      body: z.strictObject({
        files: z.array(batchFileEntry),
        deletes: z.array(deleteEntry).optional(),
        branch: branchField,
      }),
    },
    {
      run: ({ params, body, principal }, join) => th.workspace.writeFiles(principal, params.id, body, join),
      answer: ({ written }) => ({ body: { written } }),
    },
  );

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/files/move',
      summary: 'Move a file or directory',
      params: projectIdParams,
      response: moveAnswer,
      body: z
        .strictObject({ from: pathText.optional(), from_base64: pathBase64.optional(), to: pathText.optional(), to_base64: pathBase64.optional(), branch: branchField })
        .superRefine(exactlyOnePath('from', 'to'))
        .transform(({ from, from_base64, to, to_base64, branch }) => ({ branch, from: (from ?? from_base64) as string, to: (to ?? to_base64) as string })),
    },
    {
      run: ({ params, body, principal }, join) => th.workspace.moveFile(principal, params.id, body, join),
      answer: (moved) => ({ body: { ...namedPathView('from', moved.from), ...namedPathView('to', moved.to) } }),
    },
  );

  defineWriteRoute(
    app,
    { method: 'DELETE', url: '/api/v1/projects/:id/files/*', summary: 'Delete a file or directory', params: fileParams, query: branchQuery, response: z.object(pathViewFields) },
    {
      run: ({ params, query, principal }, join) => th.workspace.deleteFile(principal, params.id, { branch: query.branch, path: params['*'] }, join),
      answer: deleteAnswer,
    },
  );

  defineWriteRoute(
    app,
    { method: 'DELETE', url: '/api/v1/projects/:id/file', summary: 'Delete a file or directory named by path or path_base64', params: projectIdParams, query: fileQuery, response: z.object(pathViewFields) },
    {
      run: ({ params, query, principal }, join) => th.workspace.deleteFile(principal, params.id, query, join),
      answer: deleteAnswer,
    },
  );
}
