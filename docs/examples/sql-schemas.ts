/**
 * The token column of a fenced table declared in each ORM's own schema (docs/fencing.md). Run by
 * test/integration/sql/docs-examples.spec.ts: the TypeORM entity synchronised, the Knex migration
 * run on PostgreSQL and on MariaDB, the Drizzle table read back after a fenced write.
 */
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigint, pgTable, text } from 'drizzle-orm/pg-core';
import type { Knex } from 'knex';

// ---- TypeORM ----
@Entity('accounts')
export class Account {
  @PrimaryColumn('text') id!: string;

  @Column('bigint', { nullable: true }) balance!: string | null;

  @Column('bigint', { name: 'fence_token', default: 0 }) // FencedTable's token column
  fenceToken!: string;
}

// ---- Drizzle ----
export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  balance: bigint('balance', { mode: 'number' }),
  fenceToken: bigint('fence_token', { mode: 'number' }).notNull().default(0), // FencedTable's token column
});

// ---- Knex ----
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (table) => {
    table.string('id').primary();
    table.bigInteger('balance');
    table.bigInteger('fence_token').notNullable().defaultTo(0); // FencedTable's token column
  });
}

export async function addFenceToken(knex: Knex): Promise<void> {
  // An existing table: existing rows start at 0, below every token.
  await knex.schema.alterTable('accounts', (table) => {
    table.bigInteger('fence_token').notNullable().defaultTo(0);
  });
}
