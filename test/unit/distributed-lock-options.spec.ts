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
});
