import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Treehouse } from '../../service/treehouse.js';
import { defineRoute } from '../route.js';
import { branchField, contentEncoding, projectIdParams, queryBoolean } from '../schemas.js';

const fileParams = projectIdParams.extend({ '*': z.string().min(1) });
const branchQuery = z.object({ branch: branchField });

export function fileRoutes(app: FastifyInstance, th: Treehouse): void {
  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/projects/:id/files',
      summary: 'List files',
      params: projectIdParams,
      query: z.object({ branch: branchField, content: queryBoolean.default(false), prefix: z.string().max(4096).optional() }),
    },
    ({ params, query, principal }) => ({
      // The contract lists no blob ids; content and encoding are present only when asked for.
      files: th.workspace.listFiles(principal, params.id, query).map(({ path, size, locked, content, encoding }) => ({ path, size, locked, content, encoding })),
    }),
  );

  defineRoute(
    app,
    { method: 'GET', url: '/api/v1/projects/:id/files/*', summary: 'Read a file', params: fileParams, query: branchQuery },
    ({ params, query, principal }) => th.workspace.readFile(principal, params.id, { branch: query.branch, path: params['*'] }),
  );

  defineRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/files/batch',
      summary: 'Write and delete files in one batch',
      params: projectIdParams,
      body: z.strictObject({
        files: z.array(z.strictObject({ path: z.string(), content: z.string(), encoding: contentEncoding.optional(), locked: z.boolean().optional() })),
        deletes: z.array(z.string()).optional(),
        branch: branchField,
      }),
    },
    ({ params, body, principal }) => th.workspace.writeFiles(principal, params.id, body),
  );

  defineRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/files/move',
      summary: 'Move a file or directory',
      params: projectIdParams,
      body: z.strictObject({ from: z.string(), to: z.string(), branch: branchField }),
    },
    ({ params, body, principal }) => th.workspace.moveFile(principal, params.id, body),
  );

  defineRoute(
    app,
    { method: 'DELETE', url: '/api/v1/projects/:id/files/*', summary: 'Delete a file or directory', params: fileParams, query: branchQuery },
    ({ params, query, principal }) => th.workspace.deleteFile(principal, params.id, { branch: query.branch, path: params['*'] }),
  );
}
