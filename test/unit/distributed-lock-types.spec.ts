import 'reflect-metadata';
import { join } from 'node:path';
import ts from 'typescript';
import { of, type Observable } from 'rxjs';
import { DistributedLock } from '../../lib/index.js';

/*
 * The decorator's typing (issue 40, item 6): with `onBusy: 'skip'` a busy lock resolves the call
 * with `undefined` without running the method, so a method declared `Promise<number>` must not
 * compile; `Promise<number | undefined>`, `Promise<void>` and Observables must. The
 * `@ts-expect-error` lines below are checked by `npm run lint` (tsc covers test/): an unused one is
 * an error there. The test underneath compiles the same declarations with the TypeScript API, so
 * that `npm test` checks them too, and the message a user reads.
 */

export class SkippingJobs {
  // @ts-expect-error onBusy 'skip' resolves undefined: a Promise<number> method must say so.
  @DistributedLock('count', { onBusy: 'skip' })
  async count(): Promise<number> {
    return 1;
  }

  @DistributedLock('count-or-nothing', { onBusy: 'skip' })
  async countOrNothing(): Promise<number | undefined> {
    return 1;
  }

  @DistributedLock('report', { onBusy: 'skip', holdAtLeast: 1000 })
  async report(): Promise<void> {}

  @DistributedLock('feed', { onBusy: 'skip' })
  feed(): Observable<number> {
    return of(1); // a skipped call completes empty: the type allows it
  }

  @DistributedLock('strict', { onBusy: 'throw' })
  async strict(): Promise<number> {
    return 1; // 'throw' (the default) never resolves undefined
  }

  // @ts-expect-error a synchronous method cannot be locked (the lock is asynchronous).
  @DistributedLock('sync')
  sync(): number {
    return 1;
  }
}

/**
 * Type-checks each source as if it were a file in this folder, with the repository's compiler
 * options, in one program (one program costs seconds): the diagnostics of each, in order.
 */
function diagnostics(sources: readonly string[]): string[][] {
  const root = join(import.meta.dirname, '..', '..');
  const files = new Map(
    sources.map((source, i) => [join(import.meta.dirname, `__typing-${i}__.ts`), source]),
  );
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  const host = ts.createCompilerHost(config.options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError, create) => {
    const source = files.get(name);
    return source === undefined
      ? getSourceFile(name, version, onError, create)
      : ts.createSourceFile(name, source, version);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(name) || fileExists(name);
  const program = ts.createProgram([...files.keys()], { ...config.options, noEmit: true }, host);
  return [...files.keys()].map((name) =>
    ts
      .getPreEmitDiagnostics(program, program.getSourceFile(name))
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')),
  );
}

const method = (onBusy: string, returns: string, body: string) => `
import 'reflect-metadata';
import { of, type Observable } from 'rxjs';
import { DistributedLock } from '../../lib/index.js';
void of;
export class Jobs {
  @DistributedLock('k', { onBusy: ${onBusy} })
  ${returns === 'Observable<number>' ? '' : 'async '}run(): ${returns} {
    ${body}
  }
}
`;

describe('@DistributedLock typing of onBusy', () => {
  test("onBusy 'skip' on a Promise<number> method does not compile, and the error says what to declare; T | undefined, void and Observables compile", () => {
    const cases = [
      ["'skip'", 'Promise<number>', 'return 1;'],
      ["'skip'", 'Promise<number | undefined>', 'return 1;'],
      ["'skip'", 'Promise<void>', 'return;'],
      ["'skip'", 'Observable<number>', 'return of(1);'],
      ["'throw'", 'Promise<number>', 'return 1;'],
    ] as const;
    const [refused, ...accepted] = diagnostics(
      cases.map(([onBusy, returns, body]) => method(onBusy, returns, body)),
    );
    expect(refused).toHaveLength(1);
    expect(refused![0]).toContain(
      "onBusy: 'skip' resolves undefined when the lock is busy: declare the method's result as Promise<T | undefined>",
    );
    expect(accepted.map((errors, i) => ({ case: cases[i + 1]!.join(' '), errors }))).toEqual(
      cases.slice(1).map((c) => ({ case: c.join(' '), errors: [] })),
    );
  });

  test('the declarations above still run: the decorator wraps every method', () => {
    for (const name of ['count', 'countOrNothing', 'report', 'feed', 'strict', 'sync'] as const) {
      expect(SkippingJobs.prototype[name].name).toBe(name);
    }
  });
});
