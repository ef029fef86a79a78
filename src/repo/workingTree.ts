/**
 * A branch's working tree, read and changed inside one store transaction.
 *
 * The tree is a set of directory nodes (src/store/types.ts DirNode). A subdirectory nobody has
 * touched since it came from a commit has no node: its parent's entry carries the tree id, so
 * resetting a branch to a commit writes the root node alone, whatever the tree's size. A node is
 * materialised the first time something below it changes; its parent's entry then says so, and nodes
 * left behind by an earlier reset are ignored because no entry points at them.
 *
 * Every directory entry also caches its subdirectory's tree id; a change clears it on the path up to
 * the root, and save() hashes and stores the directories on changed paths (and reads no other node)
 * before it writes them back. A saved working tree therefore always knows its tree id: a commit reads
 * it from the root node and writes no node, so "write files, then commit" rewrites each changed
 * directory once and the commit's transaction is a few pages. Trees of states that never get
 * committed stay stored, unreachable, like the blobs of overwritten writes (see the README).
 * Locked paths are indexed in the root node, so lock checks never walk the tree.
 *
 * Nodes are cached in memory for the life of the object and written back by save(), so a batch of
 * thousands of files rewrites each directory once.
 */
import { basename, dirname, isWithin, joinPath } from '../git/path.js';
import { decodeTree, encodeTree, MODE_GITLINK, MODE_TREE, type FileMode, type TreeEntry, type TreeMode } from '../git/tree.js';
import type { Oid } from '../git/oid.js';
import type { ProjectReadTx, ProjectWriteTx, WorkingEntry } from '../store/types.js';

export interface WorkingFile {
  path: string;
  oid: Oid;
  mode: TreeMode;
  size: number;
  locked: boolean;
}

interface LiveNode {
  tree: Oid | null;
  entries: Map<string, WorkingEntry>;
}

export type Lookup =
  | { kind: 'file'; entry: WorkingEntry }
  | { kind: 'directory'; entry: WorkingEntry | null }
  | { kind: 'missing' }
  /** A file stands where a directory of the path would be. */
  | { kind: 'blocked'; at: string };

/**
 * Size of a file whose node came from a tree: reading a blob's length means reading the blob, so it
 * is left until a listing needs it (materialising a directory must not touch its files).
 */
const SIZE_UNKNOWN = -1;

const byName = (a: WorkingEntry, b: WorkingEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export class WorkingTree {
  private readonly nodes = new Map<string, LiveNode>();
  private readonly changed = new Set<string>();
  private readonly removed = new Set<string>();
  /** Locked paths of the branch (kept in the root node); null until first needed. */
  private locks: Set<string> | null = null;
  private locksChanged = false;

  constructor(
    private readonly tx: ProjectReadTx,
    readonly branch: string,
  ) {}

  /** Replaces the whole working tree with `tree`, unlocked; save() writes it. */
  resetTo(tree: Oid): void {
    this.nodes.clear();
    this.changed.clear();
    this.removed.clear();
    this.nodes.set('', this.nodeFromTree(tree));
    this.changed.add('');
    this.locks = new Set();
    this.locksChanged = true;
  }

  lookup(path: string): Lookup {
    if (path === '') return { kind: 'directory', entry: null };
    const root = this.node('');
    if (!root) return { kind: 'missing' };
    let entries = root.entries;
    let dir = '';
    const components = path.split('/');
    for (let i = 0; i < components.length; i++) {
      const entry = entries.get(components[i]);
      if (!entry) return { kind: 'missing' };
      const here = joinPath(dir, components[i]);
      const last = i === components.length - 1;
      if (entry.mode !== MODE_TREE) return last ? { kind: 'file', entry } : { kind: 'blocked', at: here };
      if (last) return { kind: 'directory', entry };
      entries = this.childEntries(here, entry);
      dir = here;
    }
    return { kind: 'missing' };
  }

  /** Every file at or below `path` (a file or a directory; "" is the whole tree), sorted by path. */
  filesUnder(path: string): WorkingFile[] {
    const found = this.lookup(path);
    const out: WorkingFile[] = [];
    if (found.kind === 'file') {
      out.push(this.toFile(path, found.entry));
    } else if (found.kind === 'directory') {
      this.collect(path, found.entry, out);
    }
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** Writes or replaces one file. The caller has checked that no file blocks its directories. */
  setFile(path: string, file: { oid: Oid; size: number; mode?: FileMode; locked: boolean }): void {
    const dir = dirname(path);
    const node = this.materialise(dir);
    const name = basename(path);
    const existing = node.entries.get(name);
    const mode = file.mode ?? (existing && existing.mode !== MODE_TREE ? existing.mode : '100644');
    node.entries.set(name, { name, mode, oid: file.oid, size: file.size, locked: file.locked });
    this.noteLock(path, file.locked);
    this.invalidate(dir);
  }

  /** Puts an entry back as it was (used by move, which keeps ids, modes and whole subtrees). */
  setEntry(path: string, entry: WorkingEntry): void {
    const dir = dirname(path);
    const node = this.materialise(dir);
    const name = basename(path);
    const moved: WorkingEntry = { name, mode: entry.mode, oid: entry.oid, size: entry.size, locked: entry.locked };
    node.entries.set(name, moved);
    if (entry.mode !== MODE_TREE) this.noteLock(path, entry.locked);
    this.invalidate(dir);
  }

  /** Removes a file or a whole directory, then every directory it leaves empty. */
  remove(path: string): void {
    const found = this.lookup(path);
    if (found.kind === 'missing' || found.kind === 'blocked') return;
    if (found.kind === 'directory') this.forgetNodesUnder(path);
    for (const locked of this.lockSet()) if (isWithin(locked, path)) this.noteLock(locked, false);
    let dir = dirname(path);
    let name = basename(path);
    for (;;) {
      const node = this.materialise(dir);
      node.entries.delete(name);
      this.invalidate(dir);
      if (node.entries.size > 0 || dir === '') break;
      this.forgetNode(dir);
      name = basename(dir);
      dir = dirname(dir);
    }
  }

  /** Sets the lock flag of an existing file. */
  setLocked(path: string, locked: boolean): void {
    const found = this.lookup(path);
    if (found.kind !== 'file' || found.entry.locked === locked) return;
    const node = this.materialise(dirname(path));
    node.entries.set(basename(path), { ...found.entry, locked });
    this.noteLock(path, locked);
    // Lock state is not part of git's tree, so the cached tree ids stay valid.
    this.changed.add(dirname(path));
  }

  /** Locked files of the branch, sorted. */
  lockedPaths(): string[] {
    return [...this.lockSet()].sort();
  }

  /** Locked files at or below `path`, from the lock index (no walk of the subtree). */
  lockedUnder(path: string): string[] {
    return this.lockedPaths().filter((locked) => isWithin(locked, path));
  }

  /** Hashes and stores every directory whose cached id was cleared; returns the root tree id. */
  writeTree(): Oid {
    const tx = this.writableTx();
    const treeOf = (dir: string, node: LiveNode): Oid => {
      if (node.tree) return node.tree;
      const entries: TreeEntry[] = [];
      for (const entry of node.entries.values()) {
        if (entry.oid === null) {
          // Only a materialised directory with a change below it lacks an id.
          const path = joinPath(dir, entry.name);
          const child = this.node(path);
          if (!child) throw new Error(`working tree node ${JSON.stringify(path)} is missing`);
          entry.oid = treeOf(path, child);
        }
        entries.push({ name: entry.name, mode: entry.mode, oid: entry.oid });
      }
      node.tree = tx.putObject('tree', encodeTree(entries));
      this.changed.add(dir);
      return node.tree;
    };
    const root = this.node('');
    if (!root) throw new Error(`branch ${JSON.stringify(this.branch)} has no working tree`);
    return treeOf('', root);
  }

  /** Hashes and stores the changed directories (see writeTree), then writes back every node this object changed. */
  save(): void {
    const tx = this.writableTx();
    if (this.nodes.has('')) this.writeTree();
    for (const dir of this.removed) if (!this.nodes.has(dir)) tx.deleteDirNode(this.branch, dir);
    if (this.locksChanged) this.changed.add('');
    for (const dir of this.changed) {
      const node = this.nodes.get(dir);
      if (!node) continue;
      const entries = [...node.entries.values()].sort(byName);
      if (dir === '') tx.putDirNode(this.branch, dir, { tree: node.tree, entries, locks: this.lockedPaths() });
      else tx.putDirNode(this.branch, dir, { tree: node.tree, entries });
    }
    this.removed.clear();
    this.changed.clear();
    this.locksChanged = false;
  }

  private writableTx(): ProjectWriteTx {
    return this.tx as ProjectWriteTx;
  }

  private lockSet(): Set<string> {
    if (!this.locks) this.locks = new Set(this.tx.getDirNode(this.branch, '')?.locks ?? []);
    return this.locks;
  }

  private noteLock(path: string, locked: boolean): void {
    const locks = this.lockSet();
    if (locks.has(path) === locked) return;
    if (locked) locks.add(path);
    else locks.delete(path);
    this.locksChanged = true;
  }

  /** The node of a directory that has one: the root, or one its parent's entry says is materialised. */
  private node(dir: string): LiveNode | undefined {
    const cached = this.nodes.get(dir);
    if (cached) return cached;
    if (this.removed.has(dir)) return undefined;
    if (dir !== '') {
      const parent = this.node(dirname(dir));
      const entry = parent?.entries.get(basename(dir));
      if (!entry || entry.mode !== MODE_TREE || !entry.materialised) return undefined;
    }
    const stored = this.tx.getDirNode(this.branch, dir);
    if (!stored) return undefined;
    const live: LiveNode = { tree: stored.tree, entries: new Map(stored.entries.map((e) => [e.name, e])) };
    this.nodes.set(dir, live);
    return live;
  }

  private childEntries(dir: string, entry: WorkingEntry): Map<string, WorkingEntry> {
    if (entry.materialised) return this.node(dir)?.entries ?? new Map();
    return entry.oid ? this.nodeFromTree(entry.oid).entries : new Map();
  }

  /** The node of `dir`, created or expanded from its tree as needed. */
  private materialise(dir: string): LiveNode {
    const existing = this.node(dir);
    if (existing) return existing;
    if (dir === '') throw new Error(`branch ${JSON.stringify(this.branch)} has no working tree`);
    const parent = this.materialise(dirname(dir));
    const name = basename(dir);
    const entry = parent.entries.get(name);
    if (entry && entry.mode !== MODE_TREE) throw new Error(`a file stands at ${JSON.stringify(dir)}`);
    const live: LiveNode = entry?.oid ? this.nodeFromTree(entry.oid) : { tree: null, entries: new Map() };
    // The subtree's id is unchanged by materialising it; a new directory has none yet.
    parent.entries.set(name, { name, mode: MODE_TREE, oid: entry?.oid ?? null, size: 0, locked: false, materialised: true });
    if (!entry) this.invalidate(dirname(dir));
    this.changed.add(dirname(dir));
    this.removed.delete(dir);
    this.nodes.set(dir, live);
    this.changed.add(dir);
    return live;
  }

  /** A node from a tree; blob sizes stay unknown (SIZE_UNKNOWN) until a listing asks for them. */
  private nodeFromTree(tree: Oid): LiveNode {
    const entries = new Map<string, WorkingEntry>();
    for (const entry of this.readTree(tree)) {
      const size = entry.mode === MODE_TREE || entry.mode === MODE_GITLINK ? 0 : SIZE_UNKNOWN;
      entries.set(entry.name, { name: entry.name, mode: entry.mode, oid: entry.oid, size, locked: false });
    }
    return { tree, entries };
  }

  private readTree(tree: Oid): TreeEntry[] {
    const object = this.tx.getObject(tree);
    if (!object || object.type !== 'tree') throw new Error(`tree ${tree.toString('hex')} is missing`);
    return decodeTree(object.body);
  }

  /** Clears the cached tree id of `dir` and of every ancestor, in the nodes and in their parents' entries. */
  private invalidate(dir: string): void {
    let current = dir;
    for (;;) {
      const node = this.node(current);
      if (node) {
        node.tree = null;
        this.changed.add(current);
      }
      if (current === '') return;
      const parentDir = dirname(current);
      const parent = this.node(parentDir);
      const entry = parent?.entries.get(basename(current));
      if (entry && entry.mode === MODE_TREE) entry.oid = null;
      current = parentDir;
    }
  }

  private forgetNode(dir: string): void {
    this.nodes.delete(dir);
    this.changed.delete(dir);
    this.removed.add(dir);
  }

  /** Drops the cached nodes below a removed directory; stored ones are orphaned with its entry. */
  private forgetNodesUnder(dir: string): void {
    const prefix = `${dir}/`;
    for (const known of [...this.nodes.keys()]) if (known === dir || known.startsWith(prefix)) this.forgetNode(known);
  }

  private collect(dir: string, entry: WorkingEntry | null, out: WorkingFile[]): void {
    if (entry && !entry.materialised) {
      if (entry.oid) this.collectTree(dir, entry.oid, out);
      return;
    }
    const node = this.node(dir);
    if (!node) return;
    for (const child of node.entries.values()) {
      const path = joinPath(dir, child.name);
      if (child.mode === MODE_TREE) this.collect(path, child, out);
      else out.push(this.toFile(path, child));
    }
  }

  private toFile(path: string, entry: WorkingEntry): WorkingFile {
    const oid = entry.oid as Oid;
    const size = entry.size === SIZE_UNKNOWN ? (this.tx.objectSize(oid) ?? 0) : entry.size;
    return { path, oid, mode: entry.mode, size, locked: entry.locked };
  }

  private collectTree(dir: string, tree: Oid, out: WorkingFile[]): void {
    for (const entry of this.readTree(tree)) {
      const path = joinPath(dir, entry.name);
      if (entry.mode === MODE_TREE) this.collectTree(path, entry.oid, out);
      else {
        const size = entry.mode === MODE_GITLINK ? 0 : (this.tx.objectSize(entry.oid) ?? 0);
        out.push({ path, oid: entry.oid, mode: entry.mode, size, locked: false });
      }
    }
  }
}


