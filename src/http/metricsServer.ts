/**
 * The Prometheus scrape endpoint, on a listener of its own (TREEHOUSE_METRICS_PORT), so metrics are
 * never reachable through the API's port and need no key there: bind it where only the scraper can
 * reach it.
 */
import { createServer, type Server } from 'node:http';
import type { Metrics } from '../service/metrics.js';

export async function listenMetrics(metrics: Metrics, host: string, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Only GET /metrics is served here.\n');
      return;
    }
    metrics.render().then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
      (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${error.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
