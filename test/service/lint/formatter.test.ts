import { afterAll, describe, expect, it } from 'vitest';
import { InlineFormatter, WorkerPoolFormatter, type Formatter } from '../../../src/service/lint/formatter.js';

const pool = new WorkerPoolFormatter(2);
const inline = new InlineFormatter();
afterAll(async () => {
  await pool.close();
  await inline.close();
});

describe.each<[string, Formatter]>([
  ['worker pool', pool],
  ['main thread', inline],
])('formatter (%s)', (_name, formatter) => {
  it('formats, reports syntax errors with their position, and refused options', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => formatter.format(`const  x${i} = {a:1}`, { parser: 'typescript', filepath: 'a.ts' })));
    results.forEach((result, i) => expect(result).toEqual({ kind: 'formatted', text: `const x${i} = { a: 1 };\n` }));
    expect(await formatter.format('let a: = 1', { parser: 'typescript', filepath: 'a.ts' })).toEqual({ kind: 'syntax', message: 'Type expected.', line: 1, column: 8 });
    const refused = await formatter.format('a', { parser: 'babel', filepath: 'a.js', printWidth: 'wide' });
    expect(refused.kind).toBe('options');
  });
});

describe('worker pool', () => {
  it('refuses work once closed', async () => {
    const closed = new WorkerPoolFormatter(1);
    await closed.close();
    await expect(closed.format('a', { parser: 'babel', filepath: 'a.js' })).rejects.toThrow('closed');
  });
});
