/**
 * A statement of the fenced table, kept as the text around its placeholders (a template literal's
 * shape) so that every driver can write its own placeholders: `$1` for PostgreSQL drivers, `?` for
 * MariaDB ones and Knex, the driver's own parameter objects for Drizzle. Values are always bound,
 * never written into the text.
 */
import type { SqlDialect } from './identifiers.js';

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

/** A placeholder for the call's argument `index` (0 the key, 1 the token, 2... the values). */
export const arg = (index: number): Statement => ({ pieces: ['', ''], args: [index], returnsRows: false });
/** The call's key (argument 0). */
export const KEY = arg(0);
/** The call's token (argument 1). */
export const TOKEN = arg(1);
/** The i-th written value (arguments 2...). */
export const value = (i: number): Statement => arg(i + 2);

/** What a statement's text can splice in: SQL text (quoted names written here), or statements and lists of them. */
type Part = string | Statement | readonly Statement[];

/** Tag for statement text; a spliced statement brings its placeholders along. */
export function sqlText(returnsRows: boolean) {
  return (strings: TemplateStringsArray, ...parts: Part[]): Statement => {
    const pieces: string[] = [strings[0]!];
    const args: number[] = [];
    const splice = (part: Part): void => {
      if (typeof part === 'string') pieces[pieces.length - 1] += part;
      else if (Array.isArray(part)) part.forEach(splice);
      else {
        const { pieces: more, args: moreArgs } = part as Statement;
        pieces[pieces.length - 1] += more[0]!;
        moreArgs.forEach((a, j) => (args.push(a), pieces.push(more[j + 1]!)));
      }
    };
    parts.forEach((part, i) => {
      splice(part);
      pieces[pieces.length - 1] += strings[i + 1]!;
    });
    return { pieces, args, returnsRows };
  };
}

/** `statement` with `values` bound. */
export function bind(statement: Statement, values: readonly unknown[]): BoundStatement {
  return { ...statement, values };
}

/** A statement of fixed text, without placeholders or rows (DDL). */
export const ddl = (sql: string): BoundStatement => ({
  pieces: [sql],
  args: [],
  returnsRows: false,
  values: [],
});

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
export function positional(s: BoundStatement): { text: string; values: unknown[] } {
  let text = s.pieces[0]!;
  s.args.forEach((_, i) => (text += `?${s.pieces[i + 1]!}`));
  return { text, values: s.args.map((arg) => s.values[arg]) };
}

/** The placeholders of `dialect`'s drivers that take either: numbered for PostgreSQL, else positional. */
export function placeholders(s: BoundStatement, dialect: SqlDialect): { text: string; values: unknown[] } {
  return dialect === 'postgres' ? numbered(s) : positional(s);
}
