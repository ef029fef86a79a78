import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Treehouse } from '../../service/treehouse.js';
import { pathView } from '../apiPath.js';
import { defineRoute } from '../route.js';
import { branchField, projectIdParams } from '../schemas.js';

/** The body may be omitted entirely: lint then reads main. */
const lintBody = z.strictObject({ branch: branchField }).optional();

export function lintRoutes(app: FastifyInstance, th: Treehouse): void {
  defineRoute(
    app,
    { method: 'POST', url: '/api/v1/projects/:id/lint', summary: "Lint a branch's working tree (formatting, syntax, imports, JSON)", params: projectIdParams, body: lintBody },
    async ({ params, body, principal }) => {
      const repo = th.projects.repo(await th.projects.get(principal, params.id));
      const result = await th.linter.lint(repo, { branch: body?.branch ?? 'main' });
      return { ...result, errors: result.errors.map(({ path, ...error }) => ({ ...pathView(path), ...error })) };
    },
  );
}
