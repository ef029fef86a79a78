/**
 * Framework detection from a project's files: package.json dependencies first (the most specific
 * framework wins: hydrogen before remix, nuxt and sveltekit before vite), then config files, then a
 * plain index.html for a static site. Null when nothing is recognised.
 */
export type Framework = 'next' | 'vite' | 'remix' | 'astro' | 'hydrogen' | 'sveltekit' | 'nuxt' | 'static';

export const FRAMEWORKS: readonly Framework[] = ['next', 'vite', 'remix', 'astro', 'hydrogen', 'sveltekit', 'nuxt', 'static'];

const BY_DEPENDENCY: Array<[Framework, string[]]> = [
  ['hydrogen', ['@shopify/hydrogen']],
  ['next', ['next']],
  ['remix', ['@remix-run/react', '@remix-run/node', '@remix-run/dev', '@remix-run/serve']],
  ['astro', ['astro']],
  ['sveltekit', ['@sveltejs/kit']],
  ['nuxt', ['nuxt', 'nuxt3']],
  ['vite', ['vite']],
];

const BY_CONFIG_FILE: Array<[Framework, RegExp]> = [
  ['next', /^next\.config\.(js|mjs|cjs|ts)$/],
  ['astro', /^astro\.config\.(js|mjs|cjs|ts)$/],
  ['sveltekit', /^svelte\.config\.(js|mjs|cjs|ts)$/],
  ['nuxt', /^nuxt\.config\.(js|mjs|cjs|ts)$/],
  ['remix', /^remix\.config\.(js|mjs|cjs|ts)$/],
  ['vite', /^vite\.config\.(js|mjs|cjs|ts|mts)$/],
];

/** `rootFiles` are the names at the top of the tree; `packageJson` its package.json text, if any. */
export function detectFramework(rootFiles: readonly string[], packageJson: string | undefined): Framework | null {
  if (packageJson !== undefined) {
    let parsed: { dependencies?: Record<string, string>; devDependencies?: Record<string, string> } = {};
    try {
      parsed = JSON.parse(packageJson);
    } catch {
      parsed = {};
    }
    const names = new Set([...Object.keys(parsed.dependencies ?? {}), ...Object.keys(parsed.devDependencies ?? {})]);
    for (const [framework, packages] of BY_DEPENDENCY) if (packages.some((name) => names.has(name))) return framework;
  }
  for (const [framework, pattern] of BY_CONFIG_FILE) if (rootFiles.some((name) => pattern.test(name))) return framework;
  if (rootFiles.includes('index.html')) return 'static';
  return null;
}
