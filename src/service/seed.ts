/**
 * Turns a project's `source` (files, zip or template) into the files of its first commit. Every
 * problem is a 400 that names the offending entry; nothing is stored until the whole seed is read.
 * Git seeds bring their own history and are handled by the git client.
 */
import yauzl from 'yauzl';
import { TreehouseError } from '../errors.js';
import { pathProblem } from '../git/path.js';
import type { SeedFile } from '../repo/initProject.js';
import { decodeContent, type ContentEncoding } from '../repo/fileContent.js';
import type { Limits } from './config.js';
import { findTemplate } from './templates/index.js';

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;
const EXECUTABLE_BITS = 0o111;
/** Unix attributes sit in the high 16 bits of a zip entry's external attributes. */
const UNIX_ATTRIBUTES_SHIFT = 16;

function invalid(message: string, path = 'source'): TreehouseError {
  return new TreehouseError('invalid_request', message, { issues: [{ path, message }] });
}

export function filesSeed(files: Array<{ path: string; content: string; encoding?: ContentEncoding }>, limits: Limits): SeedFile[] {
  if (files.length > limits.batchFilesMax) {
    throw new TreehouseError('payload_too_large', `A seed holds at most ${limits.batchFilesMax} files.`, { limit: limits.batchFilesMax });
  }
  return files.map((file, index) => {
    const problem = pathProblem(file.path);
    if (problem) throw invalid(problem, `source.files.${index}.path`);
    const bytes = decodeContent(file.content, file.encoding, `source.files.${index}.content`);
    if (bytes.length > limits.fileBytesMax) {
      throw new TreehouseError('payload_too_large', `${file.path} is larger than ${limits.fileBytesMax} bytes.`, { limit: limits.fileBytesMax });
    }
    return { path: file.path, bytes };
  });
}

export function templateSeed(name: string): SeedFile[] {
  const template = findTemplate(name);
  if (!template) throw invalid(`Unknown template ${JSON.stringify(name)}.`, 'source.name');
  return Object.entries(template.files).map(([path, content]) => ({ path, bytes: Buffer.from(content, 'utf8') }));
}

interface ZipFileEntry {
  name: string;
  bytes: Buffer;
  executable: boolean;
}

/** Reads a zip archive held in memory, refusing links, unsafe paths and archives over the limits. */
export async function zipSeed(base64: string, limits: Limits): Promise<SeedFile[]> {
  const archive = Buffer.from(base64, 'base64');
  if (archive.length === 0) throw invalid('The zip archive is empty or not base64.', 'source.data');
  const entries = await readZip(archive, limits);
  const names = entries.map((entry) => entry.name);
  const top = sharedTopFolder(names);
  return entries.map((entry) => {
    const path = top ? entry.name.slice(top.length + 1) : entry.name;
    // The archive's own names are checked too, so a stripped ".git/" folder is still refused.
    const problem = pathProblem(entry.name) ?? pathProblem(path);
    if (problem) throw invalid(`Zip entry ${JSON.stringify(entry.name)}: ${problem}.`, 'source.data');
    return { path, bytes: entry.bytes, mode: entry.executable ? '100755' : undefined };
  });
}

/** The single top-level folder every entry lies in, if there is one. */
function sharedTopFolder(names: string[]): string | null {
  if (names.length === 0) return null;
  const first = names[0].split('/')[0];
  if (!names.every((name) => name.startsWith(`${first}/`))) return null;
  return first;
}

function readZip(archive: Buffer, limits: Limits): Promise<ZipFileEntry[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(archive, { lazyEntries: true, validateEntrySizes: true, decodeStrings: true }, (openError, zip) => {
      if (openError || !zip) return reject(invalid(`Not a readable zip archive: ${openError?.message ?? 'unknown error'}.`, 'source.data'));
      const out: ZipFileEntry[] = [];
      let entryCount = 0;
      let unpackedBytes = 0;
      const fail = (error: TreehouseError) => {
        zip.close();
        reject(error);
      };
      zip.on('error', (error: Error) => reject(invalid(`Broken zip archive: ${error.message}.`, 'source.data')));
      zip.on('end', () => resolve(out));
      zip.on('entry', (entry: yauzl.Entry) => {
        entryCount++;
        if (entryCount > limits.zipEntriesMax) return fail(invalid(`The zip archive has more than ${limits.zipEntriesMax} entries.`, 'source.data'));
        const attributes = entry.externalFileAttributes >>> UNIX_ATTRIBUTES_SHIFT;
        const fileType = attributes & S_IFMT;
        if (entry.fileName.endsWith('/') || fileType === S_IFDIR) return zip.readEntry();
        if (fileType === S_IFLNK) return fail(invalid(`Zip entry ${JSON.stringify(entry.fileName)} is a link.`, 'source.data'));
        if (entry.fileName.startsWith('/') || entry.fileName.split('/').includes('..') || entry.fileName.includes('\\')) {
          return fail(invalid(`Zip entry ${JSON.stringify(entry.fileName)} has an unsafe path.`, 'source.data'));
        }
        unpackedBytes += entry.uncompressedSize;
        if (unpackedBytes > limits.zipUnpackedBytesMax || entry.uncompressedSize > limits.fileBytesMax) {
          return fail(invalid(`The zip archive unpacks to more than its limit of ${limits.zipUnpackedBytesMax} bytes.`, 'source.data'));
        }
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return fail(invalid(`Unreadable zip entry ${JSON.stringify(entry.fileName)}.`, 'source.data'));
          const chunks: Buffer[] = [];
          let bytes = 0;
          stream.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            // yauzl checks sizes too; this bounds memory even if a header lies.
            if (bytes > entry.uncompressedSize) stream.destroy(new Error('entry is larger than it declares'));
            else chunks.push(chunk);
          });
          stream.on('error', (error) => fail(invalid(`Broken zip entry ${JSON.stringify(entry.fileName)}: ${error.message}.`, 'source.data')));
          stream.on('end', () => {
            out.push({ name: entry.fileName, bytes: Buffer.concat(chunks), executable: (attributes & EXECUTABLE_BITS) !== 0 });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
