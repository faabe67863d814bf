/**
 * The order of one voter's acquires and let-gos of a lock, where the client may send a command again
 * after later ones: a Cluster client follows MOVED, ASK, TRYAGAIN and CLUSTERDOWN by sending the
 * command again once it knows where (a slot map refreshed, a failover), and a server that lost its
 * functions has the call sent again after the library is loaded. Elsewhere commands leave and run in
 * the order they were given, and the voter has none of this.
 *
 * - A let-go waits for this voter's acquire of the same value: a let-go that frees a late grant
 *   must run after it.
 * - An acquire waits for this voter's let-go of the same key: a release (not awaited by the engine)
 *   runs before the same voter's next vote on that key, which would otherwise find its own lock
 *   still held (a re-acquire, a hand-over to the next waiter of this engine).
 */
export class SendOrder {
  /** Acquires in flight by value. */
  private readonly acquiring = new Map<string, Promise<unknown>>();
  /** Let-gos in flight by lock key. */
  private readonly lettingGo = new Map<string, Promise<unknown>>();

  /** Sends an acquire of `keys` for `value` once this voter's let-gos of those keys settled. */
  acquire<T>(keys: readonly string[], value: string, send: () => Promise<T>): Promise<T> {
    const before = keys.flatMap((key) => {
      const letGo = this.lettingGo.get(key);
      return letGo ? [letGo] : [];
    });
    const sent = before.length === 0 ? send() : Promise.allSettled(before).then(send);
    track(this.acquiring, value, sent);
    return sent;
  }

  /** Sends a let-go of `keys` for `value` once this voter's acquire of `value` settled. */
  letGo(keys: readonly string[], value: string, send: () => Promise<unknown>): Promise<unknown> {
    const acquiring = this.acquiring.get(value);
    const sent = acquiring ? acquiring.then(send, send) : send();
    for (const key of keys) track(this.lettingGo, key, sent);
    return sent;
  }
}

/** Keeps `sent` under `id` until it settles (unless a later one took its place). */
function track(inFlight: Map<string, Promise<unknown>>, id: string, sent: Promise<unknown>): void {
  inFlight.set(id, sent);
  const settled = () => void (inFlight.get(id) === sent && inFlight.delete(id));
  sent.then(settled, settled);
}
