import type { LuaScript } from '../../core/scripts/lua.js';
import { FENCED_WRITER_SCRIPTS } from '../../fencing/fenced-writer.js';
import type { Emulation } from './scripts.js';

/*
 * FencedWriter's two scripts (fencing/fenced-writer.ts) emulated, for InMemoryFencedWriter: held to
 * the Lua by the shared behaviour table of test/integration/fencing/fenced-doubles.spec.ts, which
 * runs the real writer on a redis-server and on a MemoryServer.
 */

/** FENCED_HGETALL: raise the fence to the token unless a higher one is there; return the hash. */
const fencedRead: Emulation = (db, [key], [fence, tokenArg]) => {
  const stored = db.hget(key, fence) ?? '0';
  const [last, token] = [luaNumber(stored, key), luaNumber(tokenArg, key)];
  const accepted = token >= last ? 1 : 0;
  if (accepted && token > last) db.hset(key, fence, tokenArg);
  const out: unknown[] = [accepted, accepted ? tokenArg : stored];
  for (const [field, value] of db.hgetall(key)) if (field !== fence) out.push(field, value);
  return out;
};

/** FENCED_HSET: set the fields and the fence unless a higher token read or wrote the hash. */
const fencedWrite: Emulation = (db, [key], [fence, tokenArg, ...pairs]) => {
  const last = db.hget(key, fence);
  if (last !== undefined && luaNumber(last, key) > luaNumber(tokenArg, key)) return [0, last];
  db.hset(key, fence, tokenArg);
  for (let i = 0; i + 1 < pairs.length; i += 2) db.hset(key, pairs[i], pairs[i + 1]);
  return [1, tokenArg];
};

/** Lua's tonumber on a stored string; a fence that is not a number fails the script, as in Redis. */
function luaNumber(value: string, key: string): number {
  const n = value.trim() === '' ? NaN : Number(value);
  if (Number.isNaN(n))
    throw new Error(
      `ERR fenced script on "${key}": the fence field holds ${JSON.stringify(value)}, not a number`,
    );
  return n;
}

export const FENCED_SCRIPTS: Array<[LuaScript, Emulation]> = [
  [FENCED_WRITER_SCRIPTS.read, fencedRead],
  [FENCED_WRITER_SCRIPTS.write, fencedWrite],
];
