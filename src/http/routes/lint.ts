import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Treehouse } from '../../service/treehouse.js';
import { pathView } from '../apiPath.js';
import { defineWriteRoute } from '../route.js';
import { branchField, projectIdParams } from '../schemas.js';

/** The body may be omitted entirely: lint then reads main. */
const lintBody = z.strictObject({ branch: branchField }).optional();

export function lintRoutes(app: FastifyInstance, th: Treehouse): void {
  defineWriteRoute(
    app,
    { method: 'POST', url: '/api/v1/projects/:id/lint', summary: "Lint a branch's working tree (formatting, syntax, imports, JSON)", params: projectIdParams, body: lintBody },
    {
      readOnly: true,
      run: async ({ params, body, principal }) => th.linter.lint(th.projects.repo(await th.projects.get(principal, params.id)), { branch: body?.branch ?? 'main' }),
      answer: (result) => ({ body: { ...result, errors: result.errors.map(({ path, ...error }) => ({ ...pathView(path), ...error })) } }),
    },
  );
}
