import { isDeepStrictEqual } from 'node:util';

/**
 * Reads until the value equals `expected` or `within` ms have passed, and returns the last read.
 * For what lands a moment after the call that caused it: a one-way release resolves when its bytes
 * left this process, so another connection may still read the key for a moment after it. The caller
 * asserts on the returned value, so a value that never settles still fails the test (with the value
 * it last saw).
 */
export async function eventually<T>(read: () => T | Promise<T>, expected: T, within = 2000): Promise<T> {
  const deadline = performance.now() + within;
  for (;;) {
    const value = await read();
    if (isDeepStrictEqual(value, expected) || performance.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
