/**
 * The node-redis app's clients (copied as `src/clients.ts` by run.mjs; the app has no ioredis):
 * one node as a URL and one as createClient options (node-redis opens them: ioredis is not
 * installed), one as a client the app already has; a node-redis client per node reads what the
 * server says.
 */
import { createClient } from 'redis';
import type { RedlockNode } from 'nest-quorum-lock';

export interface AppClients {
  readonly name: string;
  readonly nodes: RedlockNode[];
  command(node: number, ...args: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function connectClients(urls: string[]): Promise<AppClients> {
  const admin = urls.map((url) => createClient({ url }));
  for (const client of admin) client.on('error', () => undefined);
  await Promise.all(admin.map((client) => client.connect()));
  const app = createClient({ url: urls[2] });
  app.on('error', () => undefined);
  await app.connect();
  return {
    name: 'node-redis',
    nodes: [urls[0]!, { url: urls[1] }, app],
    command: async (node, ...args) => String(await admin[node]!.sendCommand(args)),
    close: async () => {
      await Promise.all([...admin, app].map((client) => client.close()));
    },
  };
}
