/**
 * The fencing rule of nest-quorum-lock/postgres written with TypeORM and with Prisma. Neither ORM
 * is a dependency of this project, so these functions are type-checked against the part of each
 * API they use (declared below, as the ORMs declare it) but not run by the tests.
 */

// ---- the slice of TypeORM's API used below (typeorm 0.3) ----
interface UpdateResult {
  affected?: number;
}
interface UpdateQueryBuilder {
  set(values: Record<string, unknown>): UpdateQueryBuilder;
  where(where: string, parameters?: Record<string, unknown>): UpdateQueryBuilder;
  execute(): Promise<UpdateResult>;
}
interface DataSource {
  createQueryBuilder(): { update(entity: string): UpdateQueryBuilder };
  getRepository(entity: string): { findOneBy(where: Record<string, unknown>): Promise<AccountEntity | null> };
}
interface AccountEntity {
  id: string;
  balance: string;
  fenceToken: string;
}

// ---- the slice of Prisma Client's API used below (prisma 5/6) ----
interface PrismaClient {
  account: {
    updateMany(args: {
      where: { id: string; fenceToken: { lte: bigint } };
      data: { balance?: bigint; fenceToken: bigint };
    }): Promise<{ count: number }>;
    findUnique(args: { where: { id: string } }): Promise<{ id: string; balance: bigint } | null>;
  };
  $executeRaw(query: TemplateStringsArray, ...values: unknown[]): Promise<number>;
}

// ---- TypeORM ----
export async function fencedReadTypeOrm(dataSource: DataSource, id: string, token: number) {
  // Record the token first (refused if a higher one is there), then read: a value changed
  // after this read can only come from a higher token, which also makes our write fail.
  const claimed = await dataSource
    .createQueryBuilder()
    .update('Account')
    .set({ fenceToken: token })
    .where('id = :id AND fence_token <= :token', { id, token })
    .execute();
  if (claimed.affected !== 1) return null; // a newer holder got there first (or no such row)
  return dataSource.getRepository('Account').findOneBy({ id });
}

export async function fencedWriteTypeOrm(dataSource: DataSource, id: string, token: number, balance: number) {
  const result = await dataSource
    .createQueryBuilder()
    .update('Account')
    .set({ balance, fenceToken: token })
    .where('id = :id AND fence_token <= :token', { id, token })
    .execute();
  return result.affected === 1; // false: a newer holder has read or written the row
}

// ---- Prisma ----
export async function fencedReadPrisma(prisma: PrismaClient, id: string, token: number) {
  const { count } = await prisma.account.updateMany({
    where: { id, fenceToken: { lte: BigInt(token) } },
    data: { fenceToken: BigInt(token) },
  });
  if (count !== 1) return null; // a newer holder got there first (or no such row)
  return prisma.account.findUnique({ where: { id } });
}

export async function fencedWritePrisma(prisma: PrismaClient, id: string, token: number, balance: bigint) {
  const { count } = await prisma.account.updateMany({
    where: { id, fenceToken: { lte: BigInt(token) } },
    data: { balance, fenceToken: BigInt(token) },
  });
  return count === 1;
}

export async function fencedUpsertPrisma(prisma: PrismaClient, id: string, token: number, balance: bigint) {
  // For rows that may not exist yet, the SQL of FencedTable.write, raw (values are parameters):
  const changed = await prisma.$executeRaw`
    INSERT INTO accounts AS cur (id, balance, fence_token) VALUES (${id}, ${balance}, ${token})
    ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance, fence_token = EXCLUDED.fence_token
    WHERE cur.fence_token <= EXCLUDED.fence_token`;
  return changed === 1;
}
