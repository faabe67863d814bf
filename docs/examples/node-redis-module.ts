// docs/clients.md, "node-redis": the module that passes a node-redis client unconnected. Type-checked
// by `npm run lint`; the consumer suite (test/consumers/run.mjs) copies this file into its
// node-redis apps and boots it from the packed package with one node down and with one node
// refusing the password (test/consumers/app/node-redis-boot.ts).
import { Module } from '@nestjs/common';
import { RedlockModule } from 'nest-quorum-lock';
import { createClient } from 'redis';

// Not connected here: the library connects it at bootstrap, and closes it on shutdown.
const locksA = createClient({ url: process.env.LOCKS_A_URL }); // e.g. redis://10.0.0.1:6379

@Module({
  imports: [
    RedlockModule.forRoot({
      nodes: [
        locksA,
        process.env.LOCKS_B_URL!,
        { url: process.env.LOCKS_C_URL, password: process.env.LOCKS_C_PW },
      ],
      client: 'node-redis', // what URLs and options become (default: ioredis when installed, else node-redis)
    }),
  ],
})
export class LocksModule {}
