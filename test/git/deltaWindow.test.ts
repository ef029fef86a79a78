/**
 * The windowed delta search (src/git/deltaWindow.ts) in-process: what it finds across calls and
 * names, that every delta rebuilds its object, the depth limit, the bounds on memory and work, and
 * that unrelated content of one name stays whole. The forms it makes reach git through the server
 * in test/interop/deltaPacks.test.ts.
 */
import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { applyDelta } from '../../src/git/delta.js';
import { compareForWindow, DeltaWindow, NAMED_IN_CALL, type WindowForm, type WindowObject } from '../../src/git/deltaWindow.js';
import { packNameHash } from '../../src/git/nameHash.js';
import { hashObject, type ObjectType } from '../../src/git/oid.js';

const LEVEL = 6;

/** Deterministic bytes without structure (SHA-256 in counter mode): nothing in them matches anything else. */
function noise(bytes: number, seed: string): Buffer {
  const blocks: Buffer[] = [];
  for (let i = 0; i * 32 < bytes; i++) blocks.push(createHash('sha256').update(`${seed}:${i}`).digest());
  return Buffer.concat(blocks).subarray(0, bytes);
}

/** A source file of `lines` lines, different for every seed. */
function source(lines: number, seed: string): string {
  return Array.from({ length: lines }, (_, line) => `export const value${line} = '${noise(12, `${seed}/${line}`).toString('hex')}';`).join('\n');
}

function object(body: string | Buffer, path: string, options: { type?: ObjectType; project?: number; named?: WindowObject['named']; whole?: boolean } = {}): WindowObject {
  const bytes = Buffer.from(body);
  const type = options.type ?? 'blob';
  return { project: options.project ?? 1, oid: hashObject(type, bytes), type, nameHash: packNameHash(path), body: bytes, named: options.named ?? null, whole: options.whole ?? false };
}

/** Rebuilds each object from its form, following its delta chain through `known` (objects by hex id). */
function rebuild(form: WindowForm, known: Map<string, { body: Buffer; form: WindowForm }>): Buffer {
  const inflated = inflateSync(form.deflated);
  if (!form.delta) return inflated;
  const base = known.get(Buffer.from(form.delta.base).toString('hex'));
  expect(base, 'a delta names an object the search was given').toBeDefined();
  expect(inflated.length).toBe(form.delta.bytes);
  return applyDelta(rebuild(base!.form, known), inflated);
}

/**
 * A window and every form it made so far: runs objects through it in batches (sorted as the deflate
 * cache sorts them) and checks that each form rebuilds its object.
 */
function harness(options: ConstructorParameters<typeof DeltaWindow>[0]) {
  const window = new DeltaWindow(options);
  const known = new Map<string, { body: Buffer; form: WindowForm }>();
  const run = (batches: WindowObject[][]): Array<{ object: WindowObject; form: WindowForm }> => {
    const out: Array<{ object: WindowObject; form: WindowForm }> = [];
    for (const batch of batches) {
      const sorted = [...batch].sort(compareForWindow);
      const forms = window.formsOf(sorted);
      sorted.forEach((object, index) => {
        known.set(Buffer.from(object.oid).toString('hex'), { body: Buffer.from(object.body), form: forms[index] });
        out.push({ object, form: forms[index] });
      });
    }
    for (const { object, form } of out) expect(rebuild(form, known).equals(Buffer.from(object.body))).toBe(true);
    return out;
  };
  return { window, run };
}

const hexOf = (oid: Uint8Array) => Buffer.from(oid).toString('hex');

describe('DeltaWindow', () => {
  it('finds a near-copy written in a later call, at another path, and its delta rebuilds it', () => {
    const { run } = harness({ depthMax: 50, level: LEVEL });
    const original = source(200, 'original');
    const copy = `// copied\n${original.replace('value17 =', 'renamed17 =')}\n`;
    const [first, second] = run([[object(original, 'src/widgets/button.ts')], [object(copy, 'lib/forms/button.ts')]]);
    expect(first.form.delta).toBeNull();
    expect(second.form.delta).not.toBeNull();
    expect(hexOf(second.form.delta!.base)).toBe(hexOf(first.object.oid));
    expect(second.form.delta!.depth).toBe(1);
    expect(second.form.deflated.length).toBeLessThan(200);
  });

  it('tries an object against the neighbours of its name first, however many objects came between', () => {
    const { window, run } = harness({ depthMax: 50, level: LEVEL, window: 3 });
    const original = source(150, 'kept');
    const others = Array.from({ length: 40 }, (_, index) => object(source(150, `other ${index}`), `dir${index}/module${index}.py`));
    const found = run([[object(original, 'a/config.yaml')], others, [object(`${original}\nextra: true\n`, 'b/config.yaml')]]);
    const last = found[found.length - 1];
    expect(hexOf(last.form.delta!.base)).toBe(hexOf(found[0].object.oid));
    // Unrelated files of other names were not worth a delta; each made at most `window` tries.
    expect(found.slice(1, -1).every(({ form }) => form.delta === null)).toBe(true);
    expect(window.counts.tries).toBeLessThanOrEqual(3 * found.length);
  });

  it('tries the named base first and keeps its delta', () => {
    const { window, run } = harness({ depthMax: 50, level: LEVEL });
    const before = source(120, 'named');
    const after = before.replace('value5 =', 'value5b =');
    const base = object(before, 'f.ts');
    run([[base]]);
    const tries = window.counts.tries;
    const [edited] = run([[object(after, 'f.ts', { named: { oid: base.oid, body: base.body, depth: 0 } })]]);
    expect(hexOf(edited.form.delta!.base)).toBe(hexOf(base.oid));
    expect(window.counts.tries).toBe(tries);
  });

  it('takes a named base given earlier in the same call at the depth it got there, and none given later', () => {
    const window = new DeltaWindow({ depthMax: 50, level: LEVEL });
    const first = object(source(120, 'in call'), 'g.ts');
    const second = object(String(first.body).replace('value3 =', 'value3b ='), 'g.ts', { named: { oid: first.oid, body: first.body, depth: NAMED_IN_CALL } });
    const third = object(String(second.body).replace('value9 =', 'value9b ='), 'g.ts', { named: { oid: second.oid, body: second.body, depth: NAMED_IN_CALL } });
    const [, secondForm, thirdForm] = window.formsOf([first, second, third]);
    expect([hexOf(secondForm.delta!.base), secondForm.delta!.depth]).toEqual([hexOf(first.oid), 1]);
    expect([hexOf(thirdForm.delta!.base), thirdForm.delta!.depth]).toEqual([hexOf(second.oid), 2]);
    // Two that name each other: the first met has no base yet (it is searched, and finds none), the second takes it.
    const a = object(source(120, 'cycle'), 'h.ts');
    const b = object(String(a.body).replace('value1 =', 'value1b ='), 'h.ts');
    a.named = { oid: b.oid, body: b.body, depth: NAMED_IN_CALL };
    b.named = { oid: a.oid, body: a.body, depth: NAMED_IN_CALL };
    const [aForm, bForm] = window.formsOf([a, b]);
    expect(aForm.delta).toBeNull();
    expect([hexOf(bForm.delta!.base), bForm.delta!.depth]).toEqual([hexOf(a.oid), 1]);
  });

  it('keeps every chain within depthMax over a long line of similar files, and rebuilds each', () => {
    for (const depthMax of [5, 50]) {
      const { run } = harness({ depthMax, level: LEVEL });
      let text = source(100, 'chain');
      const batches: WindowObject[][] = [];
      for (let round = 0; round < 150; round++) {
        text = `${text}\n// line added in round ${round}`;
        batches.push([object(text, `copies/c${round}/file.ts`)]);
      }
      const found = run(batches);
      const depths = found.map(({ form }) => form.delta?.depth ?? 0);
      expect(Math.max(...depths)).toBeLessThanOrEqual(depthMax);
      // The chains did grow: most files are deltas, some on deltas.
      expect(depths.filter((depth) => depth > 0).length).toBeGreaterThan(140);
      expect(Math.max(...depths)).toBeGreaterThan(1);
    }
  });

  it('holds its pool within bytesMax and entriesMax, and neither searches nor keeps objects over objectBytesMax', () => {
    const bytesMax = 1024 * 1024;
    const { window, run } = harness({ depthMax: 50, level: LEVEL, bytesMax, entriesMax: 20, objectBytesMax: 300 * 1024 });
    const big = noise(250 * 1024, 'big');
    for (let round = 0; round < 30; round++) {
      const similar = Buffer.concat([Buffer.from(`version ${round}\n`), big]);
      run([[object(similar, `big/${round}.bin`), object(`small ${round} `.repeat(20), `small/${round}.txt`)]]);
      expect(window.bytes).toBeLessThanOrEqual(bytesMax);
      expect(window.entries).toBeLessThanOrEqual(20);
    }
    expect(window.counts.found).toBeGreaterThan(20);
    const tries = window.counts.tries;
    const huge = noise(400 * 1024, 'huge');
    const found = run([[object(huge, 'huge/a.bin')], [object(Buffer.concat([huge, Buffer.from('!')]), 'huge/b.bin')]]);
    expect(found.map(({ form }) => form.delta)).toEqual([null, null]);
    expect(window.counts.tries).toBe(tries);
  });

  it('stores unrelated files of one name whole, after at most `window` tries each, and scans about their size per try', () => {
    const { window, run } = harness({ depthMax: 50, level: LEVEL });
    const objects = Array.from({ length: 60 }, (_, index) => object(noise(8 * 1024 + index, `unrelated ${index}`), `same/name.bin`));
    const found = run(objects.map((entry) => [entry]));
    expect(found.every(({ form }) => form.delta === null)).toBe(true);
    expect(window.counts.tries).toBeLessThanOrEqual(10 * objects.length);
    const bytes = objects.reduce((sum, entry) => sum + entry.body.length, 0);
    // Each try scans at most its target, each base is indexed once: linear in what was written.
    expect(window.counts.scannedBytes).toBeLessThanOrEqual(11 * bytes);
  });

  it('stops searching within a call once scanBytesMax is spent, and deflates the rest whole', () => {
    const { run } = harness({ depthMax: 50, level: LEVEL, scanBytesMax: 64 * 1024 });
    const text = source(300, 'budget');
    const batch = Array.from({ length: 12 }, (_, index) => object(`${text}\n// copy ${index}`, `budget/${index}.ts`));
    const found = run([batch]);
    const deltas = found.filter(({ form }) => form.delta !== null).length;
    expect(deltas).toBeGreaterThan(0);
    expect(deltas).toBeLessThan(batch.length - 1);
    // A new call has a budget of its own.
    const [next] = run([[object(`${text}\n// one more`, 'budget/next.ts')]]);
    expect(next.form.delta).not.toBeNull();
  });

  it('forgets objects the store refused, never names them again, and keeps projects and types apart', () => {
    const { window, run } = harness({ depthMax: 50, level: LEVEL });
    const text = source(150, 'apart');
    const [refused] = run([[object(text, 'x/a.ts')]]);
    window.forget([{ project: 1, oid: refused.object.oid }]);
    const [again] = run([[object(`${text}\n// more`, 'x/b.ts')]]);
    expect(again.form.delta).toBeNull();
    // Another project, or another type, never serves as a base.
    const [otherProject] = run([[object(`${text}\n// more still`, 'x/c.ts', { project: 2 })]]);
    expect(otherProject.form.delta).toBeNull();
    const [asTree] = run([[object(`${text}\n// yet more`, 'x/d.ts', { type: 'tree' })]]);
    expect(asTree.form.delta).toBeNull();
    const [sameProject] = run([[object(`${text}\n// and more`, 'x/e.ts')]]);
    expect(hexOf(sameProject.form.delta!.base)).toBe(hexOf(again.object.oid));
  });

  it('does not search an object marked whole, and deltifies nothing smaller than 64 bytes', () => {
    const { run } = harness({ depthMax: 50, level: LEVEL });
    const text = source(80, 'whole');
    run([[object(text, 'w/a.ts')]]);
    const [whole] = run([[object(`${text}\n// x`, 'w/b.ts', { whole: true })]]);
    expect(whole.form.delta).toBeNull();
    const [tiny, tinier] = run([[object('a small file, 40 bytes long, about so.', 't/a.txt')], [object('a small file, 40 bytes long, about so!', 't/b.txt')]]);
    expect([tiny.form.delta, tinier.form.delta]).toEqual([null, null]);
  });
});
