import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EMPTY_BLOB_OID, oidFromHex, oidToHex } from '../../src/git/oid.js';
import { PackWriter, parsePack } from '../../src/git/pack.js';
import { encodeDelim, encodeFlush, encodePktLine, encodeSideband, SIDEBAND_DATA, SIDEBAND_ERROR, SIDEBAND_PROGRESS } from '../../src/git/pktline.js';
import {
  Capabilities,
  encodeFetchV2Request,
  encodePushCommands,
  encodeUploadRequestV0,
  FetchResponseReader,
  parseInfoRefs,
  parseLsRefsResponse,
  parseReportStatus,
  receiveCapabilities,
  uploadCapabilitiesV0,
} from '../../src/git/smartClient.js';
import { ProtocolError, ZERO_OID_HEX } from '../../src/git/smartProtocol.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const join = (...parts: Buffer[]) => Buffer.concat(parts);

function smallPack(): Buffer {
  const writer = new PackWriter(2);
  return join(writer.start(), writer.addObject('blob', Buffer.from('hello\n')).bytes, writer.addObject('blob', Buffer.alloc(0)).bytes, writer.finish());
}

describe('info/refs', () => {
  it('reads a v0 advertisement with the service preamble, symref and peeled tags', () => {
    const body = join(
      encodePktLine('# service=git-upload-pack\n'),
      encodeFlush(),
      encodePktLine(`${A} HEAD\0multi_ack side-band-64k ofs-delta symref=HEAD:refs/heads/main agent=git/2.39\n`),
      encodePktLine(`${A} refs/heads/main\n`),
      encodePktLine(`${B} refs/tags/v1\n`),
      encodePktLine(`${C} refs/tags/v1^{}\n`),
      encodeFlush(),
    );
    const advertisement = parseInfoRefs(body, 'git-upload-pack');
    expect(advertisement.version).toBe(0);
    if (advertisement.version !== 0) return;
    expect(advertisement.refs.map((ref) => [ref.name, oidToHex(ref.oid), ref.peeled && oidToHex(ref.peeled), ref.symrefTarget])).toEqual([
      ['HEAD', A, null, 'refs/heads/main'],
      ['refs/heads/main', A, null, null],
      ['refs/tags/v1', B, C, null],
    ]);
    expect(advertisement.capabilities.has('side-band-64k')).toBe(true);
    expect(advertisement.capabilities.all('agent')).toEqual(['git/2.39']);
  });

  it('reads an empty repository and a v2 advertisement without the preamble', () => {
    const empty = parseInfoRefs(join(encodePktLine(`${ZERO_OID_HEX} capabilities^{}\0report-status delete-refs\n`), encodeFlush()), 'git-receive-pack');
    expect(empty).toMatchObject({ version: 0, refs: [] });
    const v2 = parseInfoRefs(join(encodePktLine('version 2\n'), encodePktLine('ls-refs=unborn\n'), encodePktLine('fetch=shallow\n'), encodeFlush()), 'git-upload-pack');
    expect(v2.version).toBe(2);
    expect(v2.capabilities.has('ls-refs') && v2.capabilities.has('fetch')).toBe(true);
  });

  it('refuses another service, ERR lines, bad ids and truncation', () => {
    const cases = [
      join(encodePktLine('# service=git-receive-pack\n'), encodeFlush(), encodeFlush()),
      join(encodePktLine('ERR access denied\n')),
      join(encodePktLine('xyz refs/heads/main\0caps\n'), encodeFlush()),
      join(encodePktLine(`${A} refs/heads/main\n`)),
      Buffer.from('00'),
    ];
    for (const body of cases) expect(() => parseInfoRefs(body, 'git-upload-pack')).toThrow(ProtocolError);
  });
});

describe('ls-refs and requests', () => {
  it('parses symref targets and peeled values', () => {
    const refs = parseLsRefsResponse(join(encodePktLine(`${A} HEAD symref-target:refs/heads/main\n`), encodePktLine(`${B} refs/tags/v1 peeled:${C}\n`), encodeFlush()));
    expect(refs.map((ref) => [ref.name, ref.symrefTarget, ref.peeled && oidToHex(ref.peeled)])).toEqual([
      ['HEAD', 'refs/heads/main', null],
      ['refs/tags/v1', null, C],
    ]);
  });

  it('builds v2 and v0 fetch requests that want and are done at once', () => {
    const v2 = encodeFetchV2Request(new Capabilities(['object-format=sha1']), [oidFromHex(A)]).toString('latin1');
    expect(v2).toBe(`0012command=fetch\n0018agent=treehouse/0.1\n0017object-format=sha1\n0001000eofs-delta\n0010no-progress\n0032want ${A}\n0009done\n0000`);
    const capabilities = uploadCapabilitiesV0(new Capabilities(['multi_ack', 'side-band', 'side-band-64k', 'ofs-delta']));
    expect(capabilities).toEqual(['side-band-64k', 'ofs-delta', 'agent=treehouse/0.1']);
    expect(encodeUploadRequestV0(capabilities, [oidFromHex(A)]).toString('latin1')).toBe(`005ewant ${A} side-band-64k ofs-delta agent=treehouse/0.1\n00000009done\n`);
  });
});

describe('fetch answers', () => {
  const pack = smallPack();

  it('demultiplexes a v0 side-band answer arriving a byte at a time, dropping progress', () => {
    const answer = join(encodePktLine('NAK\n'), ...encodeSideband(SIDEBAND_PROGRESS, 'Counting\r'), ...encodeSideband(SIDEBAND_DATA, pack, 7), encodeFlush());
    const reader = new FetchResponseReader(0, true, 1 << 20);
    for (const byte of answer) reader.push(Buffer.from([byte]));
    const received = reader.end();
    expect(received.equals(pack)).toBe(true);
    expect(parsePack(received).objects.map((object) => oidToHex(object.oid))).toContain(oidToHex(EMPTY_BLOB_OID));
  });

  it('reads a raw v0 pack and a v2 answer with sections before the packfile', () => {
    const raw = new FetchResponseReader(0, false, 1 << 20);
    raw.push(join(encodePktLine('NAK\n'), pack.subarray(0, 5)));
    raw.push(pack.subarray(5));
    expect(raw.end().equals(pack)).toBe(true);

    const v2 = new FetchResponseReader(2, true, 1 << 20);
    v2.push(join(encodePktLine('shallow-info\n'), encodePktLine(`shallow ${A}\n`), encodeDelim(), encodePktLine('packfile\n'), ...encodeSideband(SIDEBAND_DATA, pack), encodeFlush()));
    expect(v2.end().equals(pack)).toBe(true);
  });

  it('throws on remote errors, missing packs, truncation and oversize', () => {
    const fail = (version: 0 | 2, answer: Buffer, limit = 1 << 20) => () => {
      const reader = new FetchResponseReader(version, true, limit);
      reader.push(answer);
      reader.end();
    };
    expect(fail(0, join(encodePktLine('NAK\n'), ...encodeSideband(SIDEBAND_ERROR, 'upload-pack: not our ref')))).toThrow(/not our ref/);
    expect(fail(0, encodePktLine('ERR no access\n'))).toThrow(/no access/);
    expect(fail(2, join(encodePktLine('acknowledgments\n'), encodePktLine('NAK\n'), encodeFlush()))).toThrow(/no packfile/);
    expect(fail(0, join(encodePktLine('NAK\n'), ...encodeSideband(SIDEBAND_DATA, pack)))).toThrow(/middle of the pack/);
    expect(fail(0, join(encodePktLine('NAK\n'), ...encodeSideband(SIDEBAND_DATA, pack), encodeFlush()), 10)).toThrow(/larger than the limit/);
    expect(fail(0, join(encodePktLine('NAK\n'), ...encodeSideband(SIDEBAND_DATA, pack), encodeFlush(), encodePktLine('extra\n')))).toThrow(/after the end/);
  });

  it('fails only with ProtocolError on truncated or corrupted answers', () => {
    const answer = join(encodePktLine('NAK\n'), ...encodeSideband(SIDEBAND_DATA, pack), encodeFlush());
    fc.assert(
      fc.property(fc.nat(answer.length), fc.nat(answer.length - 1), fc.integer({ min: 0, max: 255 }), (cut, at, byte) => {
        const corrupted = Buffer.from(answer.subarray(0, cut));
        if (at < corrupted.length) corrupted[at] = byte;
        try {
          const reader = new FetchResponseReader(0, true, 1 << 20);
          reader.push(corrupted);
          reader.end();
        } catch (error) {
          expect(error).toBeInstanceOf(ProtocolError);
        }
      }),
    );
  });
});

describe('push', () => {
  it('encodes commands with capabilities on the first line', () => {
    const capabilities = receiveCapabilities(new Capabilities(['report-status', 'side-band-64k', 'delete-refs', 'object-format=sha1']));
    expect(capabilities).toEqual(['report-status', 'side-band-64k', 'object-format=sha1', 'agent=treehouse/0.1']);
    const encoded = encodePushCommands([{ old: null, new: oidFromHex(A), ref: 'refs/heads/main' }], capabilities).toString('latin1');
    expect(encoded).toBe(`00a9${ZERO_OID_HEX} ${A} refs/heads/main\0report-status side-band-64k object-format=sha1 agent=treehouse/0.1\n0000`);
    expect(() => receiveCapabilities(new Capabilities(['delete-refs']))).toThrow(/report-status/);
  });

  it('reads report-status inside side-band and plain', () => {
    const report = join(encodePktLine('unpack ok\n'), encodePktLine('ok refs/heads/main\n'), encodePktLine('ng refs/heads/x non-fast-forward\n'), encodeFlush());
    const expected = {
      unpack: 'ok',
      results: [
        { ref: 'refs/heads/main', ok: true },
        { ref: 'refs/heads/x', ok: false, reason: 'non-fast-forward' },
      ],
    };
    expect(parseReportStatus(report, false)).toEqual(expected);
    expect(parseReportStatus(join(...encodeSideband(SIDEBAND_PROGRESS, 'hi'), ...encodeSideband(SIDEBAND_DATA, report, 5), encodeFlush()), true)).toEqual(expected);
    expect(() => parseReportStatus(join(...encodeSideband(SIDEBAND_ERROR, 'hook declined'), encodeFlush()), true)).toThrow(/hook declined/);
    expect(() => parseReportStatus(join(encodePktLine('ok refs/heads/main\n'), encodeFlush()), false)).toThrow(ProtocolError);
  });
});
