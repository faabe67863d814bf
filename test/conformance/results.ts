import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REDIS_SERVER_BIN, redisServerVersion } from '../../lib/testing/index.js';
import { serverLabel } from '../support/servers.js';

/*
 * The behaviours x voters table, as markdown: printed after each spec file, and written into
 * test/conformance/RESULTS.md (between the file's markers for that section, formatted by Prettier)
 * when the run sets CONFORMANCE_RESULTS=1. The server is a dimension: the full tables are those of
 * the default server (Debian's redis-server), and every run adds its server's row to a servers x
 * voters summary (`npm run test:servers -- --results` runs the table on each server with
 * REDIS_SERVER_BIN set).
 */

/** The server this run's launchers start, and whether it is the default one (no REDIS_SERVER_BIN). */
export function serverOfRun(): { label: string; isDefault: boolean } {
  return { label: serverLabel(redisServerVersion()), isDefault: !process.env[REDIS_SERVER_BIN] };
}

export type Cell = { status: 'pass' | 'fail' | 'skip'; text: string };

const MARK = { pass: 'pass', fail: '**FAIL**', skip: 'n/a' } as const;

/** Rows x columns of cells. */
export class ResultTable {
  private readonly cells = new Map<string, Cell>();

  /** `rows`: row ids, each shown as its label in `labels` (default: the id). */
  constructor(
    private readonly rows: string[],
    private readonly columns: string[],
    private readonly labels: Partial<Record<string, string>> = {},
  ) {}

  set(row: string, column: string, cell: Cell): void {
    this.cells.set(`${row}\u0000${column}`, cell);
  }

  markdown(corner: string): string {
    const escape = (text: string) => text.replace(/\|/g, '\\|');
    const lines = [
      `| ${corner} | ${this.columns.map(escape).join(' | ')} |`,
      `|---|${this.columns.map(() => '---').join('|')}|`,
    ];
    for (const row of this.rows) {
      const cells = this.columns.map((column) => {
        const cell = this.cells.get(`${row}\u0000${column}`);
        if (!cell) return 'not run';
        return escape(cell.text ? `${MARK[cell.status]} (${cell.text})` : MARK[cell.status]);
      });
      lines.push(`| ${escape(this.labels[row] ?? row)} | ${cells.join(' | ')} |`);
    }
    return lines.join('\n');
  }

  /**
   * One line of a column: `pass 17` or `pass 13, n/a 4` when every row that ran passed, else
   * `**FAIL**: <rows>` (and `not run: <rows>` for rows without a result).
   */
  summary(column: string): string {
    const cells = this.rows.map((row) => ({ row, cell: this.cells.get(`${row}\u0000${column}`) }));
    const of = (status: Cell['status']) => cells.filter(({ cell }) => cell?.status === status);
    const failed = of('fail').map(({ row }) => row);
    const missing = cells.filter(({ cell }) => !cell).map(({ row }) => row);
    if (failed.length > 0 || missing.length > 0) {
      return [
        ...(failed.length > 0 ? [`${MARK.fail}: ${failed.join(', ')}`] : []),
        ...(missing.length > 0 ? [`not run: ${missing.join(', ')}`] : []),
      ].join('; ');
    }
    const skipped = of('skip').length;
    return `pass ${of('pass').length}${skipped > 0 ? `, n/a ${skipped}` : ''}`;
  }

  /**
   * Prints the table, and under CONFORMANCE_RESULTS=1 writes it into RESULTS.md's `section` (the
   * default server's run only) and, with `servers`, this run's server's row into that section's
   * servers x columns summary.
   */
  async publish(section: string, heading: string, corner: string, servers?: string): Promise<void> {
    const table = this.markdown(corner);
    const server = serverOfRun();
    console.log(`${heading} (on ${server.label})\n\n${table}`);
    if (process.env.CONFORMANCE_RESULTS !== '1') return;
    const file = join(process.cwd(), 'test/conformance/RESULTS.md');
    let text = readFileSync(file, 'utf8');
    if (server.isDefault) text = replaceSection(text, section, table);
    if (servers) {
      const escape = (cell: string) => cell.replace(/\|/g, '\\|');
      const header = `| server | ${this.columns.map(escape).join(' | ')} |`;
      const row = `| ${server.label} | ${this.columns.map((c) => escape(this.summary(c))).join(' | ')} |`;
      // The other servers' rows stay (while they have as many columns as this one).
      const kept = sectionOf(text, servers)
        .split('\n')
        .filter((line) => /^\| (Redis|Valkey) /.test(line) && line.split('|')[1]!.trim() !== server.label)
        .filter((line) => line.split(/(?<!\\)\|/).length === row.split(/(?<!\\)\|/).length);
      const rows = [...kept, row].sort((a, b) => a.localeCompare(b));
      const separator = `|---|${this.columns.map(() => '---').join('|')}|`;
      text = replaceSection(text, servers, [header, separator, ...rows].join('\n'));
    }
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(file)) ?? {};
    writeFileSync(file, await prettier.format(text, { ...options, filepath: file }));
  }
}

/** The markers of a RESULTS.md section. */
function markers(section: string): [string, string] {
  return [`<!-- ${section} -->`, `<!-- /${section} -->`];
}

/** What RESULTS.md holds between a section's markers. */
function sectionOf(text: string, section: string): string {
  const [open, close] = markers(section);
  const from = text.indexOf(open);
  const to = text.indexOf(close);
  if (from < 0 || to < from) throw new Error(`RESULTS.md has no ${open} ... ${close} section`);
  return text.slice(from + open.length, to);
}

/** `text` with a section's content replaced by `body`. */
function replaceSection(text: string, section: string, body: string): string {
  const [open, close] = markers(section);
  sectionOf(text, section); // throws when the markers are missing
  const from = text.indexOf(open);
  const to = text.indexOf(close);
  return `${text.slice(0, from + open.length)}\n\n${body}\n\n${text.slice(to)}`;
}

/** The first line of an error, short enough for a table cell. */
export function firstLine(err: unknown, max = 100): string {
  const line = String(err)
    .split('\n')[0]!
    .replace(/^Error: /, '');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
