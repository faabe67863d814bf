/**
 * Loads an optional peer dependency (`@nestjs/microservices`, `@nestjs/websockets`, `graphql`) the
 * first time a request of its execution context fails on a lock, and keeps the promise.
 *
 * Why not a static import: users without that package must still load this library. Why not
 * duck typing: Nest's `BaseRpcExceptionFilter` and `BaseWsExceptionFilter` test
 * `exception instanceof RpcException` / `WsException`, so only the app's own class is understood.
 * A context of type `rpc` or `ws` only exists when the app itself loaded that package, so the
 * import resolves to the very module instance the app's filters use.
 */
export function optionalPeer<T>(load: () => Promise<T>): () => Promise<T> {
  let cached: Promise<T> | undefined;
  return () => {
    // A failed load is not cached: it is retried at the next error rather than poisoned forever.
    cached ??= load().catch((err: unknown) => {
      cached = undefined;
      throw err;
    });
    return cached;
  };
}
