import type { InjectionToken, Provider } from '@nestjs/common';
import { FencedWriter } from '../../fencing/fenced-writer.js';
import { InMemoryFencedTable, type InMemoryFencedTableOptions } from './in-memory-fenced-table.js';
import { InMemoryFencedWriter } from './in-memory-fenced-writer.js';

/**
 * An in-memory fenced table for `RedlockTestingModule.forRoot({ fencedTables })`: the token your
 * application provides its `FencedTable` under, and the table's options.
 */
export interface InMemoryFencedTableProvider extends InMemoryFencedTableOptions {
  /** The injection token your services inject the table with (`@Inject(ACCOUNTS)`). */
  readonly provide: InjectionToken;
}

/** The fenced-store options of `RedlockTestingModule.forRoot`. */
export interface FencedDoublesOptions {
  /**
   * `FencedWriter` (and `InMemoryFencedWriter`) in memory, default `{}` (fence field `'fence'`):
   * give the fence field your application's writer uses, or `false` to provide none (when a module
   * of your test provides its own `FencedWriter`).
   */
  fencedWriter?: false | { readonly fenceField?: string };
  /** In-memory `FencedTable`s, each under the token your application provides it with. */
  fencedTables?: readonly InMemoryFencedTableProvider[];
}

/**
 * The providers and exports of the fenced stores in memory. Each testing module that Nest builds
 * gets new ones (factories), so tests do not see each other's rows. Options are checked here, when
 * `forRoot` is called: a table's with the real table's checks.
 */
export function fencedDoubles(options: FencedDoublesOptions): {
  providers: Provider[];
  exports: InjectionToken[];
} {
  const providers: Provider[] = [];
  const exports: InjectionToken[] = [];
  const writer = options.fencedWriter ?? {};
  if (writer !== false) {
    if (typeof writer !== 'object' || writer === null)
      throw new TypeError(`fencedWriter must be false or { fenceField?: string }, got ${String(writer)}.`);
    const { fenceField } = writer;
    if (fenceField !== undefined && (typeof fenceField !== 'string' || fenceField === ''))
      throw new TypeError(`fencedWriter.fenceField must be a non-empty string, got ${String(fenceField)}.`);
    providers.push(
      { provide: InMemoryFencedWriter, useFactory: () => new InMemoryFencedWriter(fenceField) },
      { provide: FencedWriter, useExisting: InMemoryFencedWriter },
    );
    exports.push(InMemoryFencedWriter, FencedWriter);
  }
  const tables = options.fencedTables ?? [];
  if (!Array.isArray(tables))
    throw new TypeError(`fencedTables must be an array of { provide, table, ... }, got ${String(tables)}.`);
  const seen = new Set<InjectionToken>();
  for (const [i, entry] of tables.entries()) {
    const { provide, ...tableOptions } = (entry ?? {}) as InMemoryFencedTableProvider;
    if (provide === undefined || provide === null)
      throw new TypeError(
        `fencedTables[${i}] needs \`provide\`: the token your application provides that FencedTable under.`,
      );
    if (seen.has(provide))
      throw new TypeError(`fencedTables[${i}]: the token ${tokenName(provide)} is given twice.`);
    seen.add(provide);
    new InMemoryFencedTable(tableOptions); // the real table's option errors, now rather than at injection
    providers.push({ provide, useFactory: () => new InMemoryFencedTable(tableOptions) });
    exports.push(provide);
  }
  return { providers, exports };
}

function tokenName(token: InjectionToken): string {
  return typeof token === 'function' ? token.name : String(token);
}
