import { Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { GlideClient } from '@valkey/valkey-glide';
import type { RedlockModuleOptions } from 'nest-quorum-lock';
import type { RedisClientKind, SampleConfig } from './config.js';

/**
 * The lock's nodes on the client chosen by REDIS_CLIENT: ioredis (URLs, opened and closed by the
 * library), node-redis (URLs too, with `client: 'node-redis'`) or Valkey GLIDE (GlideClients
 * created here, since GLIDE connects in its async createClient; closed here on shutdown, after
 * the lock engine, which never closes a client passed in).
 */
@Injectable()
export class LockClients implements OnApplicationShutdown {
  private readonly glide: GlideClient[] = [];

  async options(config: SampleConfig): Promise<Pick<RedlockModuleOptions, 'nodes' | 'client'>> {
    const kind: RedisClientKind = config.redisClient;
    if (kind === 'node-redis') return { nodes: config.lockNodes, client: 'node-redis' };
    if (kind === 'ioredis') return { nodes: config.lockNodes, client: 'ioredis' };
    const clients = await Promise.all(
      config.lockNodes.map((url) => {
        const { hostname, port } = new URL(url);
        return GlideClient.createClient({
          addresses: [{ host: hostname, port: Number(port || 6379) }],
          requestTimeout: 500,
        });
      }),
    );
    this.glide.push(...clients);
    return { nodes: clients };
  }

  onApplicationShutdown(): void {
    for (const client of this.glide.splice(0)) client.close();
  }
}

@Module({ providers: [LockClients], exports: [LockClients] })
export class LockClientsModule {}
