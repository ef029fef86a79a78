/**
 * A received pack, read and checked as receive-pack must before storing anything: parsePack
 * (entries, deltas resolved, ids computed, limits enforced; Documentation/gitformat-pack.txt),
 * every object as `git fsck --strict` would, and the history each received object needs (its
 * "gaps": what neither the pack nor the store has). Pure and synchronous given two lookups into
 * the receiver's store, so it can run on a worker thread (src/service/packChecker.ts) as well as
 * inline; a refusal is a result, not a throw, so it crosses a thread boundary as plain data.
 */
import { decodeCommit } from './commit.js';
import { FsckError, assertFsckClean, assertSpecialBlobsClean } from './fsck.js';
import { oidToHex, type Oid } from './oid.js';
import { PackFormatError, parsePack, type ExternalObject, type PackObject, type ParsePackOptions } from './pack.js';
import { decodeTree, MODE_GITLINK } from './tree.js';
import { commitTreesDepthProblem } from './treeDepth.js';

export type PackLimits = Omit<ParsePackOptions, 'resolveExternal'>;

/** What the receiver's store answers while a pack is checked. */
export interface StoreLookups {
  /** A thin pack's delta base. */
  object(oid: Oid): ExternalObject | undefined;
  /** Whether the store holds an object (and so, by its rules, everything the object names). */
  has(oid: Oid): boolean;
}

/** Why a received object cannot be stored: the object its history lacks, and whether a shallow clone cut it there. */
export interface Gap {
  /** Hex id of the first missing object found under it. */
  missing: string;
  /** The missing object is a parent of a commit the client said it holds shallow. */
  shallow: boolean;
}

export type PackCheckResult = { ok: true; objects: PackObject[]; gaps: Map<string, Gap> } | { ok: false; message: string };

/**
 * `clientShallow`: hex ids of the push's `shallow` lines (a push from a shallow clone).
 */
export function checkReceivedPack(pack: Buffer, limits: PackLimits, lookups: StoreLookups, clientShallow: ReadonlySet<string> = new Set()): PackCheckResult {
  try {
    const { objects } = parsePack(pack, { ...limits, resolveExternal: (oid) => lookups.object(oid) });
    for (const object of objects) assertFsckClean(object.type, object.body, oidToHex(object.oid));
    const received = new Map(objects.map((object) => [oidToHex(object.oid), object]));
    const read = (oid: Oid): ExternalObject | undefined => received.get(oidToHex(oid)) ?? lookups.object(oid);
    // fsck_finish(): the .gitmodules and .gitattributes blobs the received trees name, in the pack or stored.
    assertSpecialBlobsClean(
      objects.filter((object) => object.type === 'tree').map((object) => object.body),
      read,
    );
    // git's core.maxTreeDepth on every received commit's tree, stored subtrees included.
    const tooDeep = commitTreesDepthProblem(
      objects.filter((object) => object.type === 'commit').map((object) => ({ commit: object.oid, tree: decodeCommit(object.body).tree })),
      (oid) => {
        const tree = read(oid);
        return tree?.type === 'tree' ? tree.body : undefined;
      },
    );
    if (tooDeep) return { ok: false, message: tooDeep };
    return { ok: true, objects, gaps: historyGaps(objects, (oid) => lookups.has(oid), clientShallow) };
  } catch (error) {
    if (error instanceof PackFormatError || error instanceof FsckError) return { ok: false, message: error.message };
    throw error;
  }
}

/**
 * The received commits and trees whose history is incomplete, each with the first missing object
 * under it. Whatever the store holds is complete already (it never stores anything incomplete),
 * so only received objects are walked, depth first without recursion.
 */
export function historyGaps(objects: PackObject[], has: (oid: Oid) => boolean, clientShallow: ReadonlySet<string>): Map<string, Gap> {
  const received = new Map(objects.map((object) => [oidToHex(object.oid), object]));
  const gaps = new Map<string, Gap>();
  const complete = new Set<string>();
  for (const root of objects) {
    const rootKey = oidToHex(root.oid);
    if (complete.has(rootKey) || gaps.has(rootKey)) continue;
    const stack: Array<{ key: string; object: PackObject; references: Oid[]; next: number }> = [
      { key: rootKey, object: root, references: referencesOf(root), next: 0 },
    ];
    // Ids are hashes of the content, so objects cannot form a cycle; this only keeps a forged one finite.
    const onStack = new Set([rootKey]);
    while (stack.length > 0) {
      const frame = stack[stack.length - 1];
      if (frame.next === frame.references.length) {
        complete.add(frame.key);
        onStack.delete(frame.key);
        stack.pop();
        continue;
      }
      const reference = frame.references[frame.next++];
      const key = oidToHex(reference);
      let gap = gaps.get(key);
      if (!gap && !complete.has(key)) {
        const object = received.get(key);
        if (object) {
          if (onStack.has(key)) gap = { missing: key, shallow: false };
          else {
            stack.push({ key, object, references: referencesOf(object), next: 0 });
            onStack.add(key);
            continue;
          }
        } else if (!has(reference)) {
          gap = { missing: key, shallow: frame.object.type === 'commit' && clientShallow.has(frame.key) };
        } else complete.add(key);
      }
      if (gap) {
        // Everything on the stack leads to the gap, so it has the same one.
        for (const entry of stack) gaps.set(entry.key, gap);
        stack.length = 0;
      }
    }
  }
  return gaps;
}

/** The objects a commit or tree names (a submodule's commit lives elsewhere; tags name nothing we keep). */
function referencesOf(object: PackObject): Oid[] {
  if (object.type === 'commit') {
    const commit = decodeCommit(object.body);
    return [commit.tree, ...commit.parents];
  }
  if (object.type === 'tree') return decodeTree(object.body).filter((entry) => entry.mode !== MODE_GITLINK).map((entry) => entry.oid);
  return [];
}
