/** Schemas several resources share (../shared/API.md "Conventions"). */
import { z } from 'zod';
import { FRAMEWORKS } from '../service/framework.js';

export const branchField = z.string().min(1).max(255).default('main');
export const limitField = z.coerce.number().int().min(1).max(200).default(50);
export const cursorField = z.string().min(1).max(1000).optional();
/** Query booleans: true/false/1/0. */
export const queryBoolean = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');
export const projectIdParams = z.object({ id: z.string().min(1).max(100) });
export const frameworkField = z.enum(FRAMEWORKS as [string, ...string[]]).nullable();
export const contentEncoding = z.enum(['utf8', 'base64']);
export const personField = z.strictObject({ name: z.string().min(1).max(200), email: z.string().min(3).max(320) });
/** A ref: a branch name, a commit id or unique prefix, or `worktree:<branch>`. */
export const refField = z.string().min(1).max(300);
/** A query parameter that may repeat (`paths=a&paths=b`), as a list. */
export const repeatedQuery = z
  .union([z.string().max(4096), z.array(z.string().max(4096)).max(1000)])
  .transform((value) => (Array.isArray(value) ? value : [value]));
