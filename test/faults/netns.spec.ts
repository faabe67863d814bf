/**
 * The network layer of the fault suite (netns.ts) on its own: namespaced nodes answer over their
 * links, a partition silences a node without resetting its connections, the asymmetric rule loses
 * replies while commands land, and close() leaves no namespace, link or process behind.
 * Skipped (with the reason) where network namespaces are unavailable, i.e. when not root.
 */
import { Redis } from 'ioredis';
import {
  linkExists,
  liveNetworkResources,
  namespaceExists,
  netnsSupport,
  NetworkNodes,
  nftSupport,
} from './netns.js';

const support = netnsSupport();
if (!support.ok) process.stderr.write(`\nskipping the network-namespace tests: ${support.reason}\n`);
const maybe = support.ok ? describe : describe.skip;

/** A reply within `ms`, or 'timeout'. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

maybe('network namespaces for the fault suite', () => {
  test('nodes in their own namespaces: partition, heal, asymmetric drop, and a clean close', async () => {
    const nodes = await NetworkNodes.start(2);
    const names = [0, 1].map((i) => nodes.describe(i));
    const client = new Redis(nodes.url(0), {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: true,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      expect(names[0]!.address).toMatch(/^10\.231\.\d+\.\d+$/);
      expect(await client.ping()).toBe('PONG');
      nodes.assertRoutedLocally();

      // Partition: the same connection gets no reply, nothing is reset, the route stays local.
      nodes.partition([0]);
      nodes.assertRoutedLocally();
      expect(await within(client.set('k', 'during-partition'), 300)).toBe('timeout');
      expect(client.status).toBe('ready');
      nodes.heal();
      // TCP retransmits the SET once the link is back (back-off: ~1 s after a 300 ms cut).
      expect(await within(client.get('k'), 5000)).toBe('during-partition');

      const nft = nftSupport();
      if (!nft.ok) process.stderr.write(`\nskipping the asymmetric (nftables) part: ${nft.reason}\n`);
      if (nft.ok) {
        const undo = nodes.dropReplies(1);
        const probe = await nodes.probeAsymmetric(1, 300);
        expect(probe).toEqual({ replied: false, landed: true });
        expect(nodes.droppedReplies(1)).toBeGreaterThan(0);
        undo();
      }
    } finally {
      client.disconnect();
      await nodes.close();
    }
    for (const n of names) {
      expect(namespaceExists(n.namespace)).toBe(false);
      expect(linkExists(n.link)).toBe(false);
    }
    expect(liveNetworkResources()).toEqual({ namespaces: [], links: [], processes: [] });
  }, 30_000);
});
