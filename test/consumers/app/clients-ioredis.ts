/**
 * The ioredis apps' clients (copied as `src/clients.ts` by run.mjs): the lock's nodes are URLs
 * (ioredis opens them), and an ioredis client per node reads what the server says.
 */
import { Redis } from 'ioredis';
import type { RedlockNode } from 'nest-quorum-lock';

export interface AppClients {
  readonly name: string;
  readonly nodes: RedlockNode[];
  command(node: number, ...args: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function connectClients(urls: string[]): Promise<AppClients> {
  const admin = urls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
  return {
    name: 'ioredis',
    nodes: urls,
    command: async (node, command, ...args) => String(await admin[node]!.call(command!, ...args)),
    close: async () => {
      for (const client of admin) client.disconnect();
    },
  };
}
