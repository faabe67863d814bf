import fc from 'fast-check';
import { RedlockOptionsError } from '../../lib/index.js';
import { compileLockKey, type LockKey } from '../../lib/nest/lock-key.js';

/**
 * Property-based tests of `@DistributedLock` keys (issue 14, item 4): whatever template, key
 * function or arguments a user passes, compiling and resolving a key either yields the right
 * resource names or throws a RedlockOptionsError. Never another error type (a TypeError from
 * spreading a number, a RangeError from an invalid Date), and never a silently wrong key such as
 * "order:undefined", "[object Object]" or a function's source code. Issue 40, item 1: braces that
 * are neither a placeholder (`{0}`, `{1.id}`) nor an escape (`{{`, `}}`) are refused when the key
 * is compiled (when the decorator is applied), never taken as literal text.
 *
 * Runs per property are set explicitly (NUM_RUNS) and reported in the test names.
 */

const NUM_RUNS = 500;
const WHERE = 'Spec.method';

/** Compiles and resolves; returns the resources or the thrown error. */
function resolve(key: unknown, args: readonly unknown[]): { ok: string[] } | { err: unknown } {
  try {
    return { ok: compileLockKey(key as LockKey, WHERE)(args) };
  } catch (err) {
    return { err };
  }
}

/** The error must be a RedlockOptionsError that names the decorator. */
function expectTypedError(err: unknown): void {
  if (!(err instanceof RedlockOptionsError)) {
    throw new Error(`expected a RedlockOptionsError, got ${show(err)}`);
  }
  expect(err.option).toContain('@DistributedLock');
}

function show(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return fc.stringify(value);
  } catch {
    return String(value);
  }
}

/** A value a placeholder may read: it renders as this string. */
const renderable: fc.Arbitrary<{ value: unknown; text: string }> = fc.oneof(
  fc.string({ minLength: 1, unit: 'grapheme' }).map((s) => ({ value: s, text: s })),
  fc.integer().map((n) => ({ value: n, text: String(n) })),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => ({ value: n, text: String(n) })),
  fc.date({ noInvalidDate: true }).map((d) => ({ value: d, text: d.toISOString() })),
  fc.boolean().map((b) => ({ value: b, text: String(b) })),
  fc.bigInt().map((b) => ({ value: b, text: String(b) })),
);

/** A value a placeholder must refuse: it has no sensible text. */
const unrenderable: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constant(''),
  fc.constant(Number.NaN),
  fc.constant(new Date(Number.NaN)),
  fc.object(),
  fc.array(fc.anything()),
  fc.constant(() => 'a function'),
  fc.string().map((s) => Symbol(s)),
);

/** Literal text of a resource, braces included (a template writes them doubled: {@link escape}). */
const literal = fc.string({
  unit: fc.constantFrom('a', 'Z', ':', '.', '-', '{', '}', '0', '7', 'é', '🔒', ' ', '_', '$'),
});

/** Literal text as a template writes it: `{{` and `}}` for braces. */
const escape = (text: string) => text.replace(/[{}]/g, (brace) => brace + brace);

/** What may stand between braces: `<index>` or `<index>.<name>...` (a model of the grammar). */
const isPlaceholder = (inside: string) => /^\d+(\.[A-Za-z_$][\w$]*)*$/.test(inside);

/** Property names, including inherited ones whose values are functions or prototypes. */
const identifier = fc.oneof(
  fc.stringMatching(/^[A-Za-z_$][\w$]{0,6}$/),
  fc.constantFrom('length', 'constructor', '__proto__', 'toString', 'valueOf'),
);

/**
 * A template with placeholders at known places, the arguments they read, and the resource the
 * template must resolve to (a model of the template language, independent of its implementation).
 */
const templateCase = fc
  .array(
    fc.record({
      before: literal,
      index: fc.nat({ max: 4 }),
      path: fc.array(identifier, { maxLength: 3 }),
      leaf: renderable,
    }),
    { minLength: 1, maxLength: 4 },
  )
  .chain((parts) => fc.tuple(fc.constant(parts), literal))
  .map(([parts, after]) => {
    const args: unknown[] = [];
    let template = '';
    let expected = '';
    const leaves = new Map<string, string>(); // placeholder -> the text it renders, first writer wins
    for (const part of parts) {
      const ref = [part.index, ...part.path].join('.');
      template += `${escape(part.before)}{${ref}}`;
      // Build the argument so that the path leads to the leaf; a path that an earlier placeholder
      // already routed through an object keeps that object (conflicts are resolved by reading).
      if (!leaves.has(ref)) {
        if (part.path.length === 0) {
          if (args[part.index] === undefined) args[part.index] = part.leaf.value;
        } else {
          const root = (args[part.index] ??= {}) as Record<string, unknown>;
          if (typeof root === 'object' && root !== null && !(root instanceof Date)) {
            let node = root;
            for (const name of part.path.slice(0, -1)) {
              const next = node[name];
              if (typeof next !== 'object' || next === null || next instanceof Date || !own(node, name)) {
                put(node, name, {});
              }
              node = node[name] as Record<string, unknown>;
            }
            const last = part.path[part.path.length - 1]!;
            if (!own(node, last)) put(node, last, part.leaf.value);
          }
        }
        leaves.set(ref, '');
      }
      expected += part.before;
    }
    template += escape(after);
    expected += after;
    return { parts, after, template, args, expected };
  });

/** Own data property, also for names like `__proto__` (plain assignment would set the prototype). */
function put(target: object, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true });
}

const own = (target: object, name: string) => Object.prototype.hasOwnProperty.call(target, name);

/** What the model says a placeholder reads: `args[index].a.b`, as the user's code would read it. */
function read(args: readonly unknown[], index: number, path: readonly string[]): unknown {
  let value: unknown = args[index];
  for (const name of path) {
    if (value === null || value === undefined) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

function render(value: unknown): string | undefined {
  if (typeof value === 'string') return value.length > 0 ? value : undefined;
  if (typeof value === 'number') return Number.isNaN(value) ? undefined : String(value);
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  return undefined;
}

describe(`@DistributedLock key templates (fast-check, ${NUM_RUNS} runs per property)`, () => {
  test(`a template resolves to the model's string, or the key is refused with RedlockOptionsError (${NUM_RUNS} runs)`, () => {
    fc.assert(
      fc.property(templateCase, ({ parts, after, template, args }) => {
        // The model: each placeholder reads its own path in the arguments as built.
        let expected = '';
        let refused = false;
        for (const part of parts) {
          const text = render(read(args, part.index, part.path));
          if (text === undefined) refused = true;
          expected += part.before + (text ?? '');
        }
        expected += after;
        const outcome = resolve(template, args);
        if (refused) {
          expect('err' in outcome).toBe(true);
          if ('err' in outcome) expectTypedError(outcome.err);
        } else {
          if ('err' in outcome) throw new Error(`refused ${template}: ${show(outcome.err)}`);
          expect(outcome.ok).toEqual([expected]);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test(`a placeholder that reads a value without a sensible text is refused, never rendered (${NUM_RUNS} runs)`, () => {
    fc.assert(
      fc.property(
        literal,
        fc.nat({ max: 3 }),
        fc.array(identifier, { maxLength: 2 }),
        unrenderable,
        (prefix, index, path, bad) => {
          const args: unknown[] = [];
          if (path.length === 0) args[index] = bad;
          else {
            let node = (args[index] = {}) as Record<string, unknown>;
            for (const name of path.slice(0, -1)) {
              put(node, name, {});
              node = node[name] as Record<string, unknown>;
            }
            put(node, path[path.length - 1]!, bad);
          }
          const outcome = resolve(`${escape(prefix)}{${[index, ...path].join('.')}}`, args);
          if ('ok' in outcome) throw new Error(`rendered ${show(bad)} as ${JSON.stringify(outcome.ok)}`);
          expectTypedError(outcome.err);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  test(`arbitrary keys and arguments: non-empty strings or RedlockOptionsError, nothing else (${NUM_RUNS} runs)`, () => {
    const anyKey = fc.oneof(
      fc.string(),
      fc.string().map((s) => `${s}{0}${s}`),
      fc.array(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `{1.${s}}`),
        ),
        { maxLength: 3 },
      ),
      fc.anything(),
    );
    fc.assert(
      fc.property(anyKey, fc.array(fc.anything(), { maxLength: 4 }), (key, args) => {
        const outcome = resolve(key, args);
        if ('err' in outcome) return expectTypedError(outcome.err);
        const templates = typeof key === 'string' ? [key] : (key as string[]);
        expect(outcome.ok).toHaveLength(templates.length);
        for (const resource of outcome.ok) {
          expect(typeof resource).toBe('string');
          expect(resource.length).toBeGreaterThan(0);
        }
        // A template without braces is the resource itself.
        templates.forEach((t, i) => {
          if (!/[{}]/.test(t)) expect(outcome.ok[i]).toBe(t);
        });
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test(`key functions: whatever they return, non-empty strings or RedlockOptionsError (${NUM_RUNS} runs)`, () => {
    const returned = fc.oneof(
      fc.string(),
      fc.array(fc.string(), { maxLength: 3 }),
      fc.array(fc.anything(), { maxLength: 3 }),
      fc.anything(),
    );
    fc.assert(
      fc.property(returned, fc.array(fc.anything(), { maxLength: 3 }), (result, args) => {
        let seen: unknown[] | undefined;
        const outcome = resolve((...a: unknown[]) => {
          seen = a;
          return result;
        }, args);
        expect(seen).toEqual(args); // the function receives the method's arguments
        if ('err' in outcome) return expectTypedError(outcome.err);
        const expected = typeof result === 'string' ? [result] : (result as string[]);
        expect(outcome.ok).toEqual(expected);
        for (const resource of outcome.ok) {
          expect(typeof resource).toBe('string');
          expect(resource.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test(`escaped text is the resource itself, whatever braces it holds (${NUM_RUNS} runs)`, () => {
    fc.assert(
      fc.property(
        literal.filter((text) => text.length > 0),
        (text) => {
          expect(compileLockKey(escape(text), WHERE)([])).toEqual([text]);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  test(`any {...} that is not {<index>} or {<index>.<path>} is refused when the key is compiled, before any call (${NUM_RUNS} runs)`, () => {
    const inside = fc.oneof(
      fc.stringMatching(/^[A-Za-z_$][\w$]{0,6}(\.[A-Za-z_$][\w$]{0,4}){0,2}$/), // {id}, {customer.id}
      fc.string({ unit: fc.constantFrom('a', '0', '.', ' ', '-', ':', '$', '9') }),
    );
    fc.assert(
      fc.property(literal, inside, literal, (before, content, after) => {
        fc.pre(!isPlaceholder(content));
        const template = `${escape(before)}{${content}}${escape(after)}`;
        let err: unknown;
        try {
          compileLockKey(template, WHERE); // compiling alone: the decorator being applied
        } catch (e) {
          err = e;
        }
        expectTypedError(err);
        const message = (err as RedlockOptionsError).message;
        expect(message).toContain(WHERE);
        expect(message).toContain(`{${content}} is not an argument placeholder`);
        expect(message).toContain('{0}');
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test(`a lone { or } (not doubled, not part of a placeholder) is refused when the key is compiled (${NUM_RUNS} runs)`, () => {
    fc.assert(
      fc.property(literal, fc.constantFrom('{', '}'), literal, (before, brace, after) => {
        // `after` escaped, then stripped of any '}' that would close a lone '{'.
        const rest = brace === '{' ? escape(after.replace(/}/g, '')) : escape(after);
        const template = `${escape(before)}${brace}${rest}`;
        let err: unknown;
        try {
          compileLockKey(template, WHERE);
        } catch (e) {
          err = e;
        }
        expectTypedError(err);
        expect((err as Error).message).toMatch(/a lone \} at position|a \{ at position \d+ is never closed/);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
