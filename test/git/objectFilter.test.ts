import { describe, expect, it } from 'vitest';
import { FilterSpecError, parseObjectFilter } from '../../src/git/objectFilter.js';

describe('parseObjectFilter', () => {
  it('reads the specs a partial clone sends, with git’s units and blob:limit=0 as blob:none', () => {
    expect(parseObjectFilter('blob:none')).toEqual({ kind: 'blob:none' });
    expect(parseObjectFilter('blob:limit=0')).toEqual({ kind: 'blob:none' });
    expect(parseObjectFilter('blob:limit=1')).toEqual({ kind: 'blob:limit', bytes: 1 });
    expect(parseObjectFilter('blob:limit=4k')).toEqual({ kind: 'blob:limit', bytes: 4096 });
    expect(parseObjectFilter('blob:limit=2M')).toEqual({ kind: 'blob:limit', bytes: 2 * 1024 * 1024 });
    expect(parseObjectFilter('blob:limit=1g')).toEqual({ kind: 'blob:limit', bytes: 1024 ** 3 });
    expect(parseObjectFilter('tree:0')).toEqual({ kind: 'tree:0' });
    expect(parseObjectFilter('tree:1')).toEqual({ kind: 'tree:depth', depth: 1 });
    expect(parseObjectFilter('tree:4096')).toEqual({ kind: 'tree:depth', depth: 4096 });
  });

  it('refuses what it does not serve by name, and broken specs, without echoing control characters raw', () => {
    const refused: Array<[string, RegExp]> = [
      ['tree:1000001', /too large/],
      ['tree:-1', /invalid filter-spec/],
      ['sparse:oid=HEAD:.sparse', /not supported here/],
      ['object:type=blob', /not supported here/],
      ['combine:blob:none+tree:0', /not supported here/],
      ['blob:limit=', /invalid filter-spec/],
      ['blob:limit=-1', /invalid filter-spec/],
      ['blob:limit=1t', /invalid filter-spec/],
      ['blob:limit=999999999999999g', /too large/],
      ['blob:limit=1234567890123456', /invalid filter-spec/],
      ['BLOB:NONE', /invalid filter-spec/],
      ['', /invalid filter-spec/],
      ['x'.repeat(201), /too long/],
      ['blob:none\n', /invalid filter-spec "blob:none\\n"/],
    ];
    for (const [spec, reason] of refused) {
      expect(() => parseObjectFilter(spec), spec).toThrow(FilterSpecError);
      expect(() => parseObjectFilter(spec), spec).toThrow(reason);
    }
  });
});
