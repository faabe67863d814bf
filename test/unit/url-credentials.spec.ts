import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { Redlock, RedlockModule, RedlockOptionsError } from '../../lib/index.js';
import { resolveOptions } from '../../lib/core/resolve-options.js';
import { redactUrl } from '../../lib/core/transport/urls.js';

/**
 * A password with an unencoded '@' or '#' (issue 29, item 5): the URL is a RedlockOptionsError at
 * bootstrap that says how to encode it, and nothing logged or thrown shows any part of it.
 */

const SECRET = 'p@ss#1';
const MALFORMED = `redis://:${SECRET}@127.0.0.1:7404`;
/** Every piece of the secret that a parser splitting at '@' or '#' could show. */
const PIECES = [SECRET, 'p@ss', 'ss#1', '@ss', 'ss#'];

describe('URL credentials', () => {
  test('redaction masks everything between // and the last @', () => {
    expect(redactUrl(MALFORMED)).toBe('redis://***@127.0.0.1:7404');
    expect(redactUrl('redis://user:a@b#c@host:6379/0')).toBe('redis://***@host:6379/0');
    expect(redactUrl('rediss://locker:s3cret@host:6380')).toBe('rediss://locker:***@host:6380');
    expect(redactUrl(`redis://:${encodeURIComponent(SECRET)}@host:6379`)).toBe('redis://:***@host:6379');
    expect(redactUrl('redis://host:6379/0?password=secret&db=1')).toBe(
      'redis://host:6379/0?password=***&db=1',
    );
    expect(redactUrl('redis://host:6379')).toBe('redis://host:6379');
  });

  test.each([
    MALFORMED,
    'redis://user:pa/ss@127.0.0.1:6379',
    'redis://user:pa?ss@127.0.0.1:6379',
    'redis://:p@ss@127.0.0.1:6379',
  ])('%s is a RedlockOptionsError that shows the fix and not the password', (url) => {
    let thrown: unknown;
    try {
      resolveOptions({ nodes: ['redis://127.0.0.1:7401', url] });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(RedlockOptionsError);
    const err = thrown as RedlockOptionsError;
    expect(err.option).toBe('nodes[1]');
    expect(err.message).toContain('encodeURIComponent(password)');
    expect(err.message).toContain('%40');
    expect(err.message).toContain('%23');
    const password = url.slice(url.indexOf('//') + 2, url.lastIndexOf('@')).split(':')[1]!;
    expect(`${err.message}\n${err.stack ?? ''}`).not.toContain(password);
  });

  test('the same password percent-encoded is accepted', () => {
    expect(() =>
      resolveOptions({ nodes: [`redis://:${encodeURIComponent(SECRET)}@127.0.0.1:7404`] }),
    ).not.toThrow();
  });

  test('no log line, error or output ever contains the secret: engine and module bootstrap', async () => {
    const written: string[] = [];
    const capture = (stream: NodeJS.WriteStream) => {
      const original = stream.write.bind(stream);
      stream.write = ((chunk: unknown, ...rest: unknown[]) => {
        written.push(String(chunk));
        return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof stream.write;
      return () => void (stream.write = original);
    };
    const restore = [capture(process.stdout), capture(process.stderr)];
    const lines: string[] = [];
    const logger = {
      log: (m: string) => lines.push(m),
      warn: (m: string) => lines.push(m),
      error: (m: string) => lines.push(m),
    };
    const errors: unknown[] = [];
    try {
      try {
        new Redlock({ nodes: [MALFORMED, 'redis://127.0.0.1:7405', 'redis://127.0.0.1:7406'], logger });
      } catch (err) {
        errors.push(err);
      }
      // The module, with Nest's own logger: bootstrap fails with the same error.
      const moduleRef = Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({ nodes: [MALFORMED, 'redis://127.0.0.1:7405', 'redis://127.0.0.1:7406'] }),
        ],
      });
      errors.push(
        await moduleRef
          .compile()
          .then((m) => m.init())
          .catch((err: unknown) => err),
      );
      await new Promise((r) => setTimeout(r, 50)); // anything logged late
    } finally {
      for (const r of restore) r();
    }
    expect(errors).toHaveLength(2);
    for (const err of errors) expect(err).toBeInstanceOf(RedlockOptionsError);
    const seen = [
      ...lines,
      ...written,
      ...errors.map((e) => `${(e as Error).message}\n${(e as Error).stack ?? ''}`),
    ].join('\n');
    expect(seen).toContain('redis://***@127.0.0.1:7404');
    for (const piece of PIECES) expect(seen).not.toContain(piece);
  });
});
