import { RedisNodes } from 'nest-quorum-lock/testing';

/** Local redis-server processes the sample app starts when no lock nodes are configured. */
export interface EmbeddedNodes {
  readonly lockNodes: string[];
  readonly storeUrl: string;
  close(): Promise<void>;
}

/** Starts 5 lock nodes and 1 store node with the library's launcher. */
export async function startEmbeddedNodes(): Promise<EmbeddedNodes> {
  const locks = await RedisNodes.start(5);
  let store: RedisNodes;
  try {
    store = await RedisNodes.start(1);
  } catch (err) {
    await locks.close();
    throw err;
  }
  return {
    lockNodes: locks.urls,
    storeUrl: store.url(0),
    close: async () => {
      await Promise.all([locks.close(), store.close()]);
    },
  };
}
