import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
// A value import: emitDecoratorMetadata then records `Observable` where it is declared.
import { firstValueFrom, interval, lastValueFrom, map, Observable, of, take, toArray } from 'rxjs';
import { DistributedLock, FencingToken, LockLostError, Redlock, RedlockModule } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger, sleep } from '../../support/cluster.js';
import { eventually } from '../../support/eventually.js';

/*
 * A locked method's Observable (issue 36, item 5; the contract's fourth edition). Declared to
 * return one: cold, the lock taken on subscribe, and unsubscribing while the acquire waits cancels
 * it. Not declared (plain JavaScript, or TypeScript without an annotation): called under the lock;
 * the stream keeps that lock until its subscription ends, and one that nobody subscribes to gives
 * it back when its first validity would have ended, a later subscriber getting LockLostError.
 */

@Injectable()
class Streams {
  /** No return type declared: the decorator learns that it returns an Observable only from the call. */
  @DistributedLock('undeclared', { ttl: 600 })
  undeclared(@FencingToken() token?: number) {
    return interval(50).pipe(
      take(3),
      map(() => token!),
    );
  }

  @DistributedLock('declared', { wait: 5000 })
  declared(): Observable<number> {
    return of(1);
  }
}

describe('locked Observables (real nodes)', () => {
  let nodes: RedisNodes;
  let app: INestApplicationContext;
  let watcher: Redlock;

  beforeAll(async () => {
    nodes = await RedisNodes.start(3);
    watcher = new Redlock({ nodes: nodes.urls, restartGuard: false, logger: new MemoryLogger() });
    await watcher.connect();
    @Module({
      imports: [RedlockModule.forRoot({ nodes: nodes.urls, restartGuard: false })],
      providers: [Streams],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = await moduleRef.createNestApplication({ logger: false }).init();
  });
  afterAll(async () => {
    await app?.close();
    await watcher?.close();
    await nodes?.close();
  });

  const heldOnNodes = (resource: string) =>
    Promise.all(nodes.urls.map((_, i) => nodes.client(i).exists(`redlock:{${resource}}`)));

  test('undeclared: the stream runs under the lock the method was called with, released when it completes', async () => {
    const streams = app.get(Streams);
    expect(Reflect.getMetadata('design:returntype', Streams.prototype, 'undeclared')).not.toBe(Observable);
    const stream = (await streams.undeclared()) as Observable<number>;
    // (A round decides on the first majority: the third vote may still be on its way.)
    expect(await eventually(() => heldOnNodes('undeclared'), [1, 1, 1])).toEqual([1, 1, 1]);
    const tokens = await lastValueFrom(stream.pipe(toArray()));
    expect(new Set(tokens).size).toBe(1);
    expect((await watcher.inspect('undeclared')).fencingToken).toBe(tokens[0]);
    expect(await eventually(() => heldOnNodes('undeclared'), [0, 0, 0])).toEqual([0, 0, 0]);
  });

  test('undeclared, nobody subscribes: the lock is released after its validity (not maxHold), a late subscriber gets LockLostError', async () => {
    const streams = app.get(Streams);
    const stream = (await streams.undeclared()) as Observable<number>;
    // (A round decides on the first majority: the third vote may still be on its way.)
    expect(await eventually(() => heldOnNodes('undeclared'), [1, 1, 1])).toEqual([1, 1, 1]);
    await sleep(900); // more than the 600 ms lease, which the watchdog would extend for 10 min
    expect(await heldOnNodes('undeclared')).toEqual([0, 0, 0]);
    const late = await firstValueFrom(stream).catch((err: unknown) => err);
    expect(late).toBeInstanceOf(LockLostError);
    expect((late as Error).message).toMatch(/nothing subscribed/);
  });

  test('declared: unsubscribing while the acquire waits cancels it; it leaves the queues and never takes the lock', async () => {
    const streams = app.get(Streams);
    const holding = await watcher.acquire('declared', { ttl: 10_000 });
    const queued = () =>
      Promise.all(nodes.urls.map((_, i) => nodes.client(i).zcard('redlock:{declared}:queue')));
    const subscription = streams.declared().subscribe({ error: () => undefined });
    expect(await eventually(queued, [1, 1, 1])).toEqual([1, 1, 1]);
    subscription.unsubscribe();
    expect(await eventually(queued, [0, 0, 0])).toEqual([0, 0, 0]);
    await holding.release();
    await sleep(300);
    expect(await heldOnNodes('declared')).toEqual([0, 0, 0]);
    expect((await watcher.inspect('declared')).fencingToken).toBe(holding.fencingToken);
  });
});
