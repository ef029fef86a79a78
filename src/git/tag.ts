/**
 * Annotated tag objects (Documentation/gitformat-loose.txt): "object", "type", "tag", optional
 * "tagger", a blank line, then the message (possibly followed by a signature). Read-only here.
 */
import { CommitFormatError, parseHeaders, parseSignature, type Signature } from './commit.js';
import { oidFromHex, type ObjectType, type Oid } from './oid.js';

export interface Tag {
  object: Oid;
  type: ObjectType;
  tag: string;
  tagger: Signature | null;
  message: string;
}

const OBJECT_TYPES = new Set(['blob', 'tree', 'commit', 'tag']);

export function decodeTag(body: Buffer): Tag {
  const { headers, message } = parseHeaders(body.toString('utf8'));
  const value = (key: string): string | undefined => headers.find(([name]) => name === key)?.[1];
  const object = value('object');
  const type = value('type');
  const tag = value('tag');
  if (!object || !type || tag === undefined) throw new CommitFormatError('tag is missing object, type or tag');
  if (!OBJECT_TYPES.has(type)) throw new CommitFormatError(`tag of unknown type ${JSON.stringify(type)}`);
  const tagger = value('tagger');
  return {
    object: oidFromHex(object),
    type: type as ObjectType,
    tag,
    tagger: tagger === undefined ? null : parseSignature(tagger),
    message,
  };
}
