import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * The behaviours x voters table, as markdown: printed after each spec file, and written into
 * test/conformance/RESULTS.md (between the file's markers for that section, formatted by Prettier)
 * when the run sets CONFORMANCE_RESULTS=1.
 */

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

  /** Prints the table, and writes it into RESULTS.md's `section` under CONFORMANCE_RESULTS=1. */
  async publish(section: string, heading: string, corner: string): Promise<void> {
    const table = this.markdown(corner);
    console.log(`${heading}\n\n${table}`);
    if (process.env.CONFORMANCE_RESULTS !== '1') return;
    const file = join(process.cwd(), 'test/conformance/RESULTS.md');
    const [open, close] = [`<!-- ${section} -->`, `<!-- /${section} -->`];
    const text = readFileSync(file, 'utf8');
    const from = text.indexOf(open);
    const to = text.indexOf(close);
    if (from < 0 || to < from) throw new Error(`RESULTS.md has no ${open} ... ${close} section`);
    const updated = `${text.slice(0, from + open.length)}\n\n${table}\n\n${text.slice(to)}`;
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(file)) ?? {};
    writeFileSync(file, await prettier.format(updated, { ...options, filepath: file }));
  }
}

/** The first line of an error, short enough for a table cell. */
export function firstLine(err: unknown, max = 100): string {
  const line = String(err)
    .split('\n')[0]!
    .replace(/^Error: /, '');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
