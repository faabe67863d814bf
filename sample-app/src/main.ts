import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { readConfig, type SampleConfig } from './config.js';
import { startMissingServers } from './embedded-nodes.js';

/**
 * Starts the sample app. With REDLOCK_NODES unset it first starts 5 local redis-server lock nodes;
 * with DATABASE_URL unset, a local PostgreSQL for the accounts (or with STORE=redis and STORE_URL
 * unset, a redis-server); it stops what it started on Ctrl-C / SIGTERM.
 */
async function main(): Promise<void> {
  const logger = new Logger('SampleApp');
  const embedded = await startMissingServers(readConfig());
  const config: SampleConfig = embedded.config;
  for (const line of embedded.started) logger.log(line);
  logger.log(
    `Accounts are kept in ${config.store === 'postgres' ? 'PostgreSQL' : 'Redis'} (STORE=${config.store})`,
  );

  // The restart guard stays on: lock nodes started here (RedisNodes) are recorded fresh for their
  // run_id, and nodes started elsewhere by `npx nest-quorum-lock fresh-node <url>` (docs/deploying.md).
  // forceCloseConnections: an open dashboard's event stream ends at shutdown, but its socket would
  // then idle as keep-alive and hold the close for the server's keepAliveTimeout (5 s).
  const app = await NestFactory.create(AppModule.forRoot(config), {
    forceCloseConnections: true,
  });
  await app.listen(config.port);
  const url = `http://localhost:${config.port}`;
  logger.log(`Listening on ${url}  (instance ${config.instance})`);
  logger.log(
    `Try: curl -X PUT ${url}/accounts/alice -H 'content-type: application/json' -d '{"balance":1000}'`,
  );
  logger.log(
    `     curl -X POST ${url}/accounts/alice/withdraw -H 'content-type: application/json' -d '{"amount":100}'`,
  );
  logger.log(`     curl ${url}/status`);
  logger.log(`Live dashboard: ${url}/dashboard`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: shutting down`);
    await app.close();
    await embedded.close();
    process.exit(0);
  };
  // Not app.enableShutdownHooks(): after closing the app it re-raises the signal, which would end
  // the process before the local servers are stopped and their directories removed.
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
