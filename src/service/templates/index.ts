/**
 * The templates a project can start from (`source: {kind: "template", name}`). Each is a small, real
 * project that installs, builds and lints clean.
 */
import type { Framework } from '../framework.js';
import { hydrogenTemplate } from './hydrogen.js';
import { staticTemplate } from './static.js';
import { viteReactTemplate } from './viteReact.js';

export interface Template {
  name: string;
  description: string;
  framework: Framework;
  files: Record<string, string>;
}

export const TEMPLATES: readonly Template[] = [staticTemplate, viteReactTemplate, hydrogenTemplate];

export function findTemplate(name: string): Template | undefined {
  return TEMPLATES.find((template) => template.name === name);
}
