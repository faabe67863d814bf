import { settleWithin, sleep, type Runtime } from '../../runtime.js';
import type { ShardSubscription } from '../subscribers.js';

/** A GLIDE `GlideClient` class, by its async factory (GLIDE connects while it creates a client). */
export interface GlideFactory {
  createClient(config: object): Promise<GlideSubscriber>;
}

/** The members of a subscriber client (a `GlideClient` of ours) called here. */
interface GlideSubscriber {
  close(): void;
  /** GLIDE 2.5+: the channels asked for and those the server confirmed. */
  getSubscriptions?(): Promise<{ actualSubscriptions?: Partial<Record<number, Set<unknown>>> }>;
  /** GLIDE 2.5+: `null` for every channel; waits for the server at most `timeoutMs`. */
  unsubscribe?(channels: null, timeoutMs: number): Promise<void>;
}

/** How long a new subscriber waits for the server to confirm its channels, at most, ms. */
const CONFIRM_MS = 2000;
const POLL_MS = 20;
/** GLIDE's channel mode for exact channel names (`PubSubChannelModes.Exact`). */
const EXACT = 0;

/**
 * One shard's wake subscription: a GLIDE client of our own, created from `config` (the application
 * client's addresses, credentials, TLS...) with the channels, since GLIDE subscribes when it creates
 * a client and a client without a callback of ours cannot deliver to us; more channels, a new
 * client. GLIDE re-subscribes it after its reconnections; `answers` says whether its server answers
 * now (GLIDE says nothing when a connection drops), so that another shard's delivers meanwhile.
 */
export async function openGlideSubscription(
  runtime: Runtime,
  factory: GlideFactory,
  config: object,
  channels: readonly string[],
  deliver: (channel: string, message: string) => void,
  answers: () => Promise<boolean>,
): Promise<ShardSubscription> {
  const all = new Set(channels);
  const create = () => createSubscriber(runtime, factory, config, all, deliver);
  let current = await create();
  let healthy = true;
  let closed = false;
  return {
    get healthy() {
      return healthy && !closed;
    },
    probe: async () => void (healthy = await answers()),
    subscribe: async (more) => {
      for (const channel of more) all.add(channel);
      const previous = current;
      current = await create();
      void closeSubscriber(runtime, previous);
    },
    close: async () => {
      closed = true;
      await closeSubscriber(runtime, current);
    },
  };
}

/**
 * A GLIDE client subscribed to `channels`, connected at once (a lazily connected one, as
 * applications often create theirs, would never subscribe, and every waiter would sleep out its
 * holder's lease), on RESP3 (GLIDE's pub/sub needs it). GLIDE 2.5+ subscribes in the background:
 * it resolves once the server confirmed the channels (at most 2 s), so that a PUBLISH now reaches it.
 */
async function createSubscriber(
  runtime: Runtime,
  factory: GlideFactory,
  config: object,
  channels: ReadonlySet<string>,
  deliver: (channel: string, message: string) => void,
): Promise<GlideSubscriber> {
  const client = await factory.createClient({
    ...config,
    lazyConnect: false,
    protocol: undefined,
    pubsubSubscriptions: {
      channelsAndPatterns: { [EXACT]: new Set(channels) },
      callback: (msg: { message: unknown; channel: unknown }) =>
        deliver(String(msg.channel), String(msg.message)),
    },
  });
  if (typeof client.getSubscriptions !== 'function') return client;
  const until = runtime.now() + CONFIRM_MS;
  while (runtime.now() < until) {
    const actual = await client.getSubscriptions().then(
      (s) => s.actualSubscriptions?.[EXACT],
      () => null,
    );
    if (actual === null || (actual && [...channels].every((c) => [...actual].some((a) => String(a) === c))))
      break;
    await sleep(runtime, POLL_MS);
  }
  return client;
}

/**
 * Closes a subscriber, unsubscribed first (at most 1 s): GLIDE 2.5+ would otherwise try to
 * subscribe its channels again on the client being dropped, and log an ERROR of its own.
 */
async function closeSubscriber(runtime: Runtime, client: GlideSubscriber): Promise<void> {
  const unsubscribed = client.unsubscribe?.(null, 1000).catch(() => undefined);
  if (unsubscribed) await settleWithin(runtime, unsubscribed, 1000);
  client.close();
}
