import { afterAll, describe, expect, it } from 'vitest';
import { createDelta } from '../../src/git/delta.js';
import { hashObject, type Oid } from '../../src/git/oid.js';
import type { ExternalObject } from '../../src/git/pack.js';
import { PackWriter } from '../../src/git/pack.js';
import { checkReceivedPack, type StoreLookups } from '../../src/git/packCheck.js';
import { PackChecker } from '../../src/service/packChecker.js';

const checker = new PackChecker({ inlineBytesMax: 0 });
afterAll(() => checker.close());

const base = Buffer.from('the base text, which only the receiver has\n'.repeat(20));
const baseOid = hashObject('blob', base);
const store = new Map<string, ExternalObject>([[baseOid.toString('hex'), { type: 'blob', body: base }]]);
const asked: string[] = [];
const lookups: StoreLookups = {
  object: (oid: Oid): ExternalObject | undefined => {
    asked.push(`object ${oid.toString('hex')}`);
    return store.get(oid.toString('hex'));
  },
  has: (oid: Oid) => {
    asked.push(`has ${oid.toString('hex')}`);
    return store.has(oid.toString('hex'));
  },
};
const nothing: StoreLookups = { object: () => undefined, has: () => false };

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
    const inline = checkReceivedPack(pack, {}, lookups);
    asked.length = 0;
    const threaded = await checker.check(pack, {}, lookups);
    expect(threaded.ok).toBe(true);
    expect(inline.ok).toBe(true);
    if (!threaded.ok || !inline.ok) return;
    expect(threaded.objects.map((object) => object.oid.toString('hex'))).toEqual(ids);
    expect(threaded.gaps).toEqual(inline.gaps);
    expect([...threaded.gaps]).toEqual([[tree, { missing: absent, shallow: false }]]);
    expect(asked).toEqual([`object ${baseOid.toString('hex')}`, `has ${absent}`]);
    // Blobs carrying their entry come without their body, with its length; the body is rebuilt
    // from the pack on first read (the thin delta's base asked of the store again) and kept.
    const blobs = threaded.objects.filter((object) => object.type === 'blob' && object.packed);
    expect(blobs.length).toBeGreaterThan(0);
    for (const blob of blobs) expect(Object.getOwnPropertyDescriptor(blob, 'body')?.get).toBeDefined();
    // The inline check drops blob bodies too (rebuilt on read, its thin base asked of the store).
    const inlineObjects = inline.objects.map(({ type, body, oid, offset, deltaDepth }) => ({ type, body: Buffer.from(body), oid: Buffer.from(oid), offset, deltaDepth }));
    asked.length = 0;
    expect(threaded.objects.map(({ type, body, oid, offset, deltaDepth }) => ({ type, body: Buffer.from(body), oid: Buffer.from(oid), offset, deltaDepth }))).toEqual(inlineObjects);
    expect(blobs.map((blob) => blob.bodyBytes)).toEqual(blobs.map((blob) => blob.body.length));
    expect(asked).toEqual([`object ${baseOid.toString('hex')}`]);
  });

  it('refuses a pack whose base nobody has, a corrupt pack and an object fsck refuses, as results', async () => {
    const { pack } = thinPack();
    const missing = await checker.check(pack, {}, nothing);
    expect(missing).toMatchObject({ ok: false });
    const gone = () => {
      throw new Error('storage is gone');
    };
    const throwing = await checker.check(pack, {}, { object: gone, has: gone });
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
