import { afterAll, describe, expect, it } from 'vitest';
import { createDelta } from '../../src/git/delta.js';
import { hashObject, type Oid } from '../../src/git/oid.js';
import type { ExternalObject } from '../../src/git/pack.js';
import { PackWriter } from '../../src/git/pack.js';
import { checkReceivedPack, checkReceivedPackWithAsyncLookups, type AsyncStoreLookups, type StoreLookups } from '../../src/git/packCheck.js';
import { encodeTree, MODE_FILE, MODE_TREE } from '../../src/git/tree.js';
import { encodeCommit } from '../../src/git/commit.js';
import { PackChecker } from '../../src/service/packChecker.js';
import type { ResolvedRun } from '../../src/repo/wire/streamedRuns.js';

const checker = new PackChecker({ inlineBytesMax: 0 });
afterAll(() => checker.close());

const base = Buffer.from('the base text, which only the receiver has\n'.repeat(20));
const baseOid = hashObject('blob', base);
const store = new Map<string, ExternalObject>([[baseOid.toString('hex'), { type: 'blob', body: base }]]);
const asked: string[] = [];
/** The store as the check's synchronous lookups (the inline check of the reference answers). */
const syncLookups: StoreLookups = {
  object: (oid: Oid): ExternalObject | undefined => store.get(oid.toString('hex')),
  has: (oid: Oid) => store.has(oid.toString('hex')),
};
/** The same store as an asynchronous backend answers, each question written down. */
const lookups: AsyncStoreLookups = {
  objects: async (oids) =>
    oids.map((oid) => {
      asked.push(`object ${oid.toString('hex')}`);
      return store.get(oid.toString('hex'));
    }),
  has: async (oids) =>
    oids.map((oid) => {
      asked.push(`has ${oid.toString('hex')}`);
      return store.has(oid.toString('hex'));
    }),
};
const nothing: AsyncStoreLookups = { objects: async (oids) => oids.map(() => undefined), has: async (oids) => oids.map(() => false) };

/**
 * A thin pack: a whole blob, an OFS_DELTA on it, a REF_DELTA on a base outside the pack, and a
 * tree naming the three and a blob nobody has (so the tree has a gap).
 */
function thinPack(): { pack: Buffer; ids: string[]; tree: string; absent: string } {
  const whole = Buffer.from('a whole object\n'.repeat(50));
  const onWhole = Buffer.concat([whole, Buffer.from('one more line\n')]);
  const onBase = Buffer.concat([base, Buffer.from('and a change\n')]);
  const absent = hashObject('blob', Buffer.from('nobody has this\n'));
  const blobs = [whole, onWhole, onBase].map((body) => hashObject('blob', body));
  const tree = Buffer.concat(
    [...blobs.map((oid, i) => ({ name: `f${i}`, oid })), { name: 'g', oid: absent }].map(({ name, oid }) => Buffer.concat([Buffer.from(`100644 ${name}\0`), oid])),
  );
  const writer = new PackWriter(4);
  const header = writer.start();
  const first = writer.addObject('blob', whole);
  const pack = Buffer.concat([
    header,
    first.bytes,
    writer.addOfsDelta(first.offset, createDelta(whole, onWhole)).bytes,
    writer.addRefDelta(baseOid, createDelta(base, onBase)).bytes,
    writer.addObject('tree', tree).bytes,
    writer.finish(),
  ]);
  const treeOid = hashObject('tree', tree).toString('hex');
  return { pack, ids: [...blobs.map((oid) => oid.toString('hex')), treeOid], tree: treeOid, absent: absent.toString('hex') };
}

describe('PackChecker on its worker thread', () => {
  it('gives the same objects and gaps as the inline check, asking this thread for thin-pack bases and stored ids', async () => {
    const { pack, ids, tree, absent } = thinPack();
    const inline = checkReceivedPack(pack, {}, syncLookups);
    asked.length = 0;
    const threaded = await checker.check(pack, {}, lookups);
    expect(threaded.ok).toBe(true);
    expect(inline.ok).toBe(true);
    if (!threaded.ok || !inline.ok) return;
    expect(threaded.objects.map((object) => object.oid.toString('hex'))).toEqual(ids);
    expect(threaded.gaps).toEqual(inline.gaps);
    expect([...threaded.gaps]).toEqual([[tree, { missing: absent, shallow: false }]]);
    // The worker's two questions, and the thin base read again ahead of rebuilding bodies here (once
    // the objects are parsed, so while the worker asks its second question).
    expect([...asked].sort()).toEqual([`has ${absent}`, `object ${baseOid.toString('hex')}`, `object ${baseOid.toString('hex')}`]);
    // Blobs carrying their entry come without their body, with its length; the body is rebuilt
    // from the pack on first read (the thin delta's base read ahead) and kept.
    const blobs = threaded.objects.filter((object) => object.type === 'blob' && object.packed);
    expect(blobs.length).toBeGreaterThan(0);
    // (Not a body of its own: a getter that rebuilds it.)
    for (const blob of blobs) expect([Object.getOwnPropertyDescriptor(blob, 'body'), typeof blob.bodyBytes]).toEqual([undefined, 'number']);
    // The inline check drops blob bodies too (rebuilt on read, its thin base asked of the store).
    const inlineObjects = inline.objects.map(({ type, body, oid, offset, deltaDepth }) => ({ type, body: Buffer.from(body), oid: Buffer.from(oid), offset, deltaDepth }));
    asked.length = 0;
    expect(threaded.objects.map(({ type, body, oid, offset, deltaDepth }) => ({ type, body: Buffer.from(body), oid: Buffer.from(oid), offset, deltaDepth }))).toEqual(inlineObjects);
    expect(blobs.map((blob) => blob.bodyBytes)).toEqual(blobs.map((blob) => blob.body.length));
    expect(asked).toEqual([]);
  });

  it('refuses a pack whose base nobody has, a corrupt pack and an object fsck refuses, as results', async () => {
    const { pack } = thinPack();
    const missing = await checker.check(pack, {}, nothing);
    expect(missing).toMatchObject({ ok: false });
    const gone = () => {
      throw new Error('storage is gone');
    };
    const throwing = await checker.check(pack, {}, { objects: gone, has: gone });
    expect(throwing).toMatchObject({ ok: false });
    const corrupt = Buffer.from(pack);
    corrupt[20] ^= 0xff;
    expect(await checker.check(corrupt, {}, lookups)).toMatchObject({ ok: false, message: expect.stringMatching(/checksum/) });
    const writer = new PackWriter(1);
    const badTree = Buffer.concat([Buffer.from('100644 .git\0'), baseOid]);
    const refused = Buffer.concat([writer.start(), writer.addObject('tree', badTree).bytes, writer.finish()]);
    expect(await checker.check(refused, {}, lookups)).toMatchObject({ ok: false, message: expect.stringMatching(/hasDotgit/) });
    expect(await checker.check(pack, { objectsMax: 2 }, lookups)).toMatchObject({ ok: false, message: expect.stringMatching(/over the limit/) });
  });

  it('answers begin() with the parsed objects before the verdict, which refuses what fsck refuses; a pack that does not parse at once', async () => {
    const { pack, ids, tree, absent } = thinPack();
    const begun = await checker.begin(pack, {}, lookups);
    expect('parsed' in begun).toBe(true);
    if (!('parsed' in begun)) return;
    expect(begun.objects.map((object) => object.oid.toString('hex'))).toEqual(ids);
    const verdict = await begun.result;
    expect(verdict.ok && [...verdict.gaps]).toEqual([[tree, { missing: absent, shallow: false }]]);
    // The verdict's objects are the ones begin() gave.
    expect(verdict.ok && verdict.objects).toBe(begun.objects);
    const writer = new PackWriter(1);
    const badTree = Buffer.concat([Buffer.from('100644 .git\0'), baseOid]);
    const refused = await checker.begin(Buffer.concat([writer.start(), writer.addObject('tree', badTree).bytes, writer.finish()]), {}, lookups);
    expect('parsed' in refused && refused.objects.length).toBe(1);
    expect('parsed' in refused && (await refused.result)).toMatchObject({ ok: false, message: expect.stringMatching(/hasDotgit/) });
    const corrupt = Buffer.from(pack);
    corrupt[20] ^= 0xff;
    expect(await checker.begin(corrupt, {}, lookups)).toMatchObject({ ok: false, message: expect.stringMatching(/checksum/) });
  });

  it('rebuilds the bodies of a chain 300 deltas deep, sent without them, in any order they are read', async () => {
    const versions = [Buffer.from('version 0\n'.repeat(30))];
    for (let round = 1; round <= 300; round++) versions.push(Buffer.concat([versions[round - 1], Buffer.from(`line of round ${round}\n`)]));
    const writer = new PackWriter(versions.length);
    const parts = [writer.start()];
    let previous = writer.addObject('blob', versions[0]);
    parts.push(previous.bytes);
    for (let round = 1; round < versions.length; round++) {
      previous = writer.addOfsDelta(previous.offset, createDelta(versions[round - 1], versions[round]));
      parts.push(previous.bytes);
    }
    parts.push(writer.finish());
    const checked = await checker.check(Buffer.concat(parts), {}, nothing);
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    // The deepest first (the whole chain at once), then the rest from what it kept.
    const order = [300, 150, 0, ...Array.from({ length: 301 }, (_, index) => index)];
    for (const index of order) expect(checked.objects[index].body.equals(versions[index])).toBe(true);
    expect(checked.objects.map((object) => object.bodyBytes)).toEqual(versions.map((body) => body.length));
  });

  it("keeps a passed pack's objects for its commits' lists until asked, and lets them go when told they are not wanted or after a while", async () => {
    const until = async (done: () => boolean) => {
      for (let waited = 0; !done(); waited += 10) {
        if (waited > 5_000) throw new Error('the job did not end');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const own = new PackChecker({ inlineBytesMax: 0, listsUnaskedMsMax: 1_000 });
    try {
      const asked = await own.check(thinPack().pack, {}, lookups);
      if (!asked.ok) throw new Error(asked.message);
      // Not made (nor the job ended) until asked.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(own.jobsPending).toBe(1);
      expect((await asked.commitObjects()).size).toBe(0);
      expect(own.jobsPending).toBe(0);

      const forgotten = await own.check(thinPack().pack, {}, lookups);
      if (!forgotten.ok) throw new Error(forgotten.message);
      expect(own.jobsPending).toBe(1);
      forgotten.forgetCommitObjects!();
      await until(() => own.jobsPending === 0);

      const ignored = await own.check(thinPack().pack, {}, lookups);
      if (!ignored.ok) throw new Error(ignored.message);
      expect(own.jobsPending).toBe(1);
      await until(() => own.jobsPending === 0);
    } finally {
      await own.close();
    }
  });

  it('streams the objects it resolves (onResolved) in runs before it answers, each delta after its base, as the parse gives them', async () => {
    // 2,600 blobs (every third a delta on the one before it, some on a base outside the pack) and
    // a tree of them, then a commit: more than one run.
    const bodies = Array.from({ length: 2_600 }, (_, i) => Buffer.from(`file ${Math.floor(i / 3)} version ${i % 3}\n`.repeat(8 + (i % 5))));
    const writer = new PackWriter(bodies.length + 2);
    const chunks = [writer.start()];
    const offsets: number[] = [];
    bodies.forEach((body, i) => {
      const entry =
        i % 3 === 0
          ? writer.addObject('blob', body)
          : i % 97 === 1
            ? writer.addRefDelta(baseOid, createDelta(base, body))
            : writer.addOfsDelta(offsets[i - 1], createDelta(bodies[i - 1], body));
      offsets.push(entry.offset);
      chunks.push(entry.bytes);
    });
    const blobIds = bodies.map((body) => hashObject('blob', body));
    const tree = encodeTree(blobIds.map((oid, i) => ({ name: `f${String(i).padStart(5, '0')}`, mode: MODE_FILE, oid })));
    chunks.push(writer.addObject('tree', tree).bytes);
    const commit = Buffer.from(`tree ${hashObject('tree', tree).toString('hex')}\nauthor A <a@example.com> 1700000000 +0000\ncommitter A <a@example.com> 1700000000 +0000\n\nstreamed\n`);
    chunks.push(writer.addObject('commit', commit).bytes);
    chunks.push(writer.finish());
    const pack = Buffer.concat(chunks);
    const runs: ResolvedRun[] = [];
    let answered = false;
    const begun = await checker.begin(pack, {}, lookups, new Set(), (run) => {
      expect(answered).toBe(false);
      runs.push(run);
    });
    answered = true;
    expect('parsed' in begun).toBe(true);
    if (!('parsed' in begun)) return;
    expect(runs.length).toBeGreaterThan(1);
    const streamed = runs.flatMap((run) => run.forms);
    // The commit whole, with its entry.
    const commits = runs.flatMap((run) => run.commits);
    expect(commits.map((object) => [object.type, object.oid.toString('hex'), object.body.toString()])).toEqual([['commit', hashObject('commit', commit).toString('hex'), commit.toString()]]);
    expect(commits[0].packed!.deflated.equals(begun.objects[begun.objects.length - 1].packed!.deflated)).toBe(true);
    const parsed = new Map(begun.objects.map((object) => [object.oid.toString('hex'), object]));
    // Every tree and blob once, nothing else.
    expect(streamed.map((form) => form.oid.toString('hex')).sort()).toEqual(
      begun.objects.filter((object) => object.type !== 'commit').map((object) => object.oid.toString('hex')).sort(),
    );
    const seen = new Set<string>([baseOid.toString('hex')]);
    for (const form of streamed) {
      const object = parsed.get(form.oid.toString('hex'))!;
      expect(form.type).toBe(object.type);
      expect(form.inflatedBytes).toBe(object.bodyBytes ?? object.body.length);
      expect(form.deflated.equals(object.packed!.deflated)).toBe(true);
      expect(form.delta && { base: form.delta.base.toString('hex'), bytes: form.delta.bytes }).toEqual(
        object.packed!.base && { base: object.packed!.base.toString('hex'), bytes: object.packed!.dataBytes },
      );
      if (form.delta) expect(seen.has(form.delta.base.toString('hex'))).toBe(true);
      seen.add(form.oid.toString('hex'));
    }
    expect((await begun.result).ok).toBe(true);
  });

  it("parses a pack that comes while the last one's commit lists are made between two slices of them, not after them all", async () => {
    // A line of 1,500 commits, each changing one of 200 files: each list diffs two 200-entry trees.
    const person = { name: 'T', email: 't@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
    const files = Array.from({ length: 200 }, (_, i) => hashObject('blob', Buffer.from(`file ${i} version 0\n`)));
    const bodies: Array<['blob' | 'tree' | 'commit', Buffer]> = files.map((_, i) => ['blob', Buffer.from(`file ${i} version 0\n`)]);
    let parent: Oid | null = null;
    for (let n = 0; n < 1_500; n++) {
      const changed = Buffer.from(`file ${n % 200} version ${n + 1}\n`);
      files[n % 200] = hashObject('blob', changed);
      const tree = encodeTree(files.map((oid, i) => ({ name: `f${String(i).padStart(3, '0')}`, mode: MODE_FILE, oid })));
      const commit = encodeCommit({ tree: hashObject('tree', tree), parents: parent ? [parent] : [], author: person, committer: person, extraHeaders: [], message: `${n}\n` });
      bodies.push(['blob', changed], ['tree', tree], ['commit', commit]);
      parent = hashObject('commit', commit);
    }
    const writer = new PackWriter(bodies.length);
    const large = Buffer.concat([writer.start(), ...bodies.map(([type, body]) => writer.addObject(type, body).bytes), writer.finish()]);
    const own = new PackChecker({ inlineBytesMax: 0 });
    try {
      const first = await own.check(large, {}, nothing);
      if (!first.ok) throw new Error(first.message);
      const order: string[] = [];
      const lists = first.commitObjects().then((made) => {
        order.push('lists');
        return made;
      });
      const next = own.check(thinPack().pack, {}, lookups).then((result) => {
        order.push('next pack');
        return result;
      });
      const [made, checked] = await Promise.all([lists, next]);
      expect(made.size).toBe(1_500);
      expect(checked.ok).toBe(true);
      expect(order).toEqual(['next pack', 'lists']);
    } finally {
      await own.close();
    }
  });

  it("refuses a link to a stored object of another type, asking this thread for the stored object's type", async () => {
    // A directory entry naming the stored blob, and a file entry naming it as it is.
    const tree = encodeTree([
      { name: 'd', mode: MODE_TREE, oid: baseOid },
      { name: 'f', mode: MODE_FILE, oid: baseOid },
    ]);
    const writer = new PackWriter(1);
    const pack = Buffer.concat([writer.start(), writer.addObject('tree', tree).bytes, writer.finish()]);
    const typed: AsyncStoreLookups = { ...lookups, types: async (oids) => oids.map((oid) => store.get(oid.toString('hex'))?.type) };
    const refused = await checker.check(pack, {}, typed);
    expect(refused).toEqual({ ok: false, message: `object ${baseOid.toString('hex')}: expected type tree, found blob` });
    // A store that says nothing of types is asked whether it holds the object, as before.
    expect((await checker.check(pack, {}, lookups)).ok).toBe(true);
    // Named as what it is, it passes.
    const good = encodeTree([{ name: 'f', mode: MODE_FILE, oid: baseOid }]);
    const goodWriter = new PackWriter(1);
    expect((await checker.check(Buffer.concat([goodWriter.start(), goodWriter.addObject('tree', good).bytes, goodWriter.finish()]), {}, typed)).ok).toBe(true);
  });

  it('runs concurrent checks one after another on the one worker', async () => {
    const { pack, ids } = thinPack();
    const results = await Promise.all(Array.from({ length: 5 }, () => checker.check(pack, {}, lookups)));
    for (const result of results) expect(result.ok && result.objects.map((object) => object.oid.toString('hex'))).toEqual(ids);
  });

  it('starts its worker ahead of a pack when asked (prepare), once, and checks on it', async () => {
    const prepared = new PackChecker({ inlineBytesMax: 0 });
    try {
      expect(prepared.started).toBe(false);
      prepared.prepare();
      expect(prepared.started).toBe(true);
      prepared.prepare();
      const { pack, ids } = thinPack();
      const result = await prepared.check(pack, {}, lookups);
      expect(result.ok && result.objects.map((object) => object.oid.toString('hex'))).toEqual(ids);
    } finally {
      await prepared.close();
    }
    prepared.prepare();
    expect(prepared.started).toBe(false);
  });
});

describe('PackChecker inline, over an asynchronous store', () => {
  const inlineChecker = new PackChecker({ inlineBytesMax: 1024 * 1024 });
  afterAll(() => inlineChecker.close());

  /** Counts the store's calls (batches), not the ids in them. */
  function counting(source: AsyncStoreLookups): { lookups: AsyncStoreLookups; calls: () => number } {
    let calls = 0;
    return {
      lookups: {
        objects: (oids) => (calls++, source.objects(oids)),
        has: (oids) => (calls++, source.has(oids)),
      },
      calls: () => calls,
    };
  }

  it('gives what the synchronous check gives, asking the store in a pass of batches', async () => {
    const { pack, ids, tree, absent } = thinPack();
    const reference = checkReceivedPack(pack, {}, syncLookups);
    const { lookups: counted, calls } = counting(lookups);
    asked.length = 0;
    const checked = await inlineChecker.check(pack, {}, counted);
    expect(inlineChecker.started).toBe(false);
    expect(checked.ok && reference.ok).toBe(true);
    if (!checked.ok || !reference.ok) return;
    expect(checked.objects.map((object) => object.oid.toString('hex'))).toEqual(ids);
    expect([...checked.gaps]).toEqual([[tree, { missing: absent, shallow: false }]]);
    expect(checked.objects.map((object) => Buffer.from(object.body))).toEqual(reference.objects.map((object) => Buffer.from(object.body)));
    // The thin base, then (once the pack parsed) the gap's question, each in one batch.
    expect(asked.sort()).toEqual([`has ${absent}`, `object ${baseOid.toString('hex')}`]);
    expect(calls()).toBe(2);
    expect((await checked.commitObjects()).size).toBe(0);
  });

  it('reads a stored tree the depth check walks a level per batch, not a tree per question', async () => {
    // A stored tree five levels deep, three subtrees under every directory: 121 trees.
    const stored = new Map<string, ExternalObject>();
    const storeTree = (body: Buffer) => {
      const oid = hashObject('tree', body);
      stored.set(oid.toString('hex'), { type: 'tree', body });
      return oid;
    };
    let level = Array.from({ length: 81 }, (_, i) => storeTree(encodeTree([{ name: `file-${i}`, mode: MODE_FILE, oid: baseOid }])));
    while (level.length > 1) {
      const above: Oid[] = [];
      for (let i = 0; i < level.length; i += 3) above.push(storeTree(encodeTree(level.slice(i, i + 3).map((oid, k) => ({ name: `d${k}`, mode: MODE_TREE, oid })))));
      level = above;
    }
    const treesStored = stored.size;
    const top = level[0];
    const pushedTree = encodeTree([{ name: 'old', mode: MODE_TREE, oid: top }, { name: 'new', mode: MODE_FILE, oid: baseOid }]);
    const writer = new PackWriter(1);
    const pack = Buffer.concat([writer.start(), writer.addObject('tree', pushedTree).bytes, writer.finish()]);
    const source: AsyncStoreLookups = {
      objects: async (oids) => oids.map((oid) => stored.get(oid.toString('hex'))),
      has: async (oids) => oids.map((oid) => stored.has(oid.toString('hex')) || oid.equals(baseOid)),
    };
    const { lookups: counted, calls } = counting(source);
    const checked = await inlineChecker.check(pack, {}, counted);
    expect(checked).toMatchObject({ ok: true });
    if (!checked.ok) return;
    expect(checked.gaps.size).toBe(0);
    // The has() questions and the top tree in pass one, then one batch per level below it.
    expect(treesStored).toBe(121);
    expect(calls()).toBeLessThanOrEqual(1 + 5);
  });

  it('gives up after its passes (null), so a caller can check on the worker instead', async () => {
    const { pack } = thinPack();
    // The thin base in the first pass, the gap's question in the second, every answer in the third.
    expect(await checkReceivedPackWithAsyncLookups(pack, {}, lookups, new Set(), 2)).toBeNull();
    expect(await checkReceivedPackWithAsyncLookups(pack, {}, lookups, new Set(), 3)).toMatchObject({ ok: true });
  });

  it('refuses a pack whose base nobody has and a store that fails, as results', async () => {
    const { pack } = thinPack();
    expect(await inlineChecker.check(pack, {}, nothing)).toMatchObject({ ok: false, message: expect.stringMatching(/could not be resolved/) });
    const failing: AsyncStoreLookups = { objects: async () => Promise.reject(new Error('storage is gone')), has: async () => Promise.reject(new Error('storage is gone')) };
    await expect(inlineChecker.check(pack, {}, failing)).rejects.toThrow(/storage is gone/);
  });
});
