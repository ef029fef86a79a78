/**
 * The pack stream reads a pack's objects in batches bounded by bytes (src/repo/wire/uploadPack.ts
 * batchesOf), on a real LMDB store: large files a few at a time, small ones up to
 * BATCH_OBJECTS_MAX at a time, each object's form read once and not weighed by a lookup of its
 * own; and the pack it makes is one git's index-pack takes whole.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import type { Oid } from '../../../src/git/oid.js';
import { branchHead, inReadTx, inWriteTx, type Repo } from '../../../src/repo/repo.js';
import { BATCH_BYTES, BATCH_OBJECTS_MAX, planPushPack, pushPackStream } from '../../../src/repo/wire/uploadPack.js';
import type { AsyncStore, AsyncStoreReadTx } from '../../../src/store/asyncTypes.js';
import type { DeflatedObject } from '../../../src/store/types.js';
import { git, scratchDir } from '../../support/git.js';
import { newTestRepo, openTestStore } from '../../support/store.js';

const opened = openTestStore();
const work = scratchDir('treehouse-pack-batches-');

afterAll(async () => {
  await opened.close();
  work.remove();
});

interface ObservedRead {
  offered: number;
  forms: Array<DeflatedObject | undefined>;
}

/** The store, with every getDeflatedWithin and objectSizes of the project's reads noted. */
function observedStore(store: AsyncStore, within: ObservedRead[], sized: { objects: number }): AsyncStore {
  const project = (tx: AsyncStoreReadTx, number: number) => {
    const reads = tx.project(number);
    return new Proxy(reads, {
      get(target, name) {
        if (name === 'getDeflatedWithin') {
          return async (oids: readonly Oid[], bytesMax: number) => {
            const forms = await target.getDeflatedWithin!(oids, bytesMax);
            within.push({ offered: oids.length, forms });
            return forms;
          };
        }
        if (name === 'objectSizes') {
          return (oids: readonly Oid[]) => {
            sized.objects += oids.length;
            return target.objectSizes(oids);
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  return new Proxy(store, {
    get(target, name) {
      if (name === 'read') return <T>(action: (tx: AsyncStoreReadTx) => Promise<T>) => target.read((tx) => action({ ...tx, getRecord: tx.getRecord.bind(tx), listRecords: tx.listRecords.bind(tx), project: (number: number) => project(tx, number) }));
      const value = Reflect.get(target, name);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('the pack stream reads its objects in batches bounded by bytes', () => {
  it('reads large files a few at a time and small ones many at a time, each once, and makes a pack git takes', async () => {
    // Random bytes as base64: about 1.4 MB of text that deflates to about 1.06 MB.
    const large = Array.from({ length: 12 }, (_, index) => ({ path: `large/${index}.txt`, bytes: Buffer.from(randomBytes(1 << 20).toString('base64')) }));
    const small = Array.from({ length: 2500 }, (_, index) => ({ path: `small/${Math.floor(index / 100)}/${index}.txt`, bytes: Buffer.from(`file ${index}\n`.repeat(10)) }));
    const repo = await newTestRepo(opened.store, [...small, ...large]);
    const head = await inReadTx(repo, (tx) => branchHead(tx, 'main'));
    const plan = await planPushPack(repo, [head], []);
    // Every object gets its form, as the deflate cache would give it.
    await inWriteTx(repo, async (tx) => {
      for (let index = 0; index < plan.objects.length; index++) {
        const [object] = await tx.getObjects([plan.objects.oid(index)]);
        tx.putDeflated!(plan.objects.oid(index), deflateSync(object!.body));
      }
    });

    const within: ObservedRead[] = [];
    const sized = { objects: 0 };
    const observed: Repo = { ...repo, store: observedStore(repo.store, within, sized) };
    const chunks: Buffer[] = [];
    for await (const chunk of pushPackStream(observed, plan, new Set(['ofs-delta']))) chunks.push(chunk);

    // Each object's form read once, none weighed by a lookup of its size.
    expect(within.reduce((sum, read) => sum + read.forms.length, 0)).toBe(plan.objects.length);
    expect(within.every((read) => read.forms.every((form) => form !== undefined))).toBe(true);
    expect(sized.objects).toBe(0);
    // Every read stops once its forms reach BATCH_BYTES: all but its last come to less.
    const bytes = (forms: Array<DeflatedObject | undefined>) => forms.reduce((sum, form) => sum + form!.deflated.length, 0);
    for (const read of within) {
      expect(read.forms.length).toBeLessThanOrEqual(Math.min(read.offered, BATCH_OBJECTS_MAX));
      expect(bytes(read.forms.slice(0, -1))).toBeLessThan(BATCH_BYTES);
    }
    const largest = Math.max(...within.map((read) => bytes(read.forms)));
    expect(largest).toBeGreaterThan(BATCH_BYTES / 2);
    expect(largest).toBeLessThan(BATCH_BYTES + (2 << 20));
    // The large files went out a few per read, the small ones up to BATCH_OBJECTS_MAX per read.
    expect(Math.max(...within.map((read) => read.forms.length))).toBe(BATCH_OBJECTS_MAX);
    const largeForms = within.map((read) => read.forms.filter((form) => form!.deflated.length > 1_000_000).length).filter((count) => count > 0);
    expect(largeForms).toEqual([4, 4, 4]);

    const target = join(work.path, 'received.git');
    git(['init', '-q', '--bare', target]);
    const pack = Buffer.concat(chunks);
    const indexed = git(['index-pack', '--strict', '--stdin'], { cwd: target, input: pack });
    expect(indexed.trim()).toMatch(/^pack\t[0-9a-f]{40}$/);
    expect(git(['cat-file', '--batch-all-objects', '--batch-check'], { cwd: target }).trim().split('\n')).toHaveLength(plan.objects.length);
    git(['update-ref', 'refs/heads/main', head.toString('hex')], { cwd: target });
    git(['fsck', '--strict'], { cwd: target });
  }, 60_000);
});
