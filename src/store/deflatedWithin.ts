import type { Oid } from '../git/oid.js';
import type { PackFormReads, ProjectReads } from './asyncTypes.js';
import type { DeflatedObject } from './types.js';

/**
 * PackFormReads.getDeflatedWithin for a reader that cannot stop part way through a read: the
 * objects' sizes first, then the forms of those that fit. Bodies are counted whole here, so a
 * batch is no larger than a reader that counts the forms would make it.
 */
export async function deflatedWithinBySizes(
  reads: Pick<ProjectReads, 'objectSizes'> & Pick<PackFormReads, 'getDeflated'>,
  oids: readonly Oid[],
  bytesMax: number,
): Promise<Array<DeflatedObject | undefined>> {
  if (oids.length === 0) return [];
  const sizes = await reads.objectSizes(oids);
  let end = 0;
  for (let bytes = 0; end < oids.length && (end === 0 || bytes < bytesMax); end++) bytes += sizes[end] ?? 0;
  return reads.getDeflated(end === oids.length ? oids : oids.slice(0, end));
}
