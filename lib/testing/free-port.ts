import { createServer } from 'node:net';

/** A TCP port that was free on `host` a moment ago (the OS picks it). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** How many ports {@link onFreePort} tries before it gives up. */
export const PORT_ATTEMPTS = 10;

/**
 * Whether `err` says that a server could not listen because its port was in use: the errors the
 * launchers build from a server's output (`bind: Address already in use`) and Node's `EADDRINUSE`.
 */
export function isPortTaken(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (err as NodeJS.ErrnoException).code === 'EADDRINUSE' || /Address already in use/i.test(err.message);
}

/**
 * Runs `start` with a port that {@link freePort} found free (and `avoid` does not refuse: e.g. one
 * of this process's stopped servers), and again with another one, up to {@link PORT_ATTEMPTS} times
 * in all, when `start` failed because the port was taken. `freePort` closes its socket before the
 * server binds the port: in between another process (an outgoing connection's ephemeral port,
 * another test run's server) may take it. `start` must end what it started before it rejects; any
 * other failure is thrown at once.
 */
export async function onFreePort<T>(
  host: string,
  start: (port: number) => Promise<T>,
  avoid?: (port: number) => boolean,
): Promise<T> {
  const taken: number[] = [];
  for (;;) {
    let port = await freePort(host);
    while (avoid?.(port)) port = await freePort(host);
    try {
      return await start(port);
    } catch (err) {
      if (!isPortTaken(err)) throw err;
      taken.push(port);
      if (taken.length >= PORT_ATTEMPTS) {
        const message = err instanceof Error ? err.message : String(err);
        throw new Error(
          `every port tried on ${host} was taken before the server could bind it (${taken.join(', ')}): ` +
            `is something binding ports in a loop?\nThe last attempt: ${message}`,
          { cause: err },
        );
      }
    }
  }
}
