import { FUNCTION_LIBRARY } from '../scripts/library.js';
import type { LuaScript } from '../scripts/lua.js';
import type { Finding, ServerSend } from './server.js';

/*
 * The option `scripts: 'functions'`: the same scripts called as this version's FUNCTION library
 * (scripts/library.ts) with FCALL / FCALL_RO, for servers and proxies that refuse EVAL. The library
 * is loaded where the connection's ACL user may (FUNCTION LOAD), on each new connection of each
 * shard before it votes, and again when a server lost it (a restart without persistence, FUNCTION
 * FLUSH); elsewhere an administrator loads it (`npx nest-quorum-lock functions`), and until then
 * the server does not vote, with an error that says so.
 */

/** The library is not on the server, and this connection may not load it. */
export class FunctionsNotLoadedError extends Error {
  constructor(readonly denial: string) {
    super(
      `the FUNCTION library ${FUNCTION_LIBRARY.name} (this version's scripts, option scripts: 'functions') ` +
        `is not on this server (never loaded, or lost in a restart without persistence or a FUNCTION FLUSH) ` +
        `and its ACL user may not load it (${denial.split('\n')[0]}): ${LOAD_FIX}`,
    );
    this.name = 'FunctionsNotLoadedError';
  }
}

const LOAD_FIX =
  'load it as an administrator with `npx nest-quorum-lock functions | redis-cli -h HOST -p PORT -x FUNCTION LOAD` ' +
  '(on every master of a Cluster), or grant the lock user +function|load';

/** Runs `script` as its function in the library, loading the library once when the server lacks it. */
export function callFunction(
  send: ServerSend,
  script: LuaScript,
  tail: readonly string[],
  loadVia: ServerSend,
): Promise<unknown> {
  const name = FUNCTION_LIBRARY.functionOf(script);
  if (name === undefined) return Promise.reject(new Error(`${script.name} is not in the FUNCTION library`));
  const command = [script.flags.readOnly ? 'FCALL_RO' : 'FCALL', name, ...tail];
  return send(command).catch(async (err: unknown) => {
    if (!isMissingFunction(err)) throw err;
    await loadFunctions(loadVia);
    return send(command);
  });
}

/**
 * Makes sure the server `send` reaches has the library: present, or loaded now. Rejects with
 * {@link FunctionsNotLoadedError} when it lacks it and the ACL user may not FUNCTION LOAD.
 */
export async function ensureFunctions(send: ServerSend): Promise<'present' | 'loaded'> {
  try {
    await send(['FCALL_RO', FUNCTION_LIBRARY.probe, '0']);
    return 'present';
  } catch (err) {
    // Any other refusal (FCALL_RO denied by the ACL...) is for the ACL probe to name.
    if (!isMissingFunction(err)) return 'present';
  }
  await loadFunctions(send);
  return 'loaded';
}

/** FUNCTION LOAD of the library; another client that loaded it first is as good. */
export async function loadFunctions(send: ServerSend): Promise<void> {
  try {
    await send(['FUNCTION', 'LOAD', FUNCTION_LIBRARY.source]);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/already exists/i.test(message)) return;
    if (/NOPERM/.test(message)) throw new FunctionsNotLoadedError(message);
    throw err;
  }
}

/** Preflight's finding for a server whose ACL user may not load the missing library. */
export function functionsFinding(err: FunctionsNotLoadedError, user: string | undefined): Finding {
  return {
    severity: 'error',
    problem:
      `it lacks the FUNCTION library ${FUNCTION_LIBRARY.name} (version ${FUNCTION_LIBRARY.version} of the lock's ` +
      `scripts, option scripts: 'functions') and its ACL user "${user ?? 'default'}" may not FUNCTION LOAD it`,
    fix: LOAD_FIX,
  };
}

/** "ERR Function not found" (Redis 7, Valkey). */
function isMissingFunction(err: unknown): boolean {
  return err instanceof Error && /Function not found/i.test(err.message);
}
