/**
 * Object filters of partial clones (`git clone --filter=…`; Documentation/rev-list-options.txt
 * "--filter", gitprotocol-v2.txt "filter <filter-spec>"): which trees and blobs a pack leaves out.
 * Objects a request names as wants are never left out (git's default, without
 * --filter-provided-objects): that is how a partial clone fetches what it lacks.
 *
 * Understood: `blob:none`, `blob:limit=<n>[kmg]` (blobs of n bytes or more left out), `tree:0`
 * (no trees nor blobs: commits only) and `tree:<depth>` (trees and blobs at `depth` or deeper below
 * a root tree left out, by the shallowest place each is found). git's other kinds (`sparse:oid=`,
 * `object:type=`, `combine:`) are refused by name, so the client says why instead of getting a pack
 * it did not ask for.
 */

export type ObjectFilter = { kind: 'blob:none' } | { kind: 'blob:limit'; bytes: number } | { kind: 'tree:0' } | { kind: 'tree:depth'; depth: number };

export class FilterSpecError extends Error {
  override name = 'FilterSpecError';
}

/** Longest spec looked at: git's own are short, and the text goes into an error message. */
const SPEC_CHARS_MAX = 200;

/** Deepest tree filter taken: deeper than any stored tree can be (src/git/treeDepth.ts allows 4,096 components), so the same as no limit. */
const TREE_DEPTH_MAX = 1_000_000;

const UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 * 1024, g: 1024 * 1024 * 1024 };

export function parseObjectFilter(spec: string): ObjectFilter {
  if (spec.length > SPEC_CHARS_MAX) throw new FilterSpecError('invalid filter-spec: too long');
  if (spec === 'blob:none') return { kind: 'blob:none' };
  const limit = /^blob:limit=(\d{1,15})([kmgKMG]?)$/.exec(spec);
  if (limit) {
    const bytes = Number(limit[1]) * UNITS[limit[2].toLowerCase()];
    if (!Number.isSafeInteger(bytes)) throw new FilterSpecError(`invalid filter-spec ${JSON.stringify(spec)}: the limit is too large`);
    // git's blob:limit=0 leaves every blob out, as blob:none does.
    return bytes === 0 ? { kind: 'blob:none' } : { kind: 'blob:limit', bytes };
  }
  const depth = /^tree:(\d{1,15})$/.exec(spec);
  if (depth) {
    const levels = Number(depth[1]);
    if (levels > TREE_DEPTH_MAX) throw new FilterSpecError(`invalid filter-spec ${JSON.stringify(spec)}: the depth is too large`);
    return levels === 0 ? { kind: 'tree:0' } : { kind: 'tree:depth', depth: levels };
  }
  const kind = /^(sparse:oid|object:type|combine|sparse:path)[=:]/.exec(spec);
  if (kind) throw new FilterSpecError(`filter-spec ${JSON.stringify(spec)} is not supported here (blob:none, blob:limit=<n> and tree:<depth> are)`);
  throw new FilterSpecError(`invalid filter-spec ${JSON.stringify(spec)}`);
}

/** Whether a pack under `filter` carries trees at all. */
export function filterKeepsTrees(filter: ObjectFilter | null): boolean {
  return filter?.kind !== 'tree:0';
}

/** The filter as one canonical spec ('' for none): what keeps a partial clone's pack apart from others. */
export function filterKey(filter: ObjectFilter | null): string {
  if (!filter) return '';
  if (filter.kind === 'blob:limit') return `blob:limit=${filter.bytes}`;
  return filter.kind === 'tree:depth' ? `tree:${filter.depth}` : filter.kind;
}
