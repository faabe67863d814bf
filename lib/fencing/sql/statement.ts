/**
 * A statement of the fenced table, kept as the text around its placeholders (a template literal's
 * shape) so that every driver can write its own placeholders: `$1` for PostgreSQL drivers, `?` for
 * MariaDB ones and Knex, the driver's own parameter objects for Drizzle. Values are always bound,
 * never written into the text.
 */

/** A placeholder: the index of the call's argument it binds (0 the key, 1 the token, 2... the values). */
export class Arg {
  constructor(readonly index: number) {}
}

/** The call's key (argument 0). */
export const KEY = new Arg(0);
/** The call's token (argument 1). */
export const TOKEN = new Arg(1);
/** The i-th written value (arguments 2...). */
export const value = (i: number): Arg => new Arg(i + 2);

/** A statement's text and placeholders, independent of a call's values (cached per table). */
export interface Statement {
  /** SQL text around the placeholders: one more piece than `args`. */
  readonly pieces: readonly string[];
  /** For each placeholder, the index of the call's argument it binds. */
  readonly args: readonly number[];
  /** Whether the caller reads rows from it (a SELECT, or a statement with RETURNING). */
  readonly returnsRows: boolean;
}

/** A statement with one call's arguments: what a handle runs. */
export interface BoundStatement extends Statement {
  /** The call's arguments, indexed by `args`. */
  readonly values: readonly unknown[];
}

/**
 * Tag for statement text: interpolated strings are SQL text (quoted names written by this module),
 * interpolated {@link Arg}s are placeholders.
 */
export function sqlText(returnsRows: boolean) {
  return (strings: TemplateStringsArray, ...parts: Array<string | Arg>): Statement => {
    const pieces: string[] = [strings[0]!];
    const args: number[] = [];
    parts.forEach((part, i) => {
      if (part instanceof Arg) {
        args.push(part.index);
        pieces.push(strings[i + 1]!);
      } else {
        pieces[pieces.length - 1] += part + strings[i + 1]!;
      }
    });
    return { pieces, args, returnsRows };
  };
}

/** Joins statements' pieces with `separator` (e.g. a column list of assignments). */
export function join(parts: readonly Statement[], separator: string): Statement {
  const pieces: string[] = [''];
  const args: number[] = [];
  parts.forEach((part, i) => {
    if (i > 0) pieces[pieces.length - 1] += separator;
    pieces[pieces.length - 1] += part.pieces[0]!;
    part.args.forEach((arg, j) => {
      args.push(arg);
      pieces.push(part.pieces[j + 1]!);
    });
  });
  return { pieces, args, returnsRows: false };
}

/** `statement` with `values` bound. */
export function bind(statement: Statement, values: readonly unknown[]): BoundStatement {
  return { ...statement, values };
}

/**
 * `$1`, `$2`... as PostgreSQL drivers take them: one parameter per distinct argument, numbered in
 * the order of the arguments (key, token, values), so that an argument used twice is one parameter.
 */
export function numbered(s: BoundStatement): { text: string; values: unknown[] } {
  const used = [...new Set(s.args)].sort((a, b) => a - b);
  const numbers = new Map(used.map((arg, i) => [arg, i + 1]));
  let text = s.pieces[0]!;
  s.args.forEach((arg, i) => (text += `$${numbers.get(arg)!}${s.pieces[i + 1]!}`));
  return { text, values: used.map((arg) => s.values[arg]) };
}

/** `?` placeholders, one value per placeholder in order (MariaDB drivers). */
export function positional(s: BoundStatement, mark = '?'): { text: string; values: unknown[] } {
  let text = s.pieces[0]!;
  s.args.forEach((_, i) => (text += `${mark}${s.pieces[i + 1]!}`));
  return { text, values: s.args.map((arg) => s.values[arg]) };
}
