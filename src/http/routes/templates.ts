import type { FastifyInstance } from 'fastify';
import { TEMPLATES } from '../../service/templates/index.js';
import { defineRoute } from '../route.js';

export function templateRoutes(app: FastifyInstance): void {
  defineRoute(app, { method: 'GET', url: '/api/v1/templates', summary: 'Templates a project can start from' }, () => ({
    templates: TEMPLATES.map(({ name, description, framework }) => ({ name, description, framework })),
  }));
}
