/**
 * A branch's working tree, read and changed inside one store transaction.
 *
 * The tree is a set of directory nodes (src/store/types.ts DirNode). A subdirectory nobody has
 * touched since it came from a commit is not stored as a node at all: its parent's entry carries
 * the tree id instead, so resetting a branch to a commit writes one node, whatever the tree's size.
 * A node is materialised the first time something below it changes. Each node caches its tree id;
 * a change clears the cache of the node and of every ancestor, so writeTree() hashes only the
 * directories on the paths that changed.
 *
 * Nodes are cached in memory for the life of the object and written back by save(), so a batch of
 * thousands of files rewrites each directory once.
 */
import { basename, dirname, joinPath } from '../git/path.js';
import { decodeTree, encodeTree, MODE_TREE, type FileMode, type TreeEntry, type TreeMode } from '../git/tree.js';
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

export class WorkingTree {
  private readonly nodes = new Map<string, LiveNode>();
  private readonly changed = new Set<string>();
  private readonly removed = new Set<string>();

  constructor(
    private readonly tx: ProjectReadTx,
    readonly branch: string,
  ) {}

  /** True when the branch has a working tree (every branch has one). */
  exists(): boolean {
    return this.node('') !== undefined;
  }

  /** Replaces the whole working tree with `tree`, unlocked; save() writes it. */
  resetTo(tree: Oid): void {
    for (const { dir } of this.tx.listDirNodes(this.branch)) this.removed.add(dir);
    this.nodes.clear();
    this.changed.clear();
    this.nodes.set('', this.nodeFromTree(tree));
    this.changed.add('');
    this.removed.delete('');
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
      entries = entry.oid ? this.nodeFromTree(entry.oid).entries : (this.node(here)?.entries ?? new Map());
      dir = here;
    }
    return { kind: 'missing' };
  }

  /** Every file at or below `path` (a file or a directory; "" is the whole tree), sorted by path. */
  filesUnder(path: string): WorkingFile[] {
    const found = this.lookup(path);
    const out: WorkingFile[] = [];
    if (found.kind === 'file') {
      out.push(toFile(path, found.entry));
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
    this.invalidate(dir);
  }

  /** Puts an entry back as it was (used by move, which keeps ids, modes and lazily stored subtrees). */
  setEntry(path: string, entry: WorkingEntry): void {
    const dir = dirname(path);
    const node = this.materialise(dir);
    const name = basename(path);
    node.entries.set(name, { ...entry, name });
    this.invalidate(dir);
  }

  /** Removes a file or a whole directory, then every directory it leaves empty. */
  remove(path: string): void {
    const found = this.lookup(path);
    if (found.kind === 'missing' || found.kind === 'blocked') return;
    if (found.kind === 'directory') this.forgetNodesUnder(path);
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
    // Lock state is not part of git's tree, so the cached tree ids stay valid.
    this.changed.add(dirname(path));
  }

  /** Locked files, found without materialising anything (locks live only in stored nodes). */
  lockedPaths(): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    const visit = (dir: string, node: LiveNode) => {
      for (const entry of node.entries.values()) if (entry.locked) out.push(joinPath(dir, entry.name));
    };
    for (const [dir, node] of this.nodes) {
      seen.add(dir);
      visit(dir, node);
    }
    for (const { dir, node } of this.tx.listDirNodes(this.branch)) {
      if (seen.has(dir) || this.removed.has(dir)) continue;
      visit(dir, { tree: node.tree, entries: new Map(node.entries.map((e) => [e.name, e])) });
    }
    return out.sort();
  }

  /** Hashes and stores every directory whose cached id was cleared; returns the root tree id. */
  writeTree(): Oid {
    const tx = this.writableTx();
    const treeOf = (dir: string): Oid => {
      const node = this.node(dir);
      if (!node) throw new Error(`working tree node ${JSON.stringify(dir)} is missing`);
      if (node.tree) return node.tree;
      const entries: TreeEntry[] = [];
      for (const entry of node.entries.values()) {
        const oid = entry.mode === MODE_TREE && entry.oid === null ? treeOf(joinPath(dir, entry.name)) : entry.oid;
        entries.push({ name: entry.name, mode: entry.mode, oid: oid as Oid });
      }
      node.tree = tx.putObject('tree', encodeTree(entries));
      this.changed.add(dir);
      return node.tree;
    };
    return treeOf('');
  }

  /** Writes back every node this object changed. */
  save(): void {
    const tx = this.writableTx();
    for (const dir of this.removed) if (!this.nodes.has(dir)) tx.deleteDirNode(this.branch, dir);
    for (const dir of this.changed) {
      const node = this.nodes.get(dir);
      if (!node) continue;
      const entries = [...node.entries.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      tx.putDirNode(this.branch, dir, { tree: node.tree, entries });
    }
    this.removed.clear();
    this.changed.clear();
  }

  private writableTx(): ProjectWriteTx {
    return this.tx as ProjectWriteTx;
  }

  private node(dir: string): LiveNode | undefined {
    const cached = this.nodes.get(dir);
    if (cached) return cached;
    if (this.removed.has(dir)) return undefined;
    const stored = this.tx.getDirNode(this.branch, dir);
    if (!stored) return undefined;
    const live: LiveNode = { tree: stored.tree, entries: new Map(stored.entries.map((e) => [e.name, e])) };
    this.nodes.set(dir, live);
    return live;
  }

  /** The node of `dir`, created or expanded from its lazily stored tree as needed. */
  private materialise(dir: string): LiveNode {
    const existing = this.node(dir);
    if (existing) return existing;
    if (dir === '') throw new Error(`branch ${JSON.stringify(this.branch)} has no working tree`);
    const parent = this.materialise(dirname(dir));
    const name = basename(dir);
    const entry = parent.entries.get(name);
    let live: LiveNode;
    if (entry && entry.mode === MODE_TREE && entry.oid) {
      live = this.nodeFromTree(entry.oid);
    } else {
      if (entry && entry.mode !== MODE_TREE) throw new Error(`a file stands at ${JSON.stringify(dir)}`);
      live = { tree: null, entries: new Map() };
      this.invalidate(dirname(dir));
    }
    // The parent's entry now points at a node; its own cached id is still right.
    parent.entries.set(name, { name, mode: MODE_TREE, oid: null, size: 0, locked: false });
    this.changed.add(dirname(dir));
    this.removed.delete(dir);
    this.nodes.set(dir, live);
    this.changed.add(dir);
    return live;
  }

  private nodeFromTree(tree: Oid): LiveNode {
    const entries = new Map<string, WorkingEntry>();
    for (const entry of this.readTree(tree)) {
      const size = entry.mode === MODE_TREE || entry.mode === '160000' ? 0 : (this.tx.objectSize(entry.oid) ?? 0);
      entries.set(entry.name, { name: entry.name, mode: entry.mode, oid: entry.oid, size, locked: false });
    }
    return { tree, entries };
  }

  private readTree(tree: Oid): TreeEntry[] {
    const object = this.tx.getObject(tree);
    if (!object || object.type !== 'tree') throw new Error(`tree ${tree.toString('hex')} is missing`);
    return decodeTree(object.body);
  }

  private invalidate(dir: string): void {
    let current: string | null = dir;
    while (current !== null) {
      const node = this.node(current);
      if (node) {
        node.tree = null;
        this.changed.add(current);
      }
      current = current === '' ? null : dirname(current);
    }
  }

  private forgetNode(dir: string): void {
    this.nodes.delete(dir);
    this.changed.delete(dir);
    this.removed.add(dir);
  }

  private forgetNodesUnder(dir: string): void {
    const prefix = `${dir}/`;
    for (const known of [...this.nodes.keys()]) if (known === dir || known.startsWith(prefix)) this.forgetNode(known);
    for (const { dir: stored } of this.tx.listDirNodes(this.branch)) {
      if (stored === dir || stored.startsWith(prefix)) this.forgetNode(stored);
    }
  }

  private collect(dir: string, entry: WorkingEntry | null, out: WorkingFile[]): void {
    if (entry && entry.oid) {
      this.collectTree(dir, entry.oid, out);
      return;
    }
    const node = this.node(dir);
    if (!node) return;
    for (const child of node.entries.values()) {
      const path = joinPath(dir, child.name);
      if (child.mode === MODE_TREE) this.collect(path, child, out);
      else out.push(toFile(path, child));
    }
  }

  private collectTree(dir: string, tree: Oid, out: WorkingFile[]): void {
    for (const entry of this.readTree(tree)) {
      const path = joinPath(dir, entry.name);
      if (entry.mode === MODE_TREE) this.collectTree(path, entry.oid, out);
      else {
        const size = entry.mode === '160000' ? 0 : (this.tx.objectSize(entry.oid) ?? 0);
        out.push({ path, oid: entry.oid, mode: entry.mode, size, locked: false });
      }
    }
  }
}

function toFile(path: string, entry: WorkingEntry): WorkingFile {
  return { path, oid: entry.oid as Oid, mode: entry.mode, size: entry.size, locked: entry.locked };
}
