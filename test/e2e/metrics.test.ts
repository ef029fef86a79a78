/**
 * Prometheus metrics on their own port (TREEHOUSE_METRICS_PORT), from a real server process.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/git.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';

const data = scratchDir('treehouse-metrics-');
let server: ServerProcess | null = null;
afterAll(async () => {
  server?.child.kill('SIGKILL');
  data.remove();
});

/** The value of the first sample line that starts with `series`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(series));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics', () => {
  it('serves request, store, cache, sync, storage and event-loop metrics on their own port only', async () => {
    server = await startServerProcess({ TREEHOUSE_DATA_DIR: data.path, TREEHOUSE_METRICS_PORT: '0' });
    const key = (await server.waitFor(/^API key for team default: (th_\S+)$/m))[1];
    const metricsUrl = (await server.waitFor(/^Metrics on (http:\S+)$/m))[1];
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.url}/api/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ title: 'Measured' }) });
    expect(created.status).toBe(201);
    const id = (await created.json()).project.id as string;
    expect((await fetch(`${server.url}/api/v1/projects/${id}/files/batch`, { method: 'POST', headers, body: JSON.stringify({ files: [{ path: 'a.txt', content: 'a' }] }) })).status).toBe(200);
    expect((await fetch(`${server.url}/api/v1/projects/${id}/files/nope.txt`, { headers })).status).toBe(404);

    const scraped = await fetch(metricsUrl);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await scraped.text();
    expect(sample(text, 'treehouse_http_request_duration_seconds_count{method="POST",route="/api/v1/projects",status="201"}')).toBe(1);
    expect(sample(text, 'treehouse_http_request_duration_seconds_count{method="GET",route="/api/v1/projects/:id/files/*",status="404"}')).toBe(1);
    // Series are per route template: no project id ever becomes a label.
    expect(text).not.toContain(id);
    expect(sample(text, 'treehouse_store_write_duration_seconds_count{outcome="committed"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'treehouse_pack_cache_backlog_objects')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'treehouse_project_drops_pending')).toBe(0);
    expect(sample(text, 'treehouse_sync_queue_depth')).toBe(0);
    expect(sample(text, 'treehouse_sync_attempts_total{outcome="failed"}')).toBe(0);
    // No clone yet (test/interop/clonePacks.test.ts counts them).
    expect(sample(text, 'treehouse_clone_packs_total{outcome="hit"}')).toBe(0);
    expect(sample(text, 'treehouse_clone_packs_total{outcome="grown"}')).toBe(0);
    expect(sample(text, 'treehouse_clone_packs_bytes')).toBe(0);
    expect(sample(text, 'treehouse_storage_used_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'treehouse_storage_free_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'treehouse_nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);

    // Not on the API's port, and nothing else on the metrics port.
    const onApi = await fetch(`${server.url}/metrics`);
    expect(onApi.status).toBe(404);
    expect((await onApi.json()).error.code).toBe('not_found');
    expect((await fetch(metricsUrl.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('listens for no metrics unless asked', async () => {
    server?.child.kill('SIGKILL');
    server = await startServerProcess({ TREEHOUSE_DATA_DIR: data.path });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(server.output()).not.toMatch(/Metrics on/);
  });
});
