/** The content fingerprint git's rename detection scores similarity with (diffcore-delta.c). */

/** diffcore-delta.c: HASHBASE, the modulus of span hashes; spans end at LF or after 64 bytes. */
const SPAN_HASH_BASE = 107927;
const SPAN_BYTES_MAX = 64;
const LF = 0x0a;
const CR = 0x0d;

/**
 * hash_chars(): cut the content into spans ending at LF or after 64 bytes, hash each, and count
 * the bytes per hash. For text, CR before LF is ignored. A final span without LF and shorter
 * than 64 bytes is left out, as git leaves it out.
 */
export function hashSpans(content: Buffer): Map<number, number> {
  const text = content.subarray(0, Math.min(content.length, 8000)).indexOf(0) < 0;
  const spans = new Map<number, number>();
  let accum1 = 0;
  let accum2 = 0;
  let n = 0;
  for (let i = 0; i < content.length; i++) {
    const c = content[i];
    if (text && c === CR && i + 1 < content.length && content[i + 1] === LF) continue;
    const old1 = accum1;
    accum1 = ((accum1 << 7) ^ (accum2 >>> 25)) >>> 0;
    accum2 = ((accum2 << 7) ^ (old1 >>> 25)) >>> 0;
    accum1 = (accum1 + c) >>> 0;
    if (++n < SPAN_BYTES_MAX && c !== LF) continue;
    const hash = ((accum1 + Math.imul(accum2, 0x61)) >>> 0) % SPAN_HASH_BASE;
    spans.set(hash, (spans.get(hash) ?? 0) + n);
    n = 0;
    accum1 = 0;
    accum2 = 0;
  }
  return spans;
}
