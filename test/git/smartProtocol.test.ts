import { describe, expect, it } from 'vitest';
import { decodePktLineAt, decodePktLines, encodeDelim, encodeFlush, encodePktLine, type PktLine } from '../../src/git/pktline.js';
import {
  INFINITE_DEPTH,
  deepens,
  parsePushCommands,
  PUSH_OPTION_BYTES_MAX,
  PUSH_OPTIONS_MAX,
  parseUploadRequestV0,
  parseV2Command,
  parseV2FetchArgs,
  ProtocolError,
  UPLOAD_PACK_CAPABILITIES_V0,
} from '../../src/git/smartProtocol.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

function packets(...lines: Array<string | 'flush' | 'delim'>): PktLine[] {
  return decodePktLines(Buffer.concat(lines.map((line) => (line === 'flush' ? encodeFlush() : line === 'delim' ? encodeDelim() : encodePktLine(`${line}\n`)))));
}

const v2Fetch = (...args: string[]) => parseV2FetchArgs(parseV2Command(packets('command=fetch', 'delim', ...args, 'flush')).args);

describe('upload-pack requests', () => {
  it('advertises the v0 capabilities for every kind of deepen, as git does', () => {
    expect(UPLOAD_PACK_CAPABILITIES_V0).toEqual(expect.arrayContaining(['shallow', 'deepen-since', 'deepen-not', 'deepen-relative']));
  });

  it('reads shallow lines without a deepen: a shallow client that does not deepen', () => {
    const request = parseUploadRequestV0(packets(`want ${A} multi_ack_detailed`, `shallow ${B}`, 'flush', `have ${A}`, 'flush'));
    expect(request.clientShallows.map((oid) => oid.toString('hex'))).toEqual([B]);
    expect(deepens(request)).toBe(false);
  });

  it("accepts git's infinite depth (fetch --unshallow) and refuses 0, negatives and larger values", () => {
    expect(parseUploadRequestV0(packets(`want ${A}`, `deepen ${INFINITE_DEPTH}`, 'flush')).depth).toBe(2147483647);
    for (const bad of ['0', '-1', '2147483648', '1e3', '', 'x']) {
      expect(() => parseUploadRequestV0(packets(`want ${A}`, `deepen ${bad}`, 'flush'))).toThrow(ProtocolError);
    }
  });

  it('reads deepen-relative from the first want (v0) or as an argument (v2)', () => {
    expect(parseUploadRequestV0(packets(`want ${A} deepen-relative side-band-64k`, 'deepen 2', 'flush')).deepenRelative).toBe(true);
    expect(parseUploadRequestV0(packets(`want ${A}`, 'deepen 2', 'flush')).deepenRelative).toBe(false);
    expect(v2Fetch(`want ${A}`, 'deepen 2', 'deepen-relative', 'done').deepenRelative).toBe(true);
  });

  it('reads deepen-since and deepen-not, in v0 and v2', () => {
    for (const request of [
      parseUploadRequestV0(packets(`want ${A}`, 'deepen-since 1700000000', 'deepen-not side', 'deepen-not refs/heads/x', 'flush')),
      v2Fetch(`want ${A}`, 'deepen-since 1700000000', 'deepen-not side', 'deepen-not refs/heads/x', 'done'),
    ]) {
      expect(request.deepenSince).toBe(1_700_000_000);
      expect(request.deepenNot).toEqual(['side', 'refs/heads/x']);
      expect(deepens(request)).toBe(true);
    }
    // 0 is the epoch (git clone --shallow-since=1970-01-01), which git's upload-pack takes.
    expect(parseUploadRequestV0(packets(`want ${A}`, 'deepen-since 0', 'flush')).deepenSince).toBe(0);
    for (const bad of ['deepen-since -1', 'deepen-since soon', 'deepen-since ', `deepen-since ${'9'.repeat(16)}`, 'deepen-not ', `deepen-not ${'x'.repeat(5000)}`]) {
      expect(() => parseUploadRequestV0(packets(`want ${A}`, bad, 'flush'))).toThrow(ProtocolError);
    }
  });

  it('refuses a depth together with deepen-since or deepen-not, as upload-pack does', () => {
    expect(() => parseUploadRequestV0(packets(`want ${A}`, 'deepen 1', 'deepen-since 5', 'flush'))).toThrow(/cannot be used together/);
    expect(() => v2Fetch(`want ${A}`, 'deepen 1', 'deepen-not main', 'done')).toThrow(/cannot be used together/);
    // Not advertised, so refused as git refuses it, not answered in a framing the client did not get.
    expect(() => v2Fetch(`want ${A}`, 'sideband-all', 'done')).toThrow(/unsupported fetch argument "sideband-all"/);
    expect(v2Fetch(`want ${A}`, 'wait-for-done', 'thin-pack', 'ofs-delta', 'no-progress', 'include-tag').capabilities.has('wait-for-done')).toBe(true);
  });
});

describe('receive-pack requests', () => {
  it('reads the shallow lines send-pack puts before the commands of a push from a shallow clone', () => {
    const body = Buffer.concat([
      encodePktLine(`shallow ${B}\n`),
      encodePktLine(`${'0'.repeat(40)} ${A} refs/heads/main\0report-status side-band-64k\n`),
      encodeFlush(),
      Buffer.from('PACK'),
    ]);
    const push = parsePushCommands(body, decodePktLineAt);
    expect(push.shallow.map((oid) => oid.toString('hex'))).toEqual([B]);
    expect(push.commands).toHaveLength(1);
    expect([...push.capabilities]).toEqual(['report-status', 'side-band-64k']);
    expect(body.subarray(push.packOffset).toString()).toBe('PACK');
    expect(() => parsePushCommands(Buffer.concat([encodePktLine('shallow nope\n'), encodeFlush()]), decodePktLineAt)).toThrow(ProtocolError);
  });

  it('reads the push options after the commands when the client asked for push-options, and bounds them', () => {
    const command = encodePktLine(`${'0'.repeat(40)} ${A} refs/heads/main\0report-status push-options\n`);
    const body = Buffer.concat([command, encodeFlush(), encodePktLine('ci.skip\n'), encodePktLine('merge_request.create'), encodeFlush(), Buffer.from('PACK')]);
    const push = parsePushCommands(body, decodePktLineAt);
    expect(push.options).toEqual(['ci.skip', 'merge_request.create']);
    expect(body.subarray(push.packOffset).toString()).toBe('PACK');
    // Without the capability, what follows the commands' flush is the pack.
    const plain = Buffer.concat([encodePktLine(`${'0'.repeat(40)} ${A} refs/heads/main\0report-status\n`), encodeFlush(), Buffer.from('PACK')]);
    expect(parsePushCommands(plain, decodePktLineAt).options).toEqual([]);
    const options = (lines: Buffer[]) => Buffer.concat([command, encodeFlush(), ...lines, encodeFlush()]);
    expect(() => parsePushCommands(options(Array.from({ length: PUSH_OPTIONS_MAX + 1 }, (_, i) => encodePktLine(`o${i}`))), decodePktLineAt)).toThrow(/too many push options/);
    expect(parsePushCommands(options(Array.from({ length: PUSH_OPTIONS_MAX }, (_, i) => encodePktLine(`o${i}`))), decodePktLineAt).options).toHaveLength(PUSH_OPTIONS_MAX);
    expect(() => parsePushCommands(options([encodePktLine('x'.repeat(PUSH_OPTION_BYTES_MAX + 1))]), decodePktLineAt)).toThrow(/longer than/);
    expect(() => parsePushCommands(Buffer.concat([command, encodeFlush(), encodePktLine('ci.skip')]), decodePktLineAt)).toThrow(/push options are truncated/);
  });

  it('reads an empty command list (a flush alone)', () => {
    const push = parsePushCommands(encodeFlush(), decodePktLineAt);
    expect(push.commands).toEqual([]);
    expect(push.capabilities.size).toBe(0);
  });
});
