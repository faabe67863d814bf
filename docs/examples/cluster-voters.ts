// The README's "Deploying: voters, Cluster and Sentinel" examples: Redis Clusters and a
// Sentinel-managed primary as voters, and a multi-resource lock whose resources share a hash tag.
// Type-checked by `npm run lint`; the README blocks appear here verbatim.
import { Injectable, Module } from '@nestjs/common';
import { DistributedLock, LockService, RedlockModule } from 'nest-quorum-lock';

@Module({
  imports: [
    RedlockModule.forRoot({
      nodes: [
        // Voter 1: a Redis Cluster (ioredis discovers the other shards from these).
        {
          cluster: [
            { host: 'locks-a-1', port: 6379 },
            { host: 'locks-a-2', port: 6379 },
          ],
        },
        // Voter 2: another cluster, with ioredis Cluster options.
        {
          cluster: [{ host: 'locks-b-1', port: 6379 }],
          options: { redisOptions: { password: process.env.LOCKS_B_PASSWORD } },
        },
        // Voter 3: a Sentinel-managed primary.
        { sentinels: [{ host: 's1', port: 26379 }], name: 'locks-c' },
      ],
    }),
  ],
})
export class ClusterVotersModule {}

@Injectable()
export class OrderPayments {
  constructor(private readonly locks: LockService) {}

  async pay(orderId: string): Promise<void> {
    // One hash tag, {order:<id>}: both lock keys live in one slot of every cluster voter.
    const resources = [`{order:${orderId}}:items`, `{order:${orderId}}:payment`];
    await this.locks.using(resources, async () => {
      // ...
    });
  }

  // The same from @DistributedLock: {{ and }} are literal braces, {0} the first argument.
  @DistributedLock(['{{order:{0}}}:items', '{{order:{0}}}:payment'])
  async ship(orderId: string): Promise<string> {
    return `order ${orderId} shipped`; // locked: {order:<id>}:items and {order:<id>}:payment
  }
}
