import 'reflect-metadata';
import { DistributedLock, RedlockOptionsError, type LockOptions } from '../../lib/index.js';

/** `onBusy` is checked when the class is declared, like the key: a typo fails at bootstrap. */
describe('@DistributedLock options', () => {
  test("an onBusy other than 'throw' or 'skip' is a RedlockOptionsError naming the method", () => {
    const declare = () => {
      class Jobs {
        @DistributedLock('report', { onBusy: 'skp' as 'skip' })
        async report(): Promise<void> {}
      }
      return Jobs;
    };
    expect(declare).toThrow(RedlockOptionsError);
    expect(declare).toThrow(/@DistributedLock onBusy on Jobs\.report.*got skp.*Use 'throw' or 'skip'/);
  });

  test("'skip' and 'throw' are accepted, also as core LockOptions (the contract lists onBusy there)", () => {
    const skip: LockOptions = { onBusy: 'skip', holdAtLeast: 500 };
    const declare = () => {
      class Jobs {
        @DistributedLock('a', skip)
        async a(): Promise<void> {}

        @DistributedLock('b', { onBusy: 'throw' })
        async b(): Promise<void> {}
      }
      return Jobs;
    };
    expect(declare).not.toThrow();
  });

  test("mode 'read' on several fixed keys is a RedlockOptionsError naming the method; on one key it is accepted", () => {
    const several = () => {
      class Catalog {
        @DistributedLock(['prices', 'stock'], { mode: 'read' })
        async read(): Promise<void> {}
      }
      return Catalog;
    };
    expect(several).toThrow(RedlockOptionsError);
    expect(several).toThrow(/@DistributedLock mode on Catalog\.read.*'read' with 2 keys/);
    const one = () => {
      class Catalog {
        @DistributedLock('prices', { mode: 'read' })
        async read(): Promise<void> {}

        @DistributedLock(['prices', 'stock'])
        async rebuild(): Promise<void> {}
      }
      return Catalog;
    };
    expect(one).not.toThrow();
  });
});
