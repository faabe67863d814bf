/**
 * What the helper needs from a connection: node-postgres's `Pool`, `PoolClient` and `Client` all
 * fit (so does anything with the same `query`). Declared here instead of imported from `pg`, so
 * that neither this entry point nor its type declarations load `pg` or need `@types/pg`.
 *
 * Pass a `PoolClient` inside a transaction to make a fenced write part of it; pass the `Pool` for
 * a write of its own (each statement the helper sends is atomic on its own).
 */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}
