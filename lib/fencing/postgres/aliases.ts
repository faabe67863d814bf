import type { FencedRead, FencedWrite } from '../sql/fenced-table.js';

/** The outcome of a fenced read. @deprecated Use {@link FencedRead} (the same type). */
export type PgFencedRead<Row> = FencedRead<Row>;
/** The outcome of a fenced write. @deprecated Use {@link FencedWrite} (the same type). */
export type PgFencedWrite = FencedWrite;
