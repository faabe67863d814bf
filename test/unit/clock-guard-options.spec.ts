import { RedlockOptionsError } from '../../lib/index.js';
import { clockGuardFor, resolveLockOptions, resolveOptions } from '../../lib/core/resolve-options.js';

const nodes = ['redis://127.0.0.1:6379'];

describe('clockGuard option', () => {
  it('defaults to 500 ms, at most a quarter of the ttl', () => {
    expect(clockGuardFor(undefined, 10_000)).toBe(500);
    expect(clockGuardFor(undefined, 1000)).toBe(250);
    const engine = resolveOptions({ nodes });
    expect(resolveLockOptions(engine, { ttl: 400 }, false).clockGuard).toBe(100);
  });

  it('false turns it off', () => {
    const engine = resolveOptions({ nodes, clockGuard: false });
    expect(resolveLockOptions(engine, undefined, false).clockGuard).toBe(0);
  });

  it('more than a quarter of the ttl is a RedlockOptionsError naming the limit', () => {
    expect(() => resolveOptions({ nodes, ttl: 1000, clockGuard: 300 })).toThrow(RedlockOptionsError);
    expect(() => resolveOptions({ nodes, ttl: 1000, clockGuard: 300 })).toThrow(/at most 250 ms/);
    const engine = resolveOptions({ nodes, ttl: 10_000, clockGuard: 1000 });
    expect(() => resolveLockOptions(engine, { ttl: 2000 }, false)).toThrow(/clockGuard/);
    expect(resolveLockOptions(engine, { ttl: 4000 }, false).clockGuard).toBe(1000);
  });

  it('a negative guard is refused', () => {
    expect(() => resolveOptions({ nodes, clockGuard: -1 })).toThrow(RedlockOptionsError);
  });

  it('healHolds defaults to true and must be a boolean', () => {
    expect(resolveOptions({ nodes }).healHolds).toBe(true);
    expect(() => resolveOptions({ nodes, healHolds: 'no' as unknown as boolean })).toThrow(
      RedlockOptionsError,
    );
  });
});
