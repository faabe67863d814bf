import type { LuaScript } from '../../core/scripts/lua.js';
import { FENCED_WRITER_SCRIPTS } from '../../fencing/fenced-writer.js';

type Emulated = (key: string, args: readonly string[]) => unknown[];

/**
 * Redis hashes in memory, answering `FencedWriter`'s two scripts as a Redis server would (EVALSHA,
 * NOSCRIPT, EVAL), so that the writer's own code (its checks, its reply decoding) runs unchanged
 * over it. Each script is its Lua in TypeScript, held to the Lua by the shared behaviour table of
 * test/integration/fencing/fenced-doubles.spec.ts, which runs both on the same calls.
 */
export class MemoryHashes {
  private readonly hashes = new Map<string, Map<string, string>>();
  private readonly bySha = new Map<string, Emulated>();
  private readonly bySource = new Map<string, Emulated>();
  /** SHAs "loaded" by an EVAL: the first EVALSHA of a script gets NOSCRIPT, as on a fresh server. */
  private readonly loaded = new Set<string>();

  constructor() {
    const { read, write } = FENCED_WRITER_SCRIPTS;
    this.add(read, (key, [fence, token]) => this.fencedRead(key, fence!, token!));
    this.add(write, (key, [fence, token, ...pairs]) => this.fencedWrite(key, fence!, token!, pairs));
  }

  /** One raw command, as the writer sends it: `EVALSHA sha numkeys ...` or `EVAL source numkeys ...`. */
  readonly send = (command: readonly string[]): Promise<unknown> => {
    const [name, script, numKeys, ...rest] = command;
    const count = Number(numKeys);
    if (name === 'EVALSHA') return this.evalsha(script!, count, ...rest);
    if (name === 'EVAL') return this.eval(script!, count, ...rest);
    return Promise.reject(new Error(`ERR this in-memory store answers FencedWriter scripts only (${name})`));
  };

  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown> {
    const script = this.loaded.has(sha) ? this.bySha.get(sha) : undefined;
    if (!script) return Promise.reject(new Error('NOSCRIPT No matching script. Please use EVAL.'));
    return this.call(script, numKeys, keysAndArgs);
  }

  eval(source: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown> {
    const script = this.bySource.get(source);
    if (!script)
      return Promise.reject(new Error('ERR this in-memory store answers FencedWriter scripts only'));
    for (const [sha, emulated] of this.bySha) if (emulated === script) this.loaded.add(sha);
    return this.call(script, numKeys, keysAndArgs);
  }

  /** What HGETALL would return for `key` (the fence field included), or undefined when it does not exist. */
  get(key: string): Record<string, string> | undefined {
    const hash = this.hashes.get(key);
    return hash && Object.fromEntries(hash);
  }

  /** Plain HSET, no fencing: what the application's own setup writes. */
  set(key: string, fields: Readonly<Record<string, string | number>>): void {
    this.hset(key, Object.entries(fields));
  }

  /** Removes every hash (FLUSHALL). */
  clear(): void {
    this.hashes.clear();
  }

  /** HSET of field-value pairs in the order given (a later value of a field wins, as in Redis). */
  private hset(key: string, pairs: ReadonlyArray<readonly [string, string | number]>): void {
    const hash = this.hashes.get(key) ?? new Map<string, string>();
    for (const [field, value] of pairs) hash.set(field, String(value));
    if (hash.size > 0) this.hashes.set(key, hash);
  }

  private add(script: LuaScript, emulated: Emulated): void {
    this.bySha.set(script.sha, emulated);
    this.bySource.set(script.source, emulated);
  }

  private call(
    script: Emulated,
    numKeys: number,
    keysAndArgs: readonly (string | number)[],
  ): Promise<unknown> {
    // In the executor: synchronous, so atomic like a script on the server; a throw rejects, as a reply would.
    return new Promise((resolve) => {
      const strings = keysAndArgs.map(String);
      resolve(script(strings[0]!, strings.slice(numKeys)));
    });
  }

  /** FENCED_HGETALL: raise the fence to the token unless a higher one is there; return the hash. */
  private fencedRead(key: string, fence: string, tokenArg: string): unknown[] {
    const stored = this.hashes.get(key)?.get(fence) ?? '0';
    const last = luaNumber(stored, key);
    const token = luaNumber(tokenArg, key);
    const accepted = token >= last ? 1 : 0;
    if (accepted && token > last) this.hset(key, [[fence, tokenArg]]);
    const out: unknown[] = [accepted, accepted ? tokenArg : stored];
    for (const [field, value] of this.hashes.get(key) ?? []) if (field !== fence) out.push(field, value);
    return out;
  }

  /** FENCED_HSET: set the fields and the fence unless a higher token read or wrote the hash. */
  private fencedWrite(key: string, fence: string, tokenArg: string, pairs: readonly string[]): unknown[] {
    const last = this.hashes.get(key)?.get(fence);
    if (last !== undefined && luaNumber(last, key) > luaNumber(tokenArg, key)) return [0, last];
    const fields: Array<[string, string]> = [[fence, tokenArg]];
    for (let i = 0; i + 1 < pairs.length; i += 2) fields.push([pairs[i]!, pairs[i + 1]!]);
    this.hset(key, fields);
    return [1, tokenArg];
  }
}

/** Lua's tonumber on a stored string; a fence that is not a number fails the script, as in Redis. */
function luaNumber(value: string, key: string): number {
  const n = value.trim() === '' ? NaN : Number(value);
  if (Number.isNaN(n))
    throw new Error(
      `ERR fenced script on "${key}": the fence field holds ${JSON.stringify(value)}, not a number`,
    );
  return n;
}
