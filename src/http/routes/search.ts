import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Treehouse } from '../../service/treehouse.js';
import { defineRoute } from '../route.js';
import { projectIdParams, queryBoolean, refField, repeatedQuery } from '../schemas.js';

export function searchRoutes(app: FastifyInstance, th: Treehouse): void {
  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/projects/:id/search',
      summary: "Lines of a tree's files holding a literal or matching an RE2-style expression, as git grep -n --column",
      params: projectIdParams,
      query: z.object({
        q: z.string().min(1).max(1000),
        regex: queryBoolean.default(false),
        case: queryBoolean.default(true),
        ref: refField.default('worktree:main'),
        paths: repeatedQuery.optional(),
        limit: z.coerce.number().int().min(1).max(1000).default(100),
      }),
    },
    ({ params, query, principal }) => th.workspace.search(principal, params.id, query),
  );
}
