import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodePktLines,
  decodeSideband,
  encodeDelim,
  encodeFlush,
  encodePacket,
  encodePktLine,
  encodePktText,
  encodeResponseEnd,
  encodeSideband,
  encodeSidebandPieces,
  parsePktLines,
  PKT_LINE_BYTES_MAX,
  PKT_PAYLOAD_BYTES_MAX,
  PktLineError,
  PktLineReader,
  pktLineText,
  SIDEBAND_64K_DATA_BYTES_MAX,
  SIDEBAND_DATA,
  SIDEBAND_ERROR,
  SIDEBAND_PROGRESS,
  type PktLine,
} from '../../src/git/pktline.js';

const ascii = (text: string) => Buffer.from(text, 'latin1');

describe('encoding', () => {
  it('matches the examples of gitprotocol-common', () => {
    expect(encodePktLine('a\n').toString()).toBe('0006a\n');
    expect(encodePktLine('a').toString()).toBe('0005a');
    expect(encodePktLine('foobar\n').toString()).toBe('000bfoobar\n');
    expect(encodePktLine('').toString()).toBe('0004');
    expect(encodePktText('foobar').toString()).toBe('000bfoobar\n');
    expect(encodeFlush().toString()).toBe('0000');
    expect(encodeDelim().toString()).toBe('0001');
    expect(encodeResponseEnd().toString()).toBe('0002');
  });

  it('writes the largest payload and refuses one byte more', () => {
    const largest = encodePktLine(Buffer.alloc(PKT_PAYLOAD_BYTES_MAX, 0x61));
    expect(largest.length).toBe(PKT_LINE_BYTES_MAX);
    expect(largest.subarray(0, 4).toString()).toBe('fff0');
    expect(() => encodePktLine(Buffer.alloc(PKT_PAYLOAD_BYTES_MAX + 1))).toThrow(PktLineError);
  });

  it('round-trips every packet kind, binary payloads included', () => {
    const packets: PktLine[] = [
      { kind: 'data', payload: ascii('want 0123\n') },
      { kind: 'delim' },
      { kind: 'data', payload: Buffer.from([0, 1, 2, 255, 10]) },
      { kind: 'data', payload: Buffer.alloc(0) },
      { kind: 'flush' },
      { kind: 'response-end' },
    ];
    const bytes = Buffer.concat(packets.map(encodePacket));
    expect(decodePktLines(bytes)).toEqual(packets);
    expect(pktLineText(ascii('hello\n'))).toBe('hello');
    expect(pktLineText(ascii('hello'))).toBe('hello');
  });
});

describe('decoding malformed input', () => {
  const cases: Array<[string, string]> = [
    ['length 0003', '0003'],
    ['length 0003 with payload', '0003abc'],
    ['a length over 65520', 'fff1'],
    ['the largest 4-digit length', 'ffff'],
    ['non-hex digits', '00g4'],
    ['a space in the length', ' 004'],
    ['a sign in the length', '-004'],
    ['a length with 0x', '0x04'],
  ];
  for (const [label, text] of cases) {
    it(`refuses ${label}`, () => {
      expect(() => decodePktLines(ascii(text))).toThrow(PktLineError);
      const reader = new PktLineReader();
      reader.push(ascii(text));
      expect(() => reader.read()).toThrow(PktLineError);
    });
  }

  it('accepts the largest length and upper-case hex, as git does', () => {
    const payload = Buffer.alloc(PKT_PAYLOAD_BYTES_MAX, 0x62);
    const bytes = Buffer.concat([ascii('FFF0'), payload]);
    expect(decodePktLines(bytes)).toEqual([{ kind: 'data', payload }]);
  });

  it('refuses truncated streams: short length, short payload', () => {
    for (const text of ['0', '00', '000', '0009abc', '000babcdef', '0006a\n0005']) {
      expect(() => decodePktLines(ascii(text)), text).toThrow(PktLineError);
      const reader = new PktLineReader();
      reader.push(ascii(text));
      reader.readAll();
      expect(() => reader.end(), text).toThrow(/truncated/);
    }
  });

  it('parsePktLines reports how much it consumed and leaves a partial packet', () => {
    const bytes = ascii('0006a\n00000009abc');
    const { packets, bytesConsumed } = parsePktLines(bytes);
    expect(packets).toEqual([{ kind: 'data', payload: ascii('a\n') }, { kind: 'flush' }]);
    expect(bytesConsumed).toBe(10);
  });
});

describe('PktLineReader', () => {
  it('decodes a stream fed one byte at a time', () => {
    const packets: PktLine[] = [
      { kind: 'data', payload: ascii('command=fetch\n') },
      { kind: 'delim' },
      { kind: 'data', payload: Buffer.alloc(300, 7) },
      { kind: 'flush' },
    ];
    const bytes = Buffer.concat(packets.map(encodePacket));
    const reader = new PktLineReader();
    const seen: PktLine[] = [];
    for (const byte of bytes) {
      reader.push(Buffer.from([byte]));
      seen.push(...reader.readAll());
    }
    reader.end();
    expect(seen).toEqual(packets);
    expect(reader.bufferedBytes).toBe(0);
  });

  it('hands over unframed bytes that follow the packets (a pack after commands)', () => {
    const reader = new PktLineReader();
    reader.push(Buffer.concat([encodePktLine('old new ref\n'), encodeFlush(), ascii('PACK....')]));
    expect(reader.read()).toEqual({ kind: 'data', payload: ascii('old new ref\n') });
    expect(reader.read()).toEqual({ kind: 'flush' });
    expect(reader.takeRemainder().toString()).toBe('PACK....');
  });

  it('refuses data after end()', () => {
    const reader = new PktLineReader();
    reader.end();
    expect(() => reader.push(ascii('0000'))).toThrow(PktLineError);
  });
});

describe('side-band-64k', () => {
  it('splits data into packets of at most 65515 bytes and reassembles it', () => {
    const data = Buffer.alloc(SIDEBAND_64K_DATA_BYTES_MAX * 2 + 10);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    const packets = encodeSideband(SIDEBAND_DATA, data);
    expect(packets.map((p) => p.length)).toEqual([PKT_LINE_BYTES_MAX, PKT_LINE_BYTES_MAX, 4 + 1 + 10]);
    const decoded = decodePktLines(Buffer.concat(packets)).map((packet) => {
      if (packet.kind !== 'data') throw new Error('expected data');
      return decodeSideband(packet.payload);
    });
    expect(decoded.every((d) => d.channel === SIDEBAND_DATA)).toBe(true);
    expect(Buffer.concat(decoded.map((d) => d.data)).equals(data)).toBe(true);
  });

  it('frames data given in pieces exactly as encodeSideband frames the joined data', () => {
    const data = Buffer.alloc(SIDEBAND_64K_DATA_BYTES_MAX * 2 + 10);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) % 253;
    // Pieces of uneven sizes, some crossing packet boundaries, one empty.
    const cuts = [0, 1, 500, 500, 65_515, 70_000, 131_030, 131_040, data.length];
    const pieces = cuts.slice(1).map((end, i) => data.subarray(cuts[i], end));
    for (const max of [SIDEBAND_64K_DATA_BYTES_MAX, 995, 1]) {
      const framed = encodeSidebandPieces(SIDEBAND_DATA, pieces, data.length, max);
      expect(framed.equals(Buffer.concat(encodeSideband(SIDEBAND_DATA, data, max)))).toBe(true);
    }
    expect(encodeSidebandPieces(SIDEBAND_DATA, [], 0).length).toBe(0);
    expect(() => encodeSidebandPieces(SIDEBAND_DATA, pieces, data.length + 1)).toThrow(PktLineError);
  });

  it('frames progress and error channels, and the old 1000-byte side-band', () => {
    expect(encodeSideband(SIDEBAND_PROGRESS, 'Counting\r')[0].toString('latin1')).toBe('000e\x02Counting\r');
    expect(encodeSideband(SIDEBAND_ERROR, 'bad')[0].toString('latin1')).toBe('0008\x03bad');
    expect(encodeSideband(SIDEBAND_DATA, Buffer.alloc(2000), 995).map((p) => p.length)).toEqual([1000, 1000, 15]);
    expect(() => encodeSideband(SIDEBAND_DATA, 'x', SIDEBAND_64K_DATA_BYTES_MAX + 1)).toThrow(PktLineError);
    expect(() => encodeSideband(4 as 1, 'x')).toThrow(PktLineError);
    expect(() => decodeSideband(Buffer.from([4, 1]))).toThrow(PktLineError);
    expect(() => decodeSideband(Buffer.alloc(0))).toThrow(PktLineError);
  });
});

describe('fuzzing', () => {
  const packetArbitrary: fc.Arbitrary<PktLine> = fc.oneof(
    fc.uint8Array({ maxLength: 200 }).map((bytes): PktLine => ({ kind: 'data', payload: Buffer.from(bytes) })),
    fc.constant<PktLine>({ kind: 'flush' }),
    fc.constant<PktLine>({ kind: 'delim' }),
    fc.constant<PktLine>({ kind: 'response-end' }),
  );

  it('round-trips any packet sequence through any chunking', () => {
    fc.assert(
      fc.property(fc.array(packetArbitrary, { maxLength: 30 }), fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1 }), (packets, cuts) => {
        const bytes = Buffer.concat(packets.map(encodePacket));
        const reader = new PktLineReader();
        const seen: PktLine[] = [];
        let at = 0;
        for (let i = 0; at < bytes.length; i++) {
          const size = cuts[i % cuts.length];
          reader.push(bytes.subarray(at, at + size));
          at += size;
          seen.push(...reader.readAll());
        }
        reader.end();
        expect(seen).toEqual(packets);
      }),
    );
  });

  /** Valid and hostile length prefixes, spliced into random bytes. */
  const hostileBytes = fc
    .array(
      fc.oneof(
        fc.uint8Array({ maxLength: 40 }),
        fc.constantFrom('0000', '0001', '0002', '0003', '0004', 'fff0', 'fff1', 'ffff', 'FFF0', '00zz', '000a', '0005x').map(ascii),
      ),
      { maxLength: 20 },
    )
    .map((parts) => Buffer.concat(parts));

  it('never throws anything but PktLineError and always stops', () => {
    fc.assert(
      fc.property(hostileBytes, (bytes) => {
        for (const decode of [
          () => decodePktLines(bytes),
          () => parsePktLines(bytes),
          () => {
            const reader = new PktLineReader();
            reader.push(bytes);
            // Each read consumes at least 4 bytes, so this loop ends.
            for (let i = 0; i <= bytes.length; i++) if (!reader.read()) break;
            reader.end();
          },
        ]) {
          try {
            decode();
          } catch (error) {
            expect(error).toBeInstanceOf(PktLineError);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});
