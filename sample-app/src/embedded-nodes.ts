import { PostgresServer, RedisNodes } from 'nest-quorum-lock/testing';
import type { SampleConfig } from './config.js';

/** The local servers the sample app started because the environment named none. */
export interface EmbeddedServers {
  /** The configuration with the started servers filled in. */
  readonly config: SampleConfig;
  /** One line per started server, for the log. */
  readonly started: string[];
  close(): Promise<void>;
}

/**
 * Starts, with the library's test launchers, whatever the configuration leaves out: 5 lock nodes
 * when REDLOCK_NODES is unset, and the accounts' database when its URL is unset (PostgreSQL for
 * DATABASE_URL, or a redis-server for STORE_URL with STORE=redis).
 */
export async function startMissingServers(config: SampleConfig): Promise<EmbeddedServers> {
  const closers: Array<() => Promise<void>> = [];
  const started: string[] = [];
  const close = async () => {
    await Promise.all(closers.map((c) => c()));
  };
  try {
    let { lockNodes, databaseUrl, storeUrl } = config;
    if (lockNodes.length === 0) {
      const locks = await RedisNodes.start(5);
      closers.push(() => locks.close());
      lockNodes = locks.urls;
      started.push(`No REDLOCK_NODES given: started 5 local lock nodes: ${lockNodes.join(', ')}`);
    }
    if (config.store === 'postgres' && !databaseUrl) {
      const pg = await PostgresServer.start();
      closers.push(() => pg.close());
      databaseUrl = pg.url;
      started.push(`No DATABASE_URL given: started a local PostgreSQL for the accounts: ${databaseUrl}`);
    }
    if (config.store === 'redis' && !storeUrl) {
      const store = await RedisNodes.start(1);
      closers.push(() => store.close());
      storeUrl = store.url(0);
      started.push(`No STORE_URL given: started a local redis-server for the accounts: ${storeUrl}`);
    }
    return {
      config: { ...config, lockNodes, databaseUrl, storeUrl },
      started,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
