/**
 * A branch's working tree, read and changed inside one store transaction.
 *
 * What the store keeps per branch is one small record: the id of the tree the working tree holds now
 * and the branch's locked paths (src/store/types.ts WorkingTreeState). The directories are ordinary
 * git trees in the object store; the ones written here carry an annex of their blobs' sizes, so a
 * listing reads no blob (trees from a push or a merge get sizes from their blobs). A change hashes and stores the trees on its changed paths in its own transaction
 * (save), which is what makes the working tree's id always known: a commit writes the commit object
 * and moves the ref, nothing else, and creating a branch or restoring a commit writes one record
 * whatever the tree's size. Trees of states that never get committed stay stored, unreachable, like
 * the blobs of overwritten writes (see the README).
 *
 * Directories (src/repo/worktree/workingDir.ts) are read as they are reached and kept for the life of the
 * object, so a batch of thousands of files hashes each changed directory once.
 */
import { basename, dirname, isWithin, joinPath } from '../../git/path.js';
import { MODE_TREE, type FileMode, type TreeMode } from '../../git/tree.js';
import type { Oid } from '../../git/oid.js';
import { OID_BYTES } from '../../git/oid.js';
import { pathDepth } from '../../git/treeDepth.js';
import type { ProjectReadTx, ProjectWriteTx, WorkingTreeState } from '../../store/types.js';
import { scanStoredTree, SIZE_UNKNOWN, WorkingDir, type WorkingEntry } from './workingDir.js';


export type { WorkingEntry } from './workingDir.js';

export interface WorkingFile {
  path: string;
  /** Blob id, 40 hex digits (what every listing shows). */
  oid: string;
  mode: TreeMode;
  size: number;
  locked: boolean;
}

/** A file's entry as lookup() reports it, with the lock state of its path. */
export interface FoundFile extends WorkingEntry {
  oid: Oid;
  locked: boolean;
}

export type Lookup =
  | { kind: 'file'; entry: FoundFile }
  | { kind: 'directory'; entry: WorkingEntry | null }
  | { kind: 'missing' }
  /** A file stands where a directory of the path would be. */
  | { kind: 'blocked'; at: string };

export class WorkingTree {
  /** Directories decoded or changed so far, by path ("" is the root). */
  private readonly nodes = new Map<string, WorkingDir>();
  /** The stored record; null when the branch has none, undefined until first read. */
  private stored: WorkingTreeState | null | undefined;
  /** Locked paths of the branch; null until first needed. */
  private locks: Set<string> | null = null;
  private treeChanged = false;
  private locksChanged = false;

  constructor(
    private readonly tx: ProjectReadTx,
    readonly branch: string,
  ) {}

  /** Replaces the whole working tree with `tree`, unlocked; save() writes it. */
  resetTo(tree: Oid): void {
    this.nodes.clear();
    this.nodes.set('', this.nodeFromTree(tree));
    this.locks = new Set();
    this.treeChanged = true;
    this.locksChanged = true;
  }

  lookup(path: string): Lookup {
    if (path === '') return { kind: 'directory', entry: null };
    let node = this.node('');
    if (!node) return { kind: 'missing' };
    let dir = '';
    const components = path.split('/');
    for (let i = 0; i < components.length; i++) {
      const entry = node.get(components[i]);
      if (!entry) return { kind: 'missing' };
      const here = joinPath(dir, components[i]);
      const last = i === components.length - 1;
      if (entry.mode !== MODE_TREE) {
        return last ? { kind: 'file', entry: { ...entry, oid: entry.oid as Oid, locked: this.isLocked(here) } } : { kind: 'blocked', at: here };
      }
      if (last) return { kind: 'directory', entry };
      node = this.childNode(here, entry);
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
    const existing = node.get(name);
    const mode = file.mode ?? (existing && existing.mode !== MODE_TREE ? existing.mode : '100644');
    node.set({ name, mode, oid: file.oid, size: file.size });
    this.noteLock(path, file.locked);
    this.invalidate(dir);
  }

  /** Puts an entry back under a new path (move keeps ids, modes, whole subtrees and a file's lock). */
  setEntry(path: string, entry: WorkingEntry & { locked?: boolean }): void {
    // A directory is moved by its tree id, so it must not have unhashed changes.
    if (entry.oid === null) throw new Error(`cannot move ${JSON.stringify(path)}: its directory has unsaved changes`);
    const dir = dirname(path);
    const node = this.materialise(dir);
    const name = basename(path);
    node.set({ name, mode: entry.mode, oid: entry.oid, size: entry.size });
    if (entry.mode !== MODE_TREE) this.noteLock(path, entry.locked ?? false);
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
      const node = this.loadedNode(dir);
      node.delete(name);
      this.invalidate(dir);
      if (node.size > 0 || dir === '') break;
      this.nodes.delete(dir);
      name = basename(dir);
      dir = dirname(dir);
    }
  }

  /** Sets the lock flag of an existing file (lock state is not part of git's tree). */
  setLocked(path: string, locked: boolean): void {
    if (this.lookup(path).kind === 'file') this.noteLock(path, locked);
  }

  /** Locked files of the branch, sorted. */
  lockedPaths(): string[] {
    return [...this.lockSet()].sort();
  }

  /** Locked files at or below `path`, from the lock index (no walk of the subtree). */
  lockedUnder(path: string): string[] {
    return this.lockedPaths().filter((locked) => isWithin(locked, path));
  }

  /** The working tree's id: stored, or (after changes in this object) hashed and stored now. */
  writeTree(): Oid {
    if (!this.treeChanged) {
      const stored = this.storedState();
      if (stored) return stored.tree;
    }
    const tx = this.tx as ProjectWriteTx;
    const root = this.node('');
    if (!root) throw new Error(`branch ${JSON.stringify(this.branch)} has no working tree`);
    // Only a directory that changed in this object lacks an id, and it is loaded. Hashed deepest
    // first, so every subdirectory's id is known when its parent is encoded (no recursion: a tree
    // may be thousands of directories deep).
    const changed = [...this.nodes].filter(([, node]) => node.tree === null).map(([dir, node]) => ({ dir, node, depth: pathDepth(dir) }));
    changed.sort((a, b) => b.depth - a.depth);
    for (const { dir, node } of changed) {
      const { body, annex } = node.encode((name) => {
        const child = this.loadedNode(joinPath(dir, name)).tree;
        if (!child) throw new Error(`working tree directory ${JSON.stringify(joinPath(dir, name))} was not hashed before its parent`);
        return child;
      });
      node.tree = tx.putObject('tree', body, annex, node.storedAs);
    }
    return root.tree!;
  }

  /** Hashes and stores the changed directories (writeTree), then the branch's record. */
  save(): void {
    if (!this.treeChanged && !this.locksChanged) return;
    const tree = this.writeTree();
    this.stored = { tree, locks: this.lockedPaths() };
    (this.tx as ProjectWriteTx).putWorkingTree(this.branch, this.stored);
    this.treeChanged = false;
    this.locksChanged = false;
  }

  private storedState(): WorkingTreeState | null {
    if (this.stored === undefined) this.stored = this.tx.getWorkingTree(this.branch) ?? null;
    return this.stored;
  }

  private lockSet(): Set<string> {
    if (!this.locks) this.locks = new Set(this.storedState()?.locks ?? []);
    return this.locks;
  }

  private isLocked(path: string): boolean {
    const locks = this.lockSet();
    return locks.size > 0 && locks.has(path);
  }

  private noteLock(path: string, locked: boolean): void {
    const locks = this.lockSet();
    if (locks.has(path) === locked) return;
    if (locked) locks.add(path);
    else locks.delete(path);
    this.locksChanged = true;
  }

  /** The node of an existing directory, decoding its tree the first time; undefined if there is none. */
  private node(dir: string): WorkingDir | undefined {
    const cached = this.nodes.get(dir);
    if (cached) return cached;
    let node = this.nodes.get('');
    if (!node) {
      const stored = this.storedState();
      if (!stored) return undefined;
      node = this.nodeFromTree(stored.tree);
      this.nodes.set('', node);
    }
    if (dir === '') return node;
    // Down from the root one level at a time (no recursion: a tree may be thousands deep).
    let here = '';
    for (const name of dir.split('/')) {
      here = here === '' ? name : `${here}/${name}`;
      const known = this.nodes.get(here);
      if (known) {
        node = known;
        continue;
      }
      const entry = node.get(name);
      if (!entry || entry.mode !== MODE_TREE) return undefined;
      node = this.childNode(here, entry);
    }
    return node;
  }

  private childNode(dir: string, entry: WorkingEntry): WorkingDir {
    const cached = this.nodes.get(dir);
    if (cached) return cached;
    if (!entry.oid) throw new Error(`working tree directory ${JSON.stringify(dir)} changed but is not loaded`);
    const live = this.nodeFromTree(entry.oid);
    this.nodes.set(dir, live);
    return live;
  }

  /** A node this object has already reached (every directory on a changed path is one). */
  private loadedNode(dir: string): WorkingDir {
    const node = this.nodes.get(dir);
    if (!node) throw new Error(`working tree directory ${JSON.stringify(dir)} is not loaded`);
    return node;
  }

  /** The node of `dir`, created (with any missing parents) as needed. */
  private materialise(dir: string): WorkingDir {
    const existing = this.nodes.get(dir);
    if (existing) return existing;
    let node = this.node('');
    if (!node) throw new Error(`branch ${JSON.stringify(this.branch)} has no working tree`);
    if (dir === '') return node;
    // Down from the root, making each directory that is missing inside its parent.
    let here = '';
    for (const name of dir.split('/')) {
      const parent = here;
      here = here === '' ? name : `${here}/${name}`;
      const known = this.nodes.get(here);
      if (known) {
        node = known;
        continue;
      }
      const entry = node.get(name);
      if (entry && entry.mode === MODE_TREE) {
        node = this.childNode(here, entry);
        continue;
      }
      if (entry) throw new Error(`a file stands at ${JSON.stringify(here)}`);
      node.set({ name, mode: MODE_TREE, oid: null, size: 0 });
      const made = WorkingDir.empty();
      this.nodes.set(here, made);
      this.invalidate(parent);
      node = made;
    }
    return node;
  }

  private nodeFromTree(tree: Oid): WorkingDir {
    const { body, annex } = this.readStoredTree(tree);
    return WorkingDir.fromTree(tree, body, annex);
  }

  private readStoredTree(tree: Oid): { body: Buffer; annex: Buffer | null } {
    const object = this.tx.getObjectWithAnnex(tree);
    if (!object || object.type !== 'tree') throw new Error(`tree ${tree.toString('hex')} is missing`);
    return object;
  }

  /** Clears the tree id of `dir` and of every ancestor, in the nodes and in their parents' entries. */
  private invalidate(dir: string): void {
    this.treeChanged = true;
    this.loadedNode(dir).tree = null;
    for (let current = dir; current !== ''; current = dirname(current)) {
      const parent = this.loadedNode(dirname(current));
      // A parent that had changed already had its own ancestors cleared when it changed.
      const alreadyChanged = parent.tree === null;
      parent.clearOid(basename(current));
      if (alreadyChanged) return;
    }
  }

  /** Drops the decoded nodes at and below a removed directory. */
  private forgetNodesUnder(dir: string): void {
    const prefix = `${dir}/`;
    for (const known of [...this.nodes.keys()]) if (known === dir || known.startsWith(prefix)) this.nodes.delete(known);
  }

  /** Every file at or below `dir`, with an explicit stack (a tree may be thousands of directories deep). */
  private collect(dir: string, entry: WorkingEntry | null, out: WorkingFile[]): void {
    const pending: Array<{ dir: string; entry: WorkingEntry | null }> = [{ dir, entry }];
    while (pending.length > 0) {
      const next = pending.pop()!;
      const node = this.nodes.get(next.dir);
      if (!node) {
        // Not reached by this object, so unchanged: read its tree without keeping the nodes.
        const tree = next.entry ? next.entry.oid : this.storedState()?.tree;
        if (tree) this.collectTree(next.dir, tree, out);
        continue;
      }
      for (const child of node.entries()) {
        const path = joinPath(next.dir, child.name);
        if (child.mode === MODE_TREE) pending.push({ dir: path, entry: child });
        else out.push(this.toFile(path, child));
      }
    }
  }

  private collectTree(dir: string, tree: Oid, out: WorkingFile[]): void {
    const pending: Array<{ dir: string; tree: Oid }> = [{ dir, tree }];
    while (pending.length > 0) {
      const next = pending.pop()!;
      const { body, annex } = this.readStoredTree(next.tree);
      scanStoredTree(body, annex, (name, mode, oidAt, size) => {
        const path = next.dir === '' ? name : `${next.dir}/${name}`;
        if (mode === MODE_TREE) {
          pending.push({ dir: path, tree: body.subarray(oidAt, oidAt + OID_BYTES) });
          return;
        }
        const known = size === SIZE_UNKNOWN ? (this.tx.objectSize(body.subarray(oidAt, oidAt + OID_BYTES)) ?? 0) : size;
        out.push({ path, oid: body.toString('hex', oidAt, oidAt + OID_BYTES), mode, size: known, locked: this.isLocked(path) });
      });
    }
  }

  private toFile(path: string, entry: WorkingEntry): WorkingFile {
    const oid = entry.oid as Oid;
    const size = entry.size === SIZE_UNKNOWN ? (this.tx.objectSize(oid) ?? 0) : entry.size;
    return { path, oid: oid.toString('hex'), mode: entry.mode, size, locked: this.isLocked(path) };
  }
}
