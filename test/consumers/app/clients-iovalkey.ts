/**
 * The iovalkey app's clients (copied as `src/clients.ts` by run.mjs; the app has neither ioredis
 * nor node-redis): the lock's nodes are iovalkey clients the app created, and another iovalkey
 * client per node reads what the server says.
 */
import { Valkey } from 'iovalkey';
import type { RedlockNode } from 'nest-quorum-lock';

export interface AppClients {
  readonly name: string;
  readonly nodes: RedlockNode[];
  /** Whether releases go one-way (ioredis connections the engine owns). */
  readonly oneWayReleases: boolean;
  command(node: number, ...args: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function connectClients(urls: string[]): Promise<AppClients> {
  const nodes = urls.map((url) => new Valkey(url));
  const admin = urls.map((url) => new Valkey(url, { maxRetriesPerRequest: 1 }));
  return {
    name: 'iovalkey',
    nodes,
    oneWayReleases: false,
    command: async (node, command, ...args) => String(await admin[node]!.call(command!, ...args)),
    close: async () => {
      await Promise.all([...nodes, ...admin].map((client) => client.quit()));
    },
  };
}
