/**
 * Case-insensitive matching by simple case folding: each code point matches every code point of its
 * "orbit" (the code points that upper- and lower-casing connect: k, K and the Kelvin sign K; s, S
 * and ſ). Orbits come from the runtime's Unicode tables (one-code-point case mappings only), built
 * once, on first use, over the planes that have cased letters.
 */
import { normaliseRanges, type Ranges } from './ranges.js';

/** Cased letters live below this (the Basic Multilingual and Supplementary Multilingual planes). */
const CASED_PLANES_END = 0x20000;

let orbitTable: { points: Int32Array; orbits: Map<number, number[]> } | null = null;

function orbits(): { points: Int32Array; orbits: Map<number, number[]> } {
  if (orbitTable) return orbitTable;
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    let root = x;
    while (parent.get(root) !== undefined && parent.get(root) !== root) root = parent.get(root)!;
    parent.set(x, root);
    return root;
  };
  const union = (a: number, b: number) => {
    if (!parent.has(a)) parent.set(a, a);
    if (!parent.has(b)) parent.set(b, b);
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(ra, rb);
  };
  for (let c = 0; c < CASED_PLANES_END; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const text = String.fromCodePoint(c);
    for (const mapped of [text.toLowerCase(), text.toUpperCase()]) {
      const code = mapped.codePointAt(0)!;
      if (mapped.length === String.fromCodePoint(code).length && code !== c) union(c, code);
    }
  }
  const groups = new Map<number, number[]>();
  for (const c of parent.keys()) {
    const root = find(c);
    const group = groups.get(root);
    if (group) group.push(c);
    else groups.set(root, [c]);
  }
  const byPoint = new Map<number, number[]>();
  for (const group of groups.values()) {
    group.sort((a, b) => a - b);
    for (const c of group) byPoint.set(c, group);
  }
  orbitTable = { points: Int32Array.from([...byPoint.keys()].sort((a, b) => a - b)), orbits: byPoint };
  return orbitTable;
}

/** The ranges with every member's case variants added. */
export function foldRanges(ranges: Ranges): Ranges {
  const { points, orbits: byPoint } = orbits();
  const out: Ranges = [...ranges];
  for (const [lo, hi] of ranges) {
    // The cased code points inside [lo, hi]: a binary search for the first, then a scan.
    let left = 0;
    let right = points.length;
    while (left < right) {
      const mid = (left + right) >> 1;
      if (points[mid] < lo) left = mid + 1;
      else right = mid;
    }
    for (let i = left; i < points.length && points[i] <= hi; i++) {
      for (const variant of byPoint.get(points[i])!) out.push([variant, variant]);
    }
  }
  return normaliseRanges(out);
}
