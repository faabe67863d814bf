import { RedlockOptionsError } from '../core/index.js';

/**
 * What `@DistributedLock` locks: a resource name, several, a template over the method's arguments
 * (`'order:{0}'`, `'user:{1.id}'`), or a function of the arguments.
 */
export type LockKey = string | readonly string[] | ((...args: never[]) => string | readonly string[]);

/** Turns method arguments into resource names. */
export type KeyResolver = (args: readonly unknown[]) => string[];

const PLACEHOLDER = /\{(\d+)((?:\.[A-Za-z_$][\w$]*)*)\}/g;

/**
 * Compiles a {@link LockKey} once, at decoration time, so a malformed key fails when the class is
 * defined rather than on the first call. The resolver throws {@link RedlockOptionsError} when an
 * argument a template reads is missing: a lock is never silently taken on "order:undefined".
 */
export function compileLockKey(key: LockKey, where: string): KeyResolver {
  if (typeof key === 'function') {
    return (args) => {
      const result = (key as (...a: unknown[]) => string | readonly string[])(...args);
      return check(typeof result === 'string' ? [result] : [...(result ?? [])], where);
    };
  }
  const templates = typeof key === 'string' ? [key] : [...key];
  if (templates.length === 0 || templates.some((t) => typeof t !== 'string' || t.length === 0)) {
    throw new RedlockOptionsError(
      `@DistributedLock key of ${where}`,
      'empty',
      'Pass a non-empty string, array of strings or function.',
    );
  }
  const compiled = templates.map((template) => compileTemplate(template, where));
  return (args) => compiled.map((resolve) => resolve(args));
}

function compileTemplate(template: string, where: string): (args: readonly unknown[]) => string {
  const parts: Array<string | { index: number; path: string[] }> = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    parts.push(template.slice(last, match.index));
    parts.push({ index: Number(match[1]), path: match[2] ? match[2].slice(1).split('.') : [] });
    last = match.index + match[0].length;
  }
  if (parts.length === 0) return () => template;
  parts.push(template.slice(last));
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
      if (
        value === undefined ||
        value === null ||
        value === '' ||
        (typeof value === 'object' && !(value instanceof Date))
      ) {
        const ref = `{${[part.index, ...part.path].join('.')}}`;
        throw new RedlockOptionsError(
          `@DistributedLock('${template}') on ${where}`,
          `${ref} is ${value === '' ? 'an empty string' : value === null ? 'null' : typeof value}`,
          'Each placeholder must read a string or number from the arguments; check the argument index and path.',
        );
      }
      out += value instanceof Date ? value.toISOString() : String(value);
    }
    return out;
  };
}

function check(resources: string[], where: string): string[] {
  if (resources.length === 0 || resources.some((r) => typeof r !== 'string' || r.length === 0)) {
    throw new RedlockOptionsError(
      `@DistributedLock key function of ${where}`,
      `returned ${JSON.stringify(resources)}`,
      'Return a non-empty string or a non-empty array of non-empty strings.',
    );
  }
  return resources;
}
