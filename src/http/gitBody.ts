/**
 * Reading a git request body (Documentation/gitprotocol-http.txt: clients may send it with
 * `Content-Encoding: gzip`, and git does for upload-pack requests over 1 KiB). The body is read
 * only once the key is checked, inflated as a stream on zlib's thread pool, and given up the moment
 * it passes its limit, raw or inflated: a small gzip body that would inflate to gigabytes costs
 * no more than the limit.
 */
import type { Readable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';

/** The body could not be read: over its limit, not gzip, or in an encoding we do not take. */
export class GitBodyError extends Error {
  override name = 'GitBodyError';
}

export async function readGitBody(source: Readable | undefined, contentEncoding: string | undefined, bytesMax: number): Promise<Buffer> {
  if (!source) return Buffer.alloc(0);
  const encoding = (contentEncoding ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'x-gzip') {
    throw new GitBodyError(`Content-Encoding ${JSON.stringify(encoding.slice(0, 40))} is not supported (only gzip)`);
  }
  const inflater = encoding === 'identity' ? null : createGunzip();
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let rawBytes = 0;
    let bodyBytes = 0;
    let settled = false;
    const overLimit = () => new GitBodyError(`the request body is over the limit of ${bytesMax} bytes${inflater ? ' (inflated)' : ''}`);
    const finish = (error: Error | null) => {
      if (settled) return;
      settled = true;
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      // The rest of an abandoned body is never read: the answer closes the connection instead.
      if (error) source.pause();
      inflater?.destroy();
      if (error) reject(error);
      else resolve(Buffer.concat(chunks, bodyBytes));
    };
    const take = (chunk: Buffer) => {
      if (settled) return;
      bodyBytes += chunk.length;
      if (bodyBytes > bytesMax) finish(overLimit());
      else chunks.push(chunk);
    };
    const onData = (chunk: Buffer) => {
      rawBytes += chunk.length;
      if (rawBytes > bytesMax) return finish(overLimit());
      if (!inflater) return take(chunk);
      // Back pressure: the raw stream waits while zlib works through what it has.
      if (!inflater.write(chunk)) {
        source.pause();
        inflater.once('drain', () => settled || source.resume());
      }
    };
    const onEnd = () => (inflater ? inflater.end() : finish(null));
    const onError = (error: Error) => finish(new GitBodyError(`the request body was not received: ${error.message}`));
    if (inflater) attachInflater(inflater, take, finish);
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
  });
}

function attachInflater(inflater: Gunzip, take: (chunk: Buffer) => void, finish: (error: Error | null) => void): void {
  inflater.on('data', take);
  inflater.on('end', () => finish(null));
  inflater.on('error', (error) => finish(new GitBodyError(`the request body is not valid gzip: ${error.message}`)));
}
