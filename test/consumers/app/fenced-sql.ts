/**
 * The app's use of `nest-quorum-lock/sql`, compiled with the app's own TypeScript (skipLibCheck
 * false in some apps) while no ORM is installed: the package's typings must name none.
 */
import { FencedTable, type FencedRead, type SqlHandle } from 'nest-quorum-lock/sql';

const accounts = new FencedTable<{ balance: string }>({ table: 'accounts' });

export async function withdraw(db: SqlHandle, id: string, token: number, amount: number): Promise<boolean> {
  const read: FencedRead<{ balance: string }> = await accounts.read(db, id, token);
  if (!read.accepted) return false; // refused: no row to act on
  const balance = Number(read.row.balance) - amount;
  return (await accounts.write(db, id, token, { balance: String(balance) })).accepted;
}
