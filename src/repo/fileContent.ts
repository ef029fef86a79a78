/**
 * File contents at the API's edge: UTF-8 text as a string, anything else as base64
 * (../shared/API.md "Files").
 */
import { TreehouseError } from '../errors.js';

export type ContentEncoding = 'utf8' | 'base64';

export function decodeContent(content: string, encoding: ContentEncoding | undefined, field: string): Buffer {
  if (encoding !== 'base64') return Buffer.from(content, 'utf8');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(content) || content.length % 4 === 1) {
    throw new TreehouseError('invalid_request', 'Content is not valid base64.', {
      issues: [{ path: field, message: 'not valid base64' }],
    });
  }
  return Buffer.from(content, 'base64');
}

const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** `{content}` for valid UTF-8, `{content, encoding: "base64"}` otherwise. */
export function encodeContent(bytes: Buffer): { content: string; encoding?: 'base64' } {
  try {
    return { content: utf8Decoder.decode(bytes) };
  } catch {
    return { content: bytes.toString('base64'), encoding: 'base64' };
  }
}
