import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A row of `accounts` as TypeORM maps it. `fence_token` is the column FencedTable keeps the highest
 * fencing token in; a NULL balance is an account that was never opened (a fenced read of a missing
 * account creates the row to record its token).
 */
@Entity('accounts')
export class AccountRow {
  @PrimaryColumn('text') id!: string;

  @Column('bigint', { nullable: true }) balance!: string | null;

  @Column('bigint', { name: 'fence_token', default: 0 }) fenceToken!: string;
}
