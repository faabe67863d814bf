import type { RedisNodes } from 'nest-quorum-lock/testing';
import type { BenchConfig } from './config.js';
import type { Library } from './libraries.js';
import { describePaired, pairedRatio } from './stats.js';

/** Column of the table: a library id, or the no-lock floor. */
export type Column = string;

/** The reference column of quorum PINGs (no lock at all). */
export const FLOOR = 'floor';

/** A measured figure, or why there is none (e.g. "stalls until the node resumes"). */
export type Cell = number | { readonly value?: number; readonly note: string };

/** One line of the table: one metric across libraries. */
export interface Row {
  readonly metric: string;
  readonly unit: string;
  /** Which direction is good: it says how to read the ratio. */
  readonly better: 'lower' | 'higher';
  readonly cells: Readonly<Record<Column, Cell>>;
  /** Digits after the decimal point (default 3). */
  readonly digits?: number;
  /** False for a row that is itself a ratio (e.g. fresh / warm): no "x the reference" beside it. */
  readonly ratio?: false;
}

/** A target from the issue, checked against the figures. */
export interface TargetCheck {
  readonly text: string;
  readonly met: boolean;
  /** The figures that decided it. */
  readonly detail: string;
}

/** What one benchmark hands back. */
export interface BenchResult {
  readonly id: string;
  readonly title: string;
  readonly rows: readonly Row[];
  readonly targets: readonly TargetCheck[];
  /** Notes printed under the table (e.g. a peer that stalls). */
  readonly notes: readonly string[];
  /** Everything measured, for results.json. */
  readonly details: Readonly<Record<string, unknown>>;
  /**
   * Columns of this benchmark that are not libraries of the run (B9: both of redis-semaphore's
   * quorum semaphores), added to the table after the libraries.
   */
  readonly columns?: ReadonlyArray<{ readonly id: Column; readonly label: string }>;
  /** The column this benchmark's ratios are taken against, when not the run's (B9: ours). */
  readonly reference?: Column;
}

/** Everything a benchmark gets to run. */
export interface BenchContext {
  readonly nodes: RedisNodes;
  readonly urls: readonly string[];
  readonly config: BenchConfig;
  /** Libraries that passed the smoke test, ours first. */
  readonly libraries: readonly Library[];
  log(message: string): void;
}

/** A selectable benchmark (B1, B2, ...). A B4 (HTTP) module plugs in the same way. */
export interface Benchmark {
  readonly id: string;
  readonly title: string;
  run(ctx: BenchContext): Promise<BenchResult>;
}

export function cellValue(cell: Cell | undefined): number | undefined {
  if (cell === undefined) return undefined;
  return typeof cell === 'number' ? cell : cell.value;
}

function formatNumber(value: number, digits: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 10_000) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(digits);
}

/** `0.412 (1.31x)`: the value, and its ratio to the reference column (library / reference). */
function formatCell(row: Row, column: Column, reference: Column, base: number | undefined): string {
  const cell = row.cells[column];
  if (cell === undefined) return '';
  const digits = row.digits ?? 3;
  const value = cellValue(cell);
  let text = value === undefined ? '' : formatNumber(value, digits);
  if (typeof cell !== 'number') text = text ? `${text} ${cell.note}` : cell.note;
  if (
    row.ratio !== false &&
    column !== reference &&
    value !== undefined &&
    base !== undefined &&
    base !== 0 &&
    Number.isFinite(value)
  ) {
    text += ` (${(value / base).toFixed(2)}x)`;
  }
  return text;
}

/**
 * The results as a plain-text table, one row per metric and one column per library, then targets
 * and notes. Every cell carries its ratio to the `reference` column (redlock@5 when it runs: the
 * library most users compare against, and the one the targets are stated against).
 */
export function renderTable(
  results: readonly BenchResult[],
  columns: ReadonlyArray<{ id: Column; label: string }>,
  reference: Column,
): string {
  const header = ['bench', 'metric', 'better', ...columns.map((c) => c.label)];
  const lines: string[][] = [header];
  for (const result of results) {
    for (const row of result.rows) {
      const base = cellValue(row.cells[result.reference ?? reference]);
      lines.push([
        result.id,
        `${row.metric} (${row.unit})`,
        row.better,
        ...columns.map((c) => formatCell(row, c.id, result.reference ?? reference, base)),
      ]);
    }
  }
  const used = header.map((_, i) => i).filter((i) => i < 3 || lines.slice(1).some((l) => l[i] !== ''));
  const widths = used.map((i) => Math.max(...lines.map((l) => l[i]!.length)));
  const render = (l: string[]) => used.map((i, k) => l[i]!.padEnd(widths[k]!)).join(' | ');
  const out = [render(header), widths.map((w) => '-'.repeat(w)).join('-|-')];
  for (const l of lines.slice(1)) out.push(render(l));
  const label = columns.find((c) => c.id === reference)?.label ?? reference;
  out.push('', `Ratios in parentheses: library / ${label} (read with the "better" column).`);

  const targets = results.flatMap((r) => r.targets.map((t) => ({ id: r.id, ...t })));
  if (targets.length > 0) {
    out.push('', 'Targets:');
    for (const t of targets) out.push(`  ${t.met ? 'MET   ' : 'MISSED'} ${t.id}: ${t.text} -- ${t.detail}`);
  }
  const notes = results.flatMap((r) => r.notes.map((n) => `  ${r.id}: ${n}`));
  if (notes.length > 0) out.push('', 'Notes:', ...notes);
  return out.join('\n');
}

/**
 * How much worse than the baseline build a figure may be and still count as "no worse" (issue 11):
 * within one interleaved run, B1 and B2 medians of rounds move by about this much between two
 * runs of the same build on this machine.
 */
export const BASELINE_TOLERANCE = 0.05;

/**
 * "ours no worse than ours@baseline" for one figure, or nothing when no baseline runs. `better`
 * says which direction is good. With `perRound` (a column's figure in each round), the detail adds
 * the same ratio taken round by round: its spread is the run's own, what a difference must exceed
 * to mean anything.
 */
export function baselineCheck(
  what: string,
  cells: Readonly<Record<Column, Cell>>,
  better: 'lower' | 'higher',
  format: (value: number) => string,
  perRound?: (id: Column) => readonly number[] | undefined,
): TargetCheck[] {
  const baseline = cellValue(cells['ours-baseline']);
  if (baseline === undefined) return [];
  const out: TargetCheck[] = [];
  // This build as it runs by default, and, when BENCH_LIBS names it, with the clock guard off: the
  // same features as a baseline built before the guard existed (b90f549 and older), so that what a
  // change of structure costs is told apart from what the guard costs.
  for (const id of ['ours', 'ours-noclock']) {
    const value = cellValue(cells[id]);
    if (value === undefined) continue;
    // ratio > 1 means this build is better, whichever the direction.
    const ratio = better === 'lower' ? baseline / value : value / baseline;
    const mine = perRound?.(id);
    const theirs = perRound?.('ours-baseline');
    const rounds =
      mine && theirs
        ? `; ${describePaired(better === 'lower' ? pairedRatio(theirs, mine) : pairedRatio(mine, theirs))}`
        : '';
    const label = id === 'ours' ? 'ours' : 'ours (clockGuard off)';
    out.push({
      text: `${what}${id === 'ours' ? '' : ', clockGuard off,'} no worse than ours@baseline (within ${BASELINE_TOLERANCE * 100} %)`,
      met: ratio >= 1 - BASELINE_TOLERANCE,
      detail: `${label} ${format(value)} vs ours@baseline ${format(baseline)} (${better === 'lower' ? 'baseline / ours' : 'ours / baseline'} ${ratio.toFixed(3)}${rounds})`,
    });
  }
  return out;
}
