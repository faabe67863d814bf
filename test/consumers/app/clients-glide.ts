/**
 * The Valkey GLIDE app's clients (copied as `src/clients.ts` by run.mjs; the app has neither
 * ioredis nor node-redis): the lock's nodes are GlideClients the app created, and another
 * GlideClient per node reads what the server says.
 */
import { GlideClient } from '@valkey/valkey-glide';
import type { RedlockNode } from 'nest-quorum-lock';

export interface AppClients {
  readonly name: string;
  readonly nodes: RedlockNode[];
  command(node: number, ...args: string[]): Promise<string>;
  close(): Promise<void>;
}

function glide(url: string): Promise<GlideClient> {
  const { hostname, port } = new URL(url);
  return GlideClient.createClient({
    addresses: [{ host: hostname, port: Number(port) }],
    requestTimeout: 500,
  });
}

export async function connectClients(urls: string[]): Promise<AppClients> {
  const nodes = await Promise.all(urls.map(glide));
  const admin = await Promise.all(urls.map(glide));
  return {
    name: 'Valkey GLIDE',
    nodes,
    command: async (node, ...args) => String(await admin[node]!.customCommand(args)),
    close: async () => {
      for (const client of [...nodes, ...admin]) client.close();
    },
  };
}
