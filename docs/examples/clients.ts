// Examples shown in docs/clients.md. Type-checked by `npm run lint`; a test checks that every
// TypeScript block of the docs appears here verbatim. Each block is a module of its own in the docs
// (top-level await, its own imports); here they share one module.
import { RedlockModule } from 'nest-quorum-lock';

declare const logger: { warn(err: unknown): void };

// The node-redis module (first block of the page) is docs/examples/node-redis-module.ts, which the
// consumer suite boots from the packed package.
import { GlideClient } from '@valkey/valkey-glide';

const glide = (host: string) =>
  GlideClient.createClient({ addresses: [{ host, port: 6379 }], requestTimeout: 500 });
RedlockModule.forRootAsync({
  useFactory: async () => ({ nodes: await Promise.all(['10.0.0.1', '10.0.0.2', '10.0.0.3'].map(glide)) }),
});

import { createCluster } from 'redis';

const locksA = createCluster({
  rootNodes: [{ url: 'redis://locks-a-1:6379' }, { url: 'redis://locks-a-2:6379' }],
  defaults: { password: process.env.LOCKS_A_PASSWORD },
});
locksA.on('error', (err) => logger.warn(err));
await locksA.connect();

RedlockModule.forRoot({
  nodes: [locksA, 'redis://locks-b:6379', 'redis://locks-c:6379'],
  client: 'node-redis',
});

import { GlideClusterClient } from '@valkey/valkey-glide';

const glideCluster = (host: string) =>
  GlideClusterClient.createClient({ addresses: [{ host, port: 6379 }], requestTimeout: 500 });
RedlockModule.forRootAsync({
  useFactory: async () => ({
    nodes: await Promise.all(['locks-a-1', 'locks-b-1', 'locks-c-1'].map(glideCluster)),
  }),
});
