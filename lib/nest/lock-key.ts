import { RedlockOptionsError } from '../core/index.js';

/**
 * What `@DistributedLock` locks: a resource name, several, a template over the method's arguments
 * (`'order:{0}'`, `'user:{1.id}'`; `{{` and `}}` are literal braces), or a function of the
 * arguments (its result is used as it is).
 */
export type LockKey = string | readonly string[] | ((...args: never[]) => string | readonly string[]);

/** Turns method arguments into resource names. */
export type KeyResolver = (args: readonly unknown[]) => string[];

/** What may stand between braces: an argument's index, then a path of property names. */
const PLACEHOLDER = /^(\d+)((?:\.[A-Za-z_$][\w$]*)*)$/;
/** Text a user may have meant as a name or a path of names (`id`, `customer.id`). */
const NAME_PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$/;

/** A parsed template: literal text and placeholders, in order. */
type Part = string | { readonly index: number; readonly path: readonly string[] };

/**
 * Compiles a {@link LockKey} once, at decoration time, so a malformed key fails when the class is
 * defined rather than on the first call. The resolver throws {@link RedlockOptionsError} when an
 * argument a template reads is missing: a lock is never silently taken on "order:undefined".
 *
 * Templates: `{0}`, `{1}`, ... are the method's arguments by position and `{0.id}`,
 * `{1.customer.id}` paths into one; `{{` and `}}` are literal braces (a Redis Cluster hash tag
 * such as `'{{order:{0}}}:items'`). Any other brace is refused here: `{id}` would otherwise be
 * one literal key shared by every call.
 */
export function compileLockKey(key: LockKey, where: string): KeyResolver {
  if (typeof key === 'function') {
    return (args) => {
      const result: unknown = (key as (...a: unknown[]) => unknown)(...args);
      // Anything but a string or an array (a number id, an object, undefined) is refused by
      // check(): spreading it would throw a TypeError that names nothing the user wrote.
      return check(
        typeof result === 'string' ? [result] : Array.isArray(result) ? [...result] : [result],
        where,
      );
    };
  }
  // Plain JavaScript callers can pass anything; spreading a non-array would throw a TypeError.
  const templates: unknown[] = typeof key === 'string' ? [key] : Array.isArray(key) ? [...key] : [];
  if (templates.length === 0 || templates.some((t) => typeof t !== 'string' || t.length === 0)) {
    throw new RedlockOptionsError(
      `@DistributedLock key of ${where}`,
      'empty',
      'Pass a non-empty string, array of strings or function.',
    );
  }
  const compiled = (templates as string[]).map((template) => compileTemplate(template, where));
  return (args) => compiled.map((resolve) => resolve(args));
}

/** Splits a template into literal text and placeholders; refuses any brace that is neither. */
function parseTemplate(template: string, where: string): Part[] {
  const parts: Part[] = [];
  let text = '';
  const refuse = (problem: string, fix: string): never => {
    throw new RedlockOptionsError(`@DistributedLock('${template}') on ${where}`, problem, fix);
  };
  for (let i = 0; i < template.length; i++) {
    const char = template[i];
    if (char === '}') {
      if (template[i + 1] !== '}') {
        refuse(`a lone } at position ${i}`, 'Write }} for a literal }, and {{ for a literal {.');
      }
      text += '}';
      i++;
    } else if (char !== '{') {
      text += char;
    } else if (template[i + 1] === '{') {
      text += '{';
      i++;
    } else {
      const close = template.indexOf('}', i + 1);
      if (close === -1) {
        refuse(`a { at position ${i} is never closed`, 'Write {{ for a literal {, and }} for a literal }.');
      }
      const inside = template.slice(i + 1, close);
      const match = PLACEHOLDER.exec(inside);
      if (!match) refuse(`{${inside}} is not an argument placeholder`, suggestion(inside));
      if (text) parts.push(text);
      text = '';
      parts.push({ index: Number(match![1]), path: match![2] ? match![2].slice(1).split('.') : [] });
      i = close;
    }
  }
  if (text) parts.push(text);
  return parts;
}

/** How to write what the user probably meant by `{inside}`. */
function suggestion(inside: string): string {
  const path = NAME_PATH.test(inside) ? inside : 'id';
  return (
    `Placeholders name the method's arguments by position: write {0} for the first argument, or ` +
    `{0.${path}} for its "${path}" property (a route's :id is usually {0}). Write {{ and }} for literal braces.`
  );
}

function compileTemplate(template: string, where: string): (args: readonly unknown[]) => string {
  const parts = parseTemplate(template, where);
  if (parts.every((part) => typeof part === 'string')) {
    const literal = parts.join('');
    return () => literal;
  }
  return (args) => {
    let out = '';
    for (const part of parts) {
      if (typeof part === 'string') {
        out += part;
        continue;
      }
      let value: unknown = args[part.index];
      for (const name of part.path)
        value = value == null ? undefined : (value as Record<string, unknown>)[name];
      const problem = unrenderable(value);
      if (problem) {
        const ref = `{${[part.index, ...part.path].join('.')}}`;
        throw new RedlockOptionsError(
          `@DistributedLock('${template}') on ${where}`,
          `${ref} is ${problem}`,
          'Each placeholder must read a string or number from the arguments; check the argument index and path.',
        );
      }
      out += value instanceof Date ? value.toISOString() : String(value);
    }
    return out;
  };
}

/**
 * Why a placeholder's value has no sensible text (undefined when it has one). Besides missing
 * values and objects: NaN (a failed parse: every bad id would share the lock "order:NaN"), an
 * invalid Date (toISOString throws a RangeError), a function (e.g. `{0.toString}`: its source
 * code would become the key) and a symbol.
 */
function unrenderable(value: unknown): string | undefined {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (value === '') return 'an empty string';
  if (typeof value === 'number' && Number.isNaN(value)) return 'NaN';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : undefined;
  if (typeof value === 'object' || typeof value === 'function' || typeof value === 'symbol')
    return `a ${typeof value}`;
  return undefined;
}

function check(resources: unknown[], where: string): string[] {
  if (resources.length === 0 || resources.some((r) => typeof r !== 'string' || r.length === 0)) {
    throw new RedlockOptionsError(
      `@DistributedLock key function of ${where}`,
      `returned ${describeReturn(resources)}`,
      'Return a non-empty string or a non-empty array of non-empty strings.',
    );
  }
  return resources as string[];
}

/** The key function's result for the error message (JSON.stringify throws on a BigInt). */
function describeReturn(resources: unknown[]): string {
  try {
    return (
      JSON.stringify(resources, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(resources)
    );
  } catch {
    return `[${resources.map((r) => typeof r).join(', ')}]`;
  }
}
