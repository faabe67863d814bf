/**
 * Which `@DistributedLock` method raised a lock error: the interceptor's log line names it, since
 * the route that reached it (a controller calling a service) is another class and method.
 */
const raiserOf = new WeakMap<object, string>();

/** Called by the decorator when its own acquire failed (not the method's own errors). */
export function noteRaisedBy(err: unknown, where: string): void {
  if (typeof err === 'object' && err !== null && !raiserOf.has(err)) raiserOf.set(err, where);
}

/** `Class.method` of the decorated method whose acquire raised `err`, when one did. */
export function raisedBy(err: object): string | undefined {
  return raiserOf.get(err);
}
