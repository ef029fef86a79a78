/**
 * Changes to a few paths of a tree that lives in a merge's objects (StagedObjects): the conflict
 * resolutions of a merge are applied to the tree the merge wrote, before anything is stored.
 * `load` reads the directories on the given paths a level at a time; `lookup`, `set` and `remove`
 * work on what is loaded; `write` writes the changed directories, deepest first, and drops the
 * ones left empty (git has no empty trees).
 */
import { basename, dirname, joinPath } from '../../git/path.js';
import { pathDepth } from '../../git/treeDepth.js';
import { MODE_TREE, type TreeEntry, type TreeMode } from '../../git/tree.js';
import type { Oid } from '../../git/oid.js';
import type { MergeObjects } from './mergeTrees.js';

export type TreeLookup = { kind: 'file'; entry: TreeEntry } | { kind: 'directory' } | { kind: 'missing' } | { kind: 'blocked'; at: string };

export class TreeEdit {
  /** Loaded directories by path ("" is the root): entry name → entry. */
  private readonly dirs = new Map<string, Map<string, TreeEntry>>();
  private readonly changed = new Set<string>();

  private constructor(private readonly objects: MergeObjects) {}

  static async open(objects: MergeObjects, root: Oid): Promise<TreeEdit> {
    const edit = new TreeEdit(objects);
    edit.dirs.set('', toMap(await objects.readTree(root)));
    return edit;
  }

  /** Reads the directories on `paths` (each path's parents, and the path itself), a level at a time. */
  async load(paths: Iterable<string>): Promise<void> {
    const byDepth: string[][] = [];
    for (const path of paths) {
      const components = path.split('/');
      for (let i = 1; i <= components.length; i++) {
        const dir = components.slice(0, i).join('/');
        (byDepth[i] ??= []).push(dir);
      }
    }
    for (const level of byDepth) {
      if (!level) continue;
      const reads: Array<{ dir: string; oid: Oid }> = [];
      for (const dir of new Set(level)) {
        const entry = this.dirs.get(dirname(dir))?.get(basename(dir));
        if (!this.dirs.has(dir) && entry?.mode === MODE_TREE) reads.push({ dir, oid: entry.oid });
      }
      const trees = await Promise.all(reads.map((read) => this.objects.readTree(read.oid)));
      reads.forEach((read, i) => this.dirs.set(read.dir, toMap(trees[i])));
    }
  }

  lookup(path: string): TreeLookup {
    const components = path.split('/');
    let dir = '';
    for (let i = 0; i < components.length; i++) {
      const entry = this.loaded(dir).get(components[i]);
      if (!entry) return { kind: 'missing' };
      const here = joinPath(dir, components[i]);
      const last = i === components.length - 1;
      if (entry.mode !== MODE_TREE) return last ? { kind: 'file', entry } : { kind: 'blocked', at: here };
      if (last) return { kind: 'directory' };
      dir = here;
    }
    return { kind: 'missing' };
  }

  /** Writes a file entry, making the directories it needs. The caller has checked that no file blocks them. */
  set(path: string, entry: { mode: TreeMode; oid: Oid }): void {
    const components = path.split('/');
    let dir = '';
    for (const name of components.slice(0, -1)) {
      const here = joinPath(dir, name);
      const existing = this.loaded(dir).get(name);
      if (!existing) {
        // The id is written by write(); the placeholder marks the directory as present.
        this.loaded(dir).set(name, { name, mode: MODE_TREE, oid: Buffer.alloc(20) });
        this.dirs.set(here, new Map());
      } else if (existing.mode !== MODE_TREE) {
        throw new Error(`${JSON.stringify(here)} is a file, not a directory`);
      }
      dir = here;
    }
    const name = basename(path);
    this.loaded(dir).set(name, { name, mode: entry.mode, oid: entry.oid });
    this.markChanged(dir);
  }

  /** Removes a file entry (nothing when there is none). */
  remove(path: string): void {
    if (this.lookup(path).kind !== 'file') return;
    const dir = dirname(path);
    this.loaded(dir).delete(basename(path));
    this.markChanged(dir);
  }

  /** Writes the changed directories and returns the root tree's id. */
  write(): Oid {
    const order = [...this.changed].sort((a, b) => (a === '' ? 1 : b === '' ? -1 : pathDepth(b) - pathDepth(a)));
    let root: Oid | null = null;
    for (const dir of order) {
      const entries = [...this.loaded(dir).values()];
      if (dir === '') {
        root = this.objects.writeTree(entries);
        continue;
      }
      const parent = this.loaded(dirname(dir));
      if (entries.length === 0) parent.delete(basename(dir));
      else parent.set(basename(dir), { name: basename(dir), mode: MODE_TREE, oid: this.objects.writeTree(entries) });
    }
    if (!root) root = this.objects.writeTree([...this.loaded('').values()]);
    return root;
  }

  private markChanged(dir: string): void {
    for (let at = dir; ; at = dirname(at)) {
      if (this.changed.has(at)) return;
      this.changed.add(at);
      if (at === '') return;
    }
  }

  private loaded(dir: string): Map<string, TreeEntry> {
    const found = this.dirs.get(dir);
    if (!found) throw new Error(`directory ${JSON.stringify(dir)} was not loaded`);
    return found;
  }
}

function toMap(entries: readonly TreeEntry[]): Map<string, TreeEntry> {
  return new Map(entries.map((entry) => [entry.name, entry]));
}
