/**
 * `npm start`: opens the store (the data directory's LMDB, or the PostgreSQL database of
 * TREEHOUSE_DATABASE_URL), creates team "default" and a first key on an empty one, and serves the
 * API until SIGTERM/SIGINT, when in-flight requests finish before the store closes.
 */
import { buildApp } from './http/app.js';
import { listenMetrics } from './http/metricsServer.js';
import { loadConfig } from './service/config.js';
import { openTreehouse } from './service/treehouse.js';
import { openStore } from './store/open.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const th = openTreehouse(config, await openStore(config));
  await th.checkSecret();
  const firstKey = await th.accounts.bootstrap();
  const app = buildApp(th, { logLevel: process.env.TREEHOUSE_LOG_LEVEL ?? 'info' });
  await app.listen({ port: config.port, host: config.host });
  th.start();
  const metricsServer = th.metrics && config.metricsPort !== null ? await listenMetrics(th.metrics, config.host, config.metricsPort) : null;
  if (firstKey) process.stdout.write(`API key for team default: ${firstKey}\n`);
  const address = app.server.address();
  const port = address && typeof address === 'object' ? address.port : config.port;
  process.stdout.write(`Treehouse listening on http://${config.host}:${port}\n`);
  if (metricsServer) {
    const metricsAddress = metricsServer.address();
    const metricsPort = metricsAddress && typeof metricsAddress === 'object' ? metricsAddress.port : config.metricsPort;
    process.stdout.write(`Metrics on http://${config.host}:${metricsPort}/metrics\n`);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    await app.close();
    metricsServer?.close();
    await th.stop();
    await th.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
