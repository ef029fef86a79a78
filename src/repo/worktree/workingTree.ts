/**
 * A branch's working tree, read and changed inside one store transaction.
 *
 * Reads are asynchronous and the edits are not: `open` reads the branch's record and root, `load`
 * reads the directories on the given paths a level at a time (one batched read per level), and the
 * edits (lookup, setFile, remove, …) then work on what is loaded; one on a directory nobody loaded
 * is a bug and throws.
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
import { packNameHash } from '../../git/nameHash.js';
import { basename, dirname, isWithin, joinPath } from '../../git/path.js';
import { MODE_TREE, type FileMode, type TreeMode } from '../../git/tree.js';
import type { Oid } from '../../git/oid.js';
import { OID_BYTES } from '../../git/oid.js';
import { pathDepth } from '../../git/treeDepth.js';
import type { ProjectReads, ProjectWrites } from '../../store/asyncTypes.js';
import type { WorkingTreeState } from '../../store/types.js';
import { scanStoredTree, SIZE_UNKNOWN, WorkingDir, type WorkingEntry } from './workingDir.js';
import { MissingObjectError } from '../../errors.js';


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
  /** The stored record; null when the branch has none. */
  private stored: WorkingTreeState | null = null;
  /** Locked paths of the branch; null until first needed. */
  private locks: Set<string> | null = null;
  private treeChanged = false;
  private locksChanged = false;

  private constructor(
    private readonly tx: ProjectReads,
    readonly branch: string,
  ) {}

  /** The branch's working tree with its record and root directory read. */
  static async open(tx: ProjectReads, branch: string): Promise<WorkingTree> {
    const tree = new WorkingTree(tx, branch);
    tree.stored = (await tx.getWorkingTree(branch)) ?? null;
    if (tree.stored) tree.nodes.set('', await tree.nodeFromTree(tree.stored.tree));
    return tree;
  }

  /**
   * Reads the directories on `paths` (each path's parent directories, and the path itself when it
   * is a directory), a level at a time: what lookup, setFile, remove and filesUnder of those paths need.
   */
  async load(paths: Iterable<string>): Promise<void> {
    const wanted = new Set<string>();
    for (const path of paths) {
      if (path === '') continue;
      const components = path.split('/');
      for (let i = 1; i <= components.length; i++) wanted.add(components.slice(0, i).join('/'));
    }
    const byDepth: string[][] = [];
    for (const dir of wanted) (byDepth[pathDepth(dir)] ??= []).push(dir);
    for (const level of byDepth) {
      if (!level) continue;
      const reads: Array<{ dir: string; tree: Oid }> = [];
      for (const dir of level) {
        if (this.nodes.has(dir)) continue;
        const parent = this.nodes.get(dirname(dir));
        const entry = parent?.get(basename(dir));
        // A directory that does not exist (or a file at its place) is for lookup to report.
        if (entry && entry.mode === MODE_TREE && entry.oid) reads.push({ dir, tree: entry.oid });
      }
      if (reads.length === 0) continue;
      const objects = await this.tx.getObjectsWithAnnex(reads.map((read) => read.tree));
      reads.forEach((read, i) => this.nodes.set(read.dir, WorkingDir.fromTree(read.tree, ...treeOf(objects[i], read.tree))));
    }
  }

  /** Replaces the whole working tree with `tree`, unlocked; save() writes it. */
  async resetTo(tree: Oid): Promise<void> {
    const root = await this.nodeFromTree(tree);
    this.nodes.clear();
    this.nodes.set('', root);
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
  async filesUnder(path: string): Promise<WorkingFile[]> {
    await this.load([path]);
    const found = this.lookup(path);
    const out: WorkingFile[] = [];
    if (found.kind === 'file') {
      out.push(this.toFile(path, found.entry));
    } else if (found.kind === 'directory') {
      await this.collect(path, found.entry, out);
    }
    await this.fillSizes(out);
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
    const tx = this.tx as ProjectWrites;
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
      // Copies: a directory patches its tree bytes and sizes in place on its next change, and a
      // put's buffers belong to the transaction until it ends.
      node.tree = tx.putObject('tree', Buffer.from(body), Buffer.from(annex), node.storedAs, packNameHash(dir));
    }
    return root.tree!;
  }

  /** Hashes and stores the changed directories (writeTree), then the branch's record. */
  save(): void {
    if (!this.treeChanged && !this.locksChanged) return;
    const tree = this.writeTree();
    this.stored = { tree, locks: this.lockedPaths() };
    (this.tx as ProjectWrites).putWorkingTree(this.branch, this.stored);
    this.treeChanged = false;
    this.locksChanged = false;
  }

  private storedState(): WorkingTreeState | null {
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

  /** The node of an existing directory (loaded); undefined if there is none. */
  private node(dir: string): WorkingDir | undefined {
    const cached = this.nodes.get(dir);
    if (cached) return cached;
    let node = this.nodes.get('');
    if (!node) return undefined;
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
    throw new Error(`working tree directory ${JSON.stringify(dir)} was not loaded (WorkingTree.load)`);
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

  private async nodeFromTree(tree: Oid): Promise<WorkingDir> {
    const [object] = await this.tx.getObjectsWithAnnex([tree]);
    return WorkingDir.fromTree(tree, ...treeOf(object, tree));
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

  /**
   * Every file at or below `dir`, a level at a time (one batched read per level of the directories
   * this object has not loaded; a tree may be thousands of directories deep, so no recursion).
   * Sizes the trees do not carry are SIZE_UNKNOWN until fillSizes.
   */
  private async collect(dir: string, entry: WorkingEntry | null, out: WorkingFile[]): Promise<void> {
    let level: Array<{ dir: string; entry: WorkingEntry | null }> = [{ dir, entry }];
    while (level.length > 0) {
      const next: Array<{ dir: string; entry: WorkingEntry | null }> = [];
      const unread: Array<{ dir: string; tree: Oid }> = [];
      for (const item of level) {
        const node = this.nodes.get(item.dir);
        if (!node) {
          // Not reached by this object, so unchanged: read its tree without keeping the nodes.
          const tree = item.entry ? item.entry.oid : this.storedState()?.tree;
          if (tree) unread.push({ dir: item.dir, tree });
          continue;
        }
        for (const child of node.entries()) {
          const path = joinPath(item.dir, child.name);
          if (child.mode === MODE_TREE) next.push({ dir: path, entry: child });
          else out.push(this.toFile(path, child));
        }
      }
      const objects = unread.length > 0 ? await this.tx.getObjectsWithAnnex(unread.map((item) => item.tree)) : [];
      unread.forEach((item, i) => {
        const [body, annex] = treeOf(objects[i], item.tree);
        scanStoredTree(body, annex, (name, mode, oidAt, size) => {
          const path = item.dir === '' ? name : `${item.dir}/${name}`;
          const oid = body.subarray(oidAt, oidAt + OID_BYTES);
          if (mode === MODE_TREE) next.push({ dir: path, entry: { name, mode, oid, size: 0 } });
          else out.push({ path, oid: body.toString('hex', oidAt, oidAt + OID_BYTES), mode, size, locked: this.isLocked(path) });
        });
      });
      level = next;
    }
  }

  /** Reads the sizes of listed files whose trees do not carry them (trees from a push, a seed or a merge), in one batch. */
  private async fillSizes(files: WorkingFile[]): Promise<void> {
    const unknown = files.filter((file) => file.size === SIZE_UNKNOWN);
    if (unknown.length === 0) return;
    const sizes = await this.tx.objectSizes(unknown.map((file) => Buffer.from(file.oid, 'hex')));
    unknown.forEach((file, i) => (file.size = sizes[i] ?? 0));
  }

  /** A listed file; a size the tree does not carry stays SIZE_UNKNOWN for fillSizes. */
  private toFile(path: string, entry: WorkingEntry): WorkingFile {
    const oid = entry.oid as Oid;
    return { path, oid: oid.toString('hex'), mode: entry.mode, size: entry.size, locked: this.isLocked(path) };
  }
}

/** A stored tree's body and annex, or an error naming it. */
function treeOf(object: { type: string; body: Buffer; annex: Buffer | null } | undefined, tree: Oid): [Buffer, Buffer | null] {
  if (!object || object.type !== 'tree') throw new MissingObjectError('tree', tree);
  return [object.body, object.annex];
}
