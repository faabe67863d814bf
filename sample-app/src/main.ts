import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { readConfig, type SampleConfig } from './config.js';
import { startEmbeddedNodes, type EmbeddedNodes } from './embedded-nodes.js';

/**
 * Starts the sample app. With REDLOCK_NODES unset it first starts 5 local redis-server lock nodes
 * and a store node, and stops them on Ctrl-C / SIGTERM; with REDLOCK_NODES set it starts nothing.
 */
async function main(): Promise<void> {
  const logger = new Logger('SampleApp');
  let config: SampleConfig = readConfig();
  let embedded: EmbeddedNodes | undefined;
  if (config.lockNodes.length === 0) {
    embedded = await startEmbeddedNodes();
    config = { ...config, lockNodes: embedded.lockNodes, storeUrl: config.storeUrl ?? embedded.storeUrl };
    logger.log(`No REDLOCK_NODES given: started 5 local lock nodes: ${embedded.lockNodes.join(', ')}`);
    logger.log(`Store (the app's database): ${embedded.storeUrl}`);
  }
  if (!config.storeUrl)
    throw new Error('Set STORE_URL (a redis:// URL for account data) when REDLOCK_NODES is set.');

  // Nodes started just now cannot have granted any lock yet, so the restart guard can be off
  // (REDLOCK_RESTART_GUARD=off says the same for nodes a script started for this app).
  const freshNodes = embedded !== undefined || process.env.REDLOCK_RESTART_GUARD === 'off';
  const app = await NestFactory.create(AppModule.forRoot(config, freshNodes ? { restartGuard: false } : {}));
  app.enableShutdownHooks();
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

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: shutting down`);
    await app.close();
    await embedded?.close();
    process.exit(0);
  };
  // enableShutdownHooks closes the app on these signals too; the embedded nodes must follow it.
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
