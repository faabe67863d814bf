import 'reflect-metadata';
import { DistributedLock, RedlockOptionsError } from '../../lib/index.js';
import { keySlot, lockKeyOf } from '../../lib/core/scripts/keys.js';
import { compileLockKey } from '../../lib/nest/lock-key.js';

/*
 * Key templates of @DistributedLock (issue 40, item 1; contract, fourth edition): `{0}` and paths
 * into an argument resolve; any other `{...}` is a RedlockOptionsError when the decorator is
 * applied, naming the method and suggesting `{0}` or `{0.id}`; `{{` and `}}` are literal braces.
 * Before, `'pay:{id}'` was accepted as the literal key "pay:{id}", which every order shared.
 */

/** The error thrown while the class is declared, or undefined. */
function declaring(declare: () => unknown): RedlockOptionsError | undefined {
  try {
    declare();
    return undefined;
  } catch (err) {
    if (err instanceof RedlockOptionsError) return err;
    throw err;
  }
}

describe('@DistributedLock key templates', () => {
  test("a named placeholder ('pay:{id}') is refused when the decorator is applied, naming the method and suggesting {0} or {0.id}", () => {
    const err = declaring(() => {
      class OrdersService {
        @DistributedLock('pay:{id}')
        async pay(id: string): Promise<string> {
          return id;
        }
      }
      return OrdersService;
    });
    expect(err).toBeInstanceOf(RedlockOptionsError);
    expect(err!.option).toBe("@DistributedLock('pay:{id}') on OrdersService.pay");
    expect(err!.message).toBe(
      "Invalid Redlock option `@DistributedLock('pay:{id}') on OrdersService.pay`: {id} is not an argument " +
        "placeholder. Placeholders name the method's arguments by position: write {0} for the first argument, " +
        'or {0.id} for its "id" property (a route\'s :id is usually {0}). Write {{ and }} for literal braces.',
    );
  });

  test('a named path suggests the same path under {0}; other contents suggest {0.id}', () => {
    const named = declaring(() => compileLockKey('invoice:{customer.id}', 'Billing.run'));
    expect(named!.message).toContain('{customer.id} is not an argument placeholder');
    expect(named!.message).toContain('{0.customer.id} for its "customer.id" property');
    for (const template of ['a:{}', 'a:{ 0 }', 'a:{-1}', 'a:{0.}', 'a:{0.items.0}', 'a:{0..id}']) {
      const err = declaring(() => compileLockKey(template, 'Billing.run'));
      expect(err?.message).toContain('is not an argument placeholder');
      expect(err?.message).toContain('write {0} for the first argument, or {0.id}');
    }
  });

  test('an array of keys is refused for its one bad template, which the error names', () => {
    const err = declaring(() => compileLockKey(['order:{0}', 'stock:{sku}'], 'Orders.ship'));
    expect(err!.option).toBe("@DistributedLock('stock:{sku}') on Orders.ship");
    expect(err!.message).toContain('{0.sku}');
  });

  test('a lone } or an unclosed { is refused at once, saying how to write a literal brace', () => {
    const lone = declaring(() => compileLockKey('a}b', 'Jobs.run'));
    expect(lone!.message).toContain('a lone } at position 1');
    expect(lone!.message).toContain('Write }} for a literal }');
    const unclosed = declaring(() => compileLockKey('order:{0', 'Jobs.run'));
    expect(unclosed!.message).toContain('a { at position 6 is never closed');
  });

  test('positional placeholders and paths resolve as before', () => {
    const resolve = compileLockKey(['order:{0}', 'user:{1.id}', 'c:{1.customer.id}:{0}'], 'Orders.pay');
    expect(resolve(['42', { id: 7, customer: { id: 'c9' } }])).toEqual(['order:42', 'user:7', 'c:c9:42']);
  });

  test('{{ and }} are literal braces: a Redis Cluster hash tag shared by two resources of one order', () => {
    const resolve = compileLockKey(['{{order:{0}}}:items', '{{order:{0}}}:payment'], 'Orders.ship');
    expect(resolve(['42'])).toEqual(['{order:42}:items', '{order:42}:payment']);
    expect(compileLockKey('{{0}}', 'X.y')([])).toEqual(['{0}']); // escaped: not a placeholder
    expect(compileLockKey('{{{0}}}', 'X.y')(['7'])).toEqual(['{7}']);
    // The library tags each lock key with its resource (`<prefix>{<resource>}`); Redis hashes the
    // text from the first { to the next }: "{order:42", the same for both keys of the order.
    const [items, payment] = resolve(['42']).map((r) => lockKeyOf('redlock:', r));
    expect(items).toBe('redlock:{{order:42}:items}');
    expect(keySlot(items!)).toBe(keySlot(payment!));
    expect(keySlot(items!)).toBe(keySlot('{order:42'));
  });

  test('a key without braces is the resource itself; key functions are not templates', () => {
    expect(compileLockKey('settlement', 'X.y')([])).toEqual(['settlement']);
    const fromFunction = compileLockKey((id: string) => `order:{${id}}`, 'X.y');
    expect(fromFunction(['42'])).toEqual(['order:{42}']);
  });
});
