/**
 * Jest setup (jest.config.js `setupFilesAfterEnv`): a promise rejection that nobody handles fails
 * the test during which it surfaced, instead of scrolling past as a warning (or being swallowed).
 * A lock library that leaks one (an extension nobody awaits, a release after close) would crash a
 * user's process under Node's default `--unhandled-rejections=throw`, so a test must not pass with
 * one.
 *
 * The rejection is reported after the microtasks of its tick have run, which can be after the test
 * body returned: afterEach first lets one macrotask pass (through the real setImmediate, captured
 * here before any test can install fake timers), then fails the test with every reason seen.
 */
const realSetImmediate = globalThis.setImmediate;
const seen: unknown[] = [];
const onRejection = (reason: unknown): void => {
  seen.push(reason);
};

function describeReason(reason: unknown): string {
  if (reason instanceof Error) return reason.stack ?? `${reason.name}: ${reason.message}`;
  try {
    return JSON.stringify(reason);
  } catch {
    return String(reason);
  }
}

function failOnRejections(when: string): void {
  if (seen.length === 0) return;
  const reasons = seen.splice(0).map(describeReason);
  throw new Error(`${reasons.length} unhandled promise rejection(s) ${when}:\n${reasons.join('\n---\n')}`);
}

beforeAll(() => {
  process.on('unhandledRejection', onRejection);
});

afterEach(async () => {
  await new Promise<void>((resolve) => realSetImmediate(resolve));
  failOnRejections('during this test');
});

afterAll(async () => {
  await new Promise<void>((resolve) => realSetImmediate(resolve));
  process.off('unhandledRejection', onRejection);
  failOnRejections('in this file after its last test (e.g. in afterAll)');
});
