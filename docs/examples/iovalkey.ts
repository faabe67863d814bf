// The iovalkey example of docs/clients.md. Type-checked by `npm run lint`; the block from the
// iovalkey import on appears there verbatim (test/unit/readme-examples.spec.ts).
import { RedlockModule } from 'nest-quorum-lock';
import { Cluster, Valkey } from 'iovalkey';

RedlockModule.forRoot({
  nodes: [
    new Valkey('redis://locks-a:6379'),
    new Valkey('redis://locks-b:6379'),
    // A Valkey or Redis Cluster is ONE voter, as an ioredis Cluster is.
    new Cluster([{ host: 'locks-c-1', port: 6379 }]),
  ],
});
