/**
 * Micro benchmarks behind two dependency choices, over the same ~3.4 KB source files the scenario
 * benchmark imports:
 *   - object ids: node:crypto SHA-1 vs @noble/hashes sha1, each over "blob <size>\0" + body as
 *     src/git/oid.ts hashObject does;
 *   - compression: node:zlib deflateSync/inflateSync vs pako, at zlib's default level (6, what git
 *     uses for packs) and at level 1 (git's default for loose objects, core.looseCompression).
 *
 * Run alone with `npx tsx bench/hash.bench.ts [--quick]`; bench/run.ts runs it too and puts the
 * table in bench/RESULTS.md.
 */
import { createHash } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';
import { pathToFileURL } from 'node:url';
import { sha1 as nobleSha1 } from '@noble/hashes/legacy.js';
import * as pako from 'pako';
import { Bench } from 'tinybench';
import { SourceTree } from '../fixtures/sourceTree.js';
import { hashObject, objectHeader } from '../src/git/oid.js';
import { summariseTask } from './measure.js';

const SAMPLE_FILES = 256;

export interface MicroResult {
  name: string;
  /** Median microseconds per 3.4 KB object. */
  medianUs: number;
  samples: number;
}

export interface MicroComparison {
  what: string;
  ours: MicroResult;
  other: MicroResult;
}

export async function runHashBench(quick: boolean): Promise<{ comparisons: MicroComparison[]; meanBytes: number }> {
  const tree = new SourceTree({ files: SAMPLE_FILES });
  const bodies = [...tree.files()].map((file) => file.content);
  const meanBytes = Math.round(bodies.reduce((sum, body) => sum + body.length, 0) / bodies.length);
  const deflated6 = bodies.map((body) => deflateSync(body));
  let index = 0;
  const nextIndex = () => (index = (index + 1) % bodies.length);
  const sink: unknown[] = [];
  const keep = (value: unknown) => {
    sink[index] = value;
  };
  const suite = new Bench({ time: quick ? 300 : 1_000, warmupTime: 100 });
  suite
    .add('node:crypto sha1 (hashObject)', () => keep(hashObject('blob', bodies[nextIndex()])))
    .add('@noble/hashes sha1', () => {
      const body = bodies[nextIndex()];
      keep(nobleSha1.create().update(objectHeader('blob', body.length)).update(body).digest());
    })
    .add('node:zlib deflateSync level 6', () => keep(deflateSync(bodies[nextIndex()])))
    .add('pako.deflate level 6', () => keep(pako.deflate(bodies[nextIndex()])))
    .add('node:zlib deflateSync level 1', () => keep(deflateSync(bodies[nextIndex()], { level: 1 })))
    .add('pako.deflate level 1', () => keep(pako.deflate(bodies[nextIndex()], { level: 1 })))
    .add('node:zlib inflateSync', () => keep(inflateSync(deflated6[nextIndex()])))
    .add('pako.inflate', () => keep(pako.inflate(deflated6[nextIndex()])));
  checkAgreement(bodies[0], deflated6[0]);
  await suite.run();
  const results = suite.tasks.map((task): MicroResult => {
    const summary = summariseTask(task);
    return { name: task.name, medianUs: summary.medianMs * 1000, samples: summary.n };
  });
  const byName = new Map(results.map((r) => [r.name, r]));
  const pair = (what: string, ours: string, other: string): MicroComparison => ({ what, ours: byName.get(ours)!, other: byName.get(other)! });
  return {
    meanBytes,
    comparisons: [
      pair('SHA-1 object id', 'node:crypto sha1 (hashObject)', '@noble/hashes sha1'),
      pair('deflate, level 6', 'node:zlib deflateSync level 6', 'pako.deflate level 6'),
      pair('deflate, level 1', 'node:zlib deflateSync level 1', 'pako.deflate level 1'),
      pair('inflate', 'node:zlib inflateSync', 'pako.inflate'),
    ],
  };
}

/** The two implementations must compute the same thing, or the comparison means nothing. */
function checkAgreement(body: Buffer, deflated: Buffer): void {
  const noble = Buffer.from(nobleSha1.create().update(objectHeader('blob', body.length)).update(body).digest());
  const node = createHash('sha1').update(objectHeader('blob', body.length)).update(body).digest();
  if (!noble.equals(node)) throw new Error('sha1 implementations disagree');
  if (!Buffer.from(pako.inflate(deflated)).equals(body)) throw new Error('pako cannot inflate zlib output');
  if (!inflateSync(pako.deflate(body)).equals(body)) throw new Error('zlib cannot inflate pako output');
}

export function microTable(result: { comparisons: MicroComparison[]; meanBytes: number }): string {
  const perObject = (us: number) => `${us.toFixed(2)} µs`;
  const per100k = (us: number) => `${((us * 100_000) / 1e6).toFixed(2)} s`;
  const lines = [
    `| operation (one object, mean ${result.meanBytes} bytes) | node built-in | per 100k objects | JS library | per 100k objects | library / built-in |`,
    '|---|---|---|---|---|---|',
  ];
  for (const { what, ours, other } of result.comparisons) {
    lines.push(
      `| ${what} | ${perObject(ours.medianUs)} | ${per100k(ours.medianUs)} | ${perObject(other.medianUs)} (${other.name}) | ${per100k(other.medianUs)} | ${(other.medianUs / ours.medianUs).toFixed(1)}× |`,
    );
  }
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await runHashBench(process.argv.includes('--quick'));
  console.log(microTable(result));
}
