/**
 * An HTTP load driver on loopback: `clients` concurrent loops, each writing a file of its own and
 * committing, until `durationMs` has passed. Bounded in time and sent only to the given base URLs
 * (the nodes of one service, clients spread over them).
 */
export interface LoadResult {
  requests: number;
  errors: number;
  acknowledgedFiles: string[];
  commits: number;
  durationMs: number;
  latenciesMs: number[];
}

export async function runWriteCommitLoad(options: {
  baseUrl: string;
  /** Nodes of one service: client i sends to otherBaseUrls[i % n] (baseUrl counted first). */
  otherBaseUrls?: string[];
  projectId: string;
  keys: string[];
  clients: number;
  durationMs: number;
}): Promise<LoadResult> {
  const result: LoadResult = { requests: 0, errors: 0, acknowledgedFiles: [], commits: 0, durationMs: 0, latenciesMs: [] };
  const started = performance.now();
  const deadline = started + options.durationMs;
  const bases = [options.baseUrl, ...(options.otherBaseUrls ?? [])];
  const call = async (base: string, key: string, path: string, body: unknown) => {
    const t0 = performance.now();
    const response = await fetch(`${base}/api/v1/projects/${options.projectId}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await response.arrayBuffer();
    result.latenciesMs.push(performance.now() - t0);
    result.requests++;
    if (response.status >= 400) result.errors++;
    return response.status;
  };
  const client = async (index: number) => {
    const key = options.keys[index % options.keys.length];
    const base = bases[index % bases.length];
    for (let n = 0; performance.now() < deadline; n++) {
      const path = `load/client-${index}/file-${n}.txt`;
      const status = await call(base, key, '/files/batch', { files: [{ path, content: `client ${index} write ${n}\n` }] });
      if (status === 200) result.acknowledgedFiles.push(path);
      const committed = await call(base, key, '/git/commit', { message: `client ${index} commit ${n}` });
      if (committed === 201) result.commits++;
    }
  };
  await Promise.all(Array.from({ length: options.clients }, (_, index) => client(index)));
  result.durationMs = performance.now() - started;
  return result;
}

export function percentile(values: number[], fraction: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
}
