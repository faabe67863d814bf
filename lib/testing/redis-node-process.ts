import { onFreePort } from './free-port.js';
import type { RedisNodesOptions } from './redis-nodes.js';

/*
 * Launching one server of a RedisNodes set: a free port that no other open set holds, the
 * server's command line from the set's options (the wait until it accepts connections:
 * child-processes.ts, spawnServer).
 */

/**
 * Ports held by this process's open sets. `freePort` only asks the OS for a port that is free at
 * that instant, so two sets started at once (Promise.all in a test) could both be handed it, and
 * one of them fail to bind.
 */
const reserved = new Set<number>();

/** Runs `launch` on a free port that no open set holds, and holds it until {@link releasePorts}. */
export function onReservedPort(host: string, launch: (port: number) => Promise<unknown>): Promise<unknown> {
  return onFreePort(
    host,
    (port) => {
      reserved.add(port);
      return launch(port).catch((err: unknown) => {
        reserved.delete(port);
        throw err;
      });
    },
    (port) => reserved.has(port),
  );
}

/** Gives the ports of a closed set back. */
export function releasePorts(ports: readonly number[]): void {
  for (const port of ports) reserved.delete(port);
}

/** The command line of a node on `host`:`port` with its data in `dir`, kept as `o.persistence` says. */
export function serverArgs(o: RedisNodesOptions, host: string, port: string, dir: string): string[] {
  const args = ['--bind', host, '--dir', dir, '--daemonize', 'no', '--protected-mode', 'no'];
  args.push('--loglevel', 'notice', '--save', '');
  const fsync = { none: undefined, 'aof-always': 'always', 'aof-everysec': 'everysec' }[
    o.persistence ?? 'none'
  ];
  args.push('--appendonly', fsync ? 'yes' : 'no', ...(fsync ? ['--appendfsync', fsync] : []));
  const { tls } = o;
  if (tls) {
    args.push('--port', '0', '--tls-port', port, '--tls-cert-file', tls.certFile);
    args.push('--tls-key-file', tls.keyFile, '--tls-ca-cert-file', tls.caFile, '--tls-auth-clients', 'no');
  } else args.push('--port', port);
  if (o.debugCommands) args.push('--enable-debug-command', 'local');
  if (o.password) args.push('--requirepass', o.password);
  if (o.aclUser) args.push('--user', o.aclUser.username, 'on', `>${o.aclUser.password}`, '~*', '&*', '+@all');
  if (o.aclUser && !o.password) args.push('--user', 'default', 'off');
  args.push(...(o.extraArgs ?? []));
  return args;
}
