import { settleWithin, startTimeout } from '../../timeouts.js';

/** A GLIDE client class with its async factory (GlideClient, GlideClusterClient). */
export interface GlideFactory {
  createClient(config: object): Promise<GlideSubscriberClient>;
}

/** The members of a GLIDE subscriber client used here. */
export interface GlideSubscriberClient {
  close(): void;
  /** GLIDE 2.5+: the subscriptions asked for and those the server confirmed. */
  getSubscriptions?(): Promise<{ actualSubscriptions?: Partial<Record<number, Set<unknown>>> }>;
  /** GLIDE 2.5+: drops channels (null: all) and waits until the server confirmed, at most `timeoutMs`. */
  unsubscribe?(channels: null, timeoutMs: number): Promise<void>;
}

/**
 * Closes a subscriber without an ERROR line from GLIDE. GLIDE 2.5+ keeps each client's wanted
 * channels and re-subscribes them in the background whenever a connection lost them; closing
 * drops the connection, so that task tries once more on a client that is gone and logs
 * `pubsub_synchronizer - Failed to subscribe ... Internal client has been dropped` through the
 * application's logger. Unsubscribing first (the wanted channels emptied, the server's
 * confirmation awaited, at most `timeoutMs`) leaves it nothing to do. Never rejects.
 */
export async function closeGlideSubscriber(client: GlideSubscriberClient, timeoutMs = 1000): Promise<void> {
  if (typeof client.unsubscribe === 'function') {
    await settleWithin(
      client.unsubscribe(null, timeoutMs).catch(() => undefined),
      timeoutMs + 100,
    );
  }
  client.close();
}

/** How long a new subscriber waits for the server to confirm its channels, at most, ms. */
const CONFIRM_MS = 2000;
const POLL_MS = 20;

/**
 * A GLIDE subscriber of `channels` (exact names), created from `config` (a client's configuration:
 * addresses, credentials, TLS...), delivering to `deliver`. GLIDE applies subscriptions when a
 * client is created, and:
 * - `lazyConnect` is turned off: a lazily connected subscriber never sends a command, so it would
 *   never connect, nor subscribe (an application's clients often are lazy; the subscriber took
 *   that over from them, and every waiter then slept until the holder's lease ran out: FAULTS_CLIENT
 *   =glide S0 had 2-3.5% of its grants wait for another hold, instead of most);
 * - GLIDE 2.5+ subscribes in the background once connected: it resolves when the server confirmed
 *   the channels (at most 2 s), so that "subscribed" means a PUBLISH now reaches it.
 */
export async function createGlideSubscriber(
  factory: GlideFactory,
  config: object,
  channels: Iterable<string>,
  deliver: (channel: string, message: string) => void,
): Promise<GlideSubscriberClient> {
  const wanted = new Set(channels);
  const client = await factory.createClient({
    ...config,
    lazyConnect: false,
    pubsubSubscriptions: {
      channelsAndPatterns: { 0: new Set(wanted) }, // 0: exact channel names
      callback: (msg: { message: unknown; channel: unknown }) =>
        deliver(String(msg.channel), String(msg.message)),
    },
  });
  if (typeof client.getSubscriptions !== 'function') return client;
  const until = performance.now() + CONFIRM_MS;
  while (performance.now() < until) {
    const state = await client.getSubscriptions().catch(() => undefined);
    const actual = state?.actualSubscriptions?.[0];
    if (!state || (actual && [...wanted].every((c) => [...actual].some((a) => String(a) === c)))) break;
    await new Promise<void>((resolve) => startTimeout(POLL_MS, resolve));
  }
  return client;
}
