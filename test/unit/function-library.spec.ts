import { runCli } from '../../lib/cli/run.js';
import { resolveOptions } from '../../lib/core/resolve-options.js';
import { ACL_PROBE } from '../../lib/core/scripts/acl-probe.js';
import { CLOCK_MARK, IDENTITY_CHECK, RUN_ID, SEED_SLOT_MARKERS } from '../../lib/core/scripts/guards.js';
import { INSPECT } from '../../lib/core/scripts/inspect.js';
import {
  FUNCTION_LIBRARY,
  functionLibrary,
  LIBRARY_SCRIPTS,
  LOCK_SCRIPTS,
} from '../../lib/core/scripts/library.js';
import { luaScript } from '../../lib/core/scripts/lua.js';
import { EXTEND, EXTEND_MANY } from '../../lib/core/scripts/extend.js';
import { LET_GO, RELEASE_MANY } from '../../lib/core/scripts/let-go.js';
import { READ_EXTEND_SCRIPT, READ_INSPECT_SCRIPT, READ_LET_GO_SCRIPT } from '../../lib/core/scripts/read.js';
import { RedlockOptionsError } from '../../lib/index.js';

/*
 * The FUNCTION library of `scripts: 'functions'` (scripts/library.ts), as text: names, flags and
 * the command line that prints it. Loading and calling it on real servers:
 * test/integration/deployments/functions.spec.ts and the conformance table's functions columns.
 */

/** The `redis.register_function{...}` block of `name` in `source`. */
function registration(source: string, name: string): string {
  const start = source.indexOf(`function_name = '${name}'`);
  expect(start).toBeGreaterThan(0);
  return source.slice(start, source.indexOf('callback', start));
}

describe('the FUNCTION library', () => {
  test('holds every script the voter and its guards send, each named for its code and the version', () => {
    for (const script of [
      ...LOCK_SCRIPTS,
      RUN_ID,
      IDENTITY_CHECK,
      CLOCK_MARK,
      SEED_SLOT_MARKERS,
      ACL_PROBE,
    ]) {
      const name = FUNCTION_LIBRARY.functionOf(script);
      expect(name).toBe(
        `nql_${FUNCTION_LIBRARY.version}_${script.name.replace(/-/g, '_')}_${script.sha.slice(0, 12)}`,
      );
      expect(FUNCTION_LIBRARY.source).toContain(`function_name = '${name}'`);
    }
    const names = LIBRARY_SCRIPTS.map((s) => FUNCTION_LIBRARY.functionOf(s));
    expect(new Set(names).size).toBe(LIBRARY_SCRIPTS.length);
    expect(
      FUNCTION_LIBRARY.source.startsWith(`#!lua name=nest_quorum_lock_${FUNCTION_LIBRARY.version}\n`),
    ).toBe(true);
    expect(FUNCTION_LIBRARY.functionOf(luaScript('other', 'return 1'))).toBeUndefined();
  });

  test('a changed script changes its own name and the version, so both versions can be loaded side by side', () => {
    const changed = LIBRARY_SCRIPTS.map((s) =>
      s === INSPECT ? luaScript(s.name, `${s.source}\n`, s.flags) : s,
    );
    const next = functionLibrary(changed);
    expect(next.version).not.toBe(FUNCTION_LIBRARY.version);
    expect(next.name).not.toBe(FUNCTION_LIBRARY.name);
    const [before, after] = [FUNCTION_LIBRARY.functionOf(INSPECT)!, next.functionOf(changed[5]!)!];
    expect(after.split('_').at(-1)).not.toBe(before.split('_').at(-1));
    // No function name of one version is a name of the other.
    const all = (lib: typeof next, scripts: typeof changed) => scripts.map((s) => lib.functionOf(s));
    const old = new Set(all(FUNCTION_LIBRARY, [...LIBRARY_SCRIPTS]));
    expect(all(next, changed).filter((n) => old.has(n))).toEqual([]);
  });

  test('flags: no-writes for the read-only scripts (FCALL_RO), allow-cross-slot-keys for the guards that reach across slots, allow-oom for extending and letting go', () => {
    const flags = (script: typeof INSPECT) =>
      registration(FUNCTION_LIBRARY.source, FUNCTION_LIBRARY.functionOf(script)!);
    for (const script of [INSPECT, READ_INSPECT_SCRIPT, RUN_ID])
      expect(flags(script)).toContain("flags = {'no-writes'}");
    for (const script of [IDENTITY_CHECK, CLOCK_MARK, SEED_SLOT_MARKERS])
      expect(flags(script)).toContain("flags = {'allow-cross-slot-keys'}");
    const keepOrFree = [EXTEND, EXTEND_MANY, LET_GO, RELEASE_MANY, READ_EXTEND_SCRIPT, READ_LET_GO_SCRIPT];
    for (const script of keepOrFree) expect(flags(script)).toContain("flags = {'allow-oom'}");
    for (const script of LOCK_SCRIPTS.filter(
      (s) => s !== INSPECT && s !== READ_INSPECT_SCRIPT && !keepOrFree.includes(s),
    ))
      expect(flags(script)).toContain('flags = {}');
    expect(registration(FUNCTION_LIBRARY.source, FUNCTION_LIBRARY.probe)).toContain("flags = {'no-writes'}");
  });

  test('npx nest-quorum-lock functions prints it; anything else prints the usage', () => {
    expect(runCli(['functions'])).toEqual({ stdout: FUNCTION_LIBRARY.source, stderr: '', code: 0 });
    expect(runCli([]).stdout).toContain(
      'npx nest-quorum-lock functions | redis-cli -h HOST -p PORT -x FUNCTION LOAD',
    );
    const wrong = runCli(['function']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('unknown command: function');
  });

  test("the option scripts is 'eval' (default) or 'functions'", () => {
    const nodes = ['redis://127.0.0.1:6379'];
    expect(resolveOptions({ nodes }).scripts).toBe('eval');
    expect(resolveOptions({ nodes, scripts: 'functions' }).scripts).toBe('functions');
    const err = (() => {
      try {
        resolveOptions({ nodes, scripts: 'fcall' as 'functions' });
      } catch (e) {
        return e;
      }
    })() as RedlockOptionsError;
    expect(err).toBeInstanceOf(RedlockOptionsError);
    expect(err.option).toBe('scripts');
    expect(err.message).toContain('got fcall. Use');
  });
});
