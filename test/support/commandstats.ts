/** A client with ioredis' `info` (an ioredis `Redis`, or one from `RedisNodes.client`). */
interface InfoClient {
  info(section: string): Promise<string>;
}

/**
 * A command's calls and refusals on one node since its last `CONFIG RESETSTAT` (`INFO
 * commandstats`; a subcommand is named like `client|reply`). Commands a Lua script runs count too.
 */
export async function commandStats(
  client: InfoClient,
  command: string,
): Promise<{ calls: number; rejected: number }> {
  const info = await client.info('commandstats');
  const line = new RegExp(
    `^cmdstat_${command.replace('|', '\\|')}:calls=(\\d+).*rejected_calls=(\\d+)`,
    'm',
  ).exec(info);
  return { calls: Number(line?.[1] ?? 0), rejected: Number(line?.[2] ?? 0) };
}
