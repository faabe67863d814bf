import { createRequire, syncBuiltinESMExports } from 'node:module';

/*
 * A run whose only input is its seed: while sealed, the real clocks, timers and randomness throw
 * when anything calls them (the engine, the in-memory transport, the simulator's own world), so a
 * leak past the injected runtime fails the run at once instead of making its replay drift. The
 * simulator's pump keeps the one real primitive it needs (setImmediate, to drain microtasks between
 * events), taken before the seal.
 */

const require = createRequire(import.meta.url);
const crypto = require('node:crypto') as Record<string, unknown>;

/** The real setImmediate, for the pump only. */
export const realSetImmediate: typeof setImmediate = globalThis.setImmediate;

/** What a leak throws. */
export class SealBroken extends Error {
  constructor(what: string) {
    super(`${what} was called during a simulated run: it must go through the injected runtime`);
    this.name = 'SealBroken';
  }
}

type Patch = [target: Record<string, unknown>, name: string];

const GLOBALS: Patch[] = [
  [globalThis as unknown as Record<string, unknown>, 'setTimeout'],
  [globalThis as unknown as Record<string, unknown>, 'setInterval'],
  [globalThis as unknown as Record<string, unknown>, 'setImmediate'],
  [globalThis as unknown as Record<string, unknown>, 'queueMicrotask'],
  [Date as unknown as Record<string, unknown>, 'now'],
  [Math as unknown as Record<string, unknown>, 'random'],
  [performance as unknown as Record<string, unknown>, 'now'],
  [process as unknown as Record<string, unknown>, 'hrtime'],
  [process as unknown as Record<string, unknown>, 'nextTick'],
  [crypto, 'randomBytes'],
  [crypto, 'randomUUID'],
  [crypto, 'randomInt'],
  [globalThis.crypto as unknown as Record<string, unknown>, 'getRandomValues'],
  [globalThis.crypto as unknown as Record<string, unknown>, 'randomUUID'],
];

/** A Date that cannot be made without an argument (`new Date()` reads the real clock). */
const RealDate = Date;
const SealedDate = new Proxy(RealDate, {
  construct(target, args: unknown[], newTarget) {
    if (args.length === 0) throw new SealBroken('new Date()');
    return Reflect.construct(target, args, newTarget) as object;
  },
  apply() {
    throw new SealBroken('Date()');
  },
});

let depth = 0;
let saved: Array<[Record<string, unknown>, string, unknown]> = [];

/** Seals (nested seals count): every call listed above throws SealBroken until {@link unseal}. */
export function seal(): void {
  if (depth++ > 0) return;
  saved = GLOBALS.map(([target, name]) => [target, name, target[name]]);
  for (const [target, name] of GLOBALS) {
    const what = `${target === globalThis ? '' : nameOf(target)}${name}`;
    target[name] = () => {
      throw new SealBroken(what);
    };
  }
  (globalThis as { Date: DateConstructor }).Date = SealedDate;
  syncBuiltinESMExports();
}

/** Undoes {@link seal} (the outermost one). */
export function unseal(): void {
  if (--depth > 0) return;
  for (const [target, name, value] of saved) target[name] = value;
  (globalThis as { Date: DateConstructor }).Date = RealDate;
  syncBuiltinESMExports();
}

function nameOf(target: unknown): string {
  if (target === Date) return 'Date.';
  if (target === Math) return 'Math.';
  if (target === performance) return 'performance.';
  if (target === process) return 'process.';
  if (target === crypto || target === globalThis.crypto) return 'crypto.';
  return '';
}
