import { isDeepStrictEqual } from 'node:util';
import { realRuntime } from '../../../lib/core/runtime.js';
import { RUN_ID } from '../../../lib/core/scripts/guards.js';
import type { LuaScript } from '../../../lib/core/scripts/lua.js';
import { MemoryServer, RedisNodes, type IoRedisTestClient } from '../../../lib/testing/index.js';
import { ClockFiles } from '../../support/clock-shim.js';
import { LISTENING, Random, SCRIPTS, type Case, type Write } from './differential-cases.js';

/*
 * The in-memory server's emulation of each script held to the Lua (issue 35, item 2; issue 37, item
 * 1): seeded random cases (differential-cases.ts) run through the script on a real redis-server and
 * through its emulation on a MemoryServer, and their replies, the keyspaces after (type, value,
 * PTTL) and the messages published must be equal, exactly. Both sides run on the same clock, which
 * stands still while a case writes its keyspace, and again (some time later) while its script runs:
 * the redis-server's wall clock frozen by the clock shim (test/support/clock-shim.ts), and the
 * MemoryServer's runtime.
 *
 * DIFFERENTIAL_CASES (default 250 per script) and DIFFERENTIAL_SEED (default 35) select the inputs.
 */

const CASES = Number(process.env.DIFFERENTIAL_CASES ?? 250);
const SEED = Number(process.env.DIFFERENTIAL_SEED ?? 35);

/** Every key with its type, PTTL and value, as the emulation's dump gives it. */
const DUMP = `
local out = {}
for _, key in ipairs(redis.call('KEYS', '*')) do
  local kind = redis.call('TYPE', key).ok
  local value = false
  if kind == 'string' then value = redis.call('GET', key)
  elseif kind == 'zset' then value = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  elseif kind == 'hash' then value = redis.call('HGETALL', key) end
  out[#out + 1] = {key, kind, redis.call('PTTL', key), value}
end
return out
`;

/** What one run shows: the reply (or that it failed), the keyspace after, the messages published. */
interface Outcome {
  reply: unknown;
  keyspace: unknown[];
  messages: string[][];
}

const clocks = new ClockFiles();

const FAILED = { failed: true };
const byKey = (a: unknown, b: unknown) =>
  String((a as string[])[0]).localeCompare(String((b as string[])[0]));

let nodes: RedisNodes;
let redis: IoRedisTestClient;
let subscriber: IoRedisTestClient;
let heard: string[][] = [];
/** The instant of the case: both clocks stand at it (from now on, moving forward between cases). */
let clockUs = Date.now() * 1000;
const memory = new MemoryServer({ runtime: { ...realRuntime, wallNow: () => clockUs / 1000 } });
let memoryHeard: string[][] = [];
for (const engine of LISTENING) {
  const channel = `__redlock_wake__:${engine}`;
  memory.subscribe(channel, (message) => memoryHeard.push([channel, message]) > 0);
}

beforeAll(async () => {
  nodes = await RedisNodes.start(1, { env: () => clocks.env('differential') });
  redis = nodes.client(0);
  subscriber = redis.duplicate() as IoRedisTestClient;
  subscriber.on('message', (channel: string, message: string) => heard.push([channel, message]));
  await subscriber.subscribe(...LISTENING.map((engine) => `__redlock_wake__:${engine}`));
});

afterAll(async () => {
  subscriber?.disconnect();
  await nodes?.close();
  clocks.close();
});

/**
 * One case on Redis: its keyspace written at `writtenUs`, then the script and a dump of every key at
 * `runUs`, each in one transaction on a clock that stands still.
 */
async function onRedis(script: LuaScript, c: Case, writtenUs: number, runUs: number): Promise<Outcome> {
  heard = [];
  clocks.freeze('differential', writtenUs);
  const writes = redis.multi().flushall();
  for (const [command, ...args] of c.state) writes.call(command, ...args);
  await writes.exec();
  clocks.freeze('differential', runUs);
  const run = redis.multi().eval(script.source, c.keys.length, ...c.keys, ...c.args);
  const [[failed, reply], [, dump]] = (await run.eval(DUMP, 0).exec()) as Array<[Error | null, unknown]>;
  await subscriber.ping(); // every message published in the transaction has arrived before this reply
  return {
    reply: failed ? FAILED : reply,
    keyspace: [...(dump as unknown[][])].sort(byKey),
    messages: heard,
  };
}

/** The same on the emulation. */
function onMemory(script: LuaScript, c: Case, writtenUs: number, runUs: number): Outcome {
  clockUs = writtenUs;
  memory.flushAll();
  c.state.forEach((write) => apply(write));
  memoryHeard = [];
  clockUs = runUs;
  let reply: unknown;
  try {
    reply = memory.call(['EVAL', script.source, String(c.keys.length), ...c.keys, ...c.args]);
  } catch {
    reply = FAILED;
  }
  const keyspace = memory.keys('*').map((key) => {
    const kind = memory.type(key);
    const value =
      kind === 'string'
        ? memory.get(key)
        : kind === 'zset'
          ? memory.zrange(key).flatMap(([member, score]) => [member, String(score)])
          : memory.hgetall(key).flat();
    return [key, kind, memory.pttl(key), value];
  });
  return { reply, keyspace: keyspace.sort(byKey), messages: memoryHeard };
}

function apply([command, key, ...args]: Write): void {
  if (command === 'SET') memory.set(key!, args[0]!);
  else if (command === 'ZADD')
    memory.zadd(key!, Number(args[1]), args[2]!); // NX
  else if (command === 'HSET') memory.hset(key!, args[0]!, args[1]!);
  else memory.pexpire(key!, Number(args[0]));
}

describe.each(SCRIPTS.map(([script, generate]) => [script.name, script, generate] as const))(
  'the emulation of %s',
  (name, script, generate) => {
    test(`agrees with the Lua on ${CASES} random cases (seed ${SEED})`, async () => {
      const rnd = new Random(SEED * 7919 + [...name].reduce((h, c) => h * 31 + c.charCodeAt(0), 0));
      for (let i = 0; i < CASES; i++) {
        // The keyspace is written, then the script runs 0 to 1001 ms later: leases run out on the way,
        // some exactly at the script's instant (a key whose PTTL is 0 is still there).
        const writtenUs = (clockUs += rnd.int(1, 50_000) * 1000 + rnd.int(0, 999));
        const runUs = writtenUs + rnd.pick([0, 0, 30, 100, 300, 1000, 1001]) * 1000;
        const c = generate(rnd, Math.floor(runUs / 1000));
        const [onServer, emulated] = [
          await onRedis(script, c, writtenUs, runUs),
          onMemory(script, c, writtenUs, runUs),
        ];
        if (i === 0) expect((await redis.time()).map(Number)).toEqual([Math.floor(runUs / 1e6), runUs % 1e6]);
        clockUs = runUs;
        if (script === RUN_ID) {
          expect([onServer.reply, emulated.reply]).toEqual([
            expect.stringMatching(/^[0-9a-f]{40}$/),
            memory.runId,
          ]);
        } else if (!isDeepStrictEqual(onServer, emulated)) {
          throw new Error(
            `${name}, seed ${SEED}, case ${i}: the emulation disagrees with the Lua\n` +
              JSON.stringify({ keys: c.keys, args: c.args, state: c.state }) +
              `\nredis:  ${JSON.stringify(onServer)}\nmemory: ${JSON.stringify(emulated)}`,
          );
        }
      }
    });
  },
);
