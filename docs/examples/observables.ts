// Examples shown in docs/distributed-lock.md. Type-checked by `npm run lint`; a test checks that
// every TypeScript block of the docs appears here verbatim, and
// test/integration/nest/docs-examples-decorator.e2e.spec.ts runs them on real nodes.
import { Injectable } from '@nestjs/common';
import { DistributedLock, FencingToken } from 'nest-quorum-lock';
import { Observable, share } from 'rxjs';

interface PriceSource {
  stream(sku: string, fence: number): Observable<number>;
}

@Injectable()
export class PriceFeed {
  constructor(private readonly prices: PriceSource) {}

  // Declared to return an Observable: each subscription runs this body under a lock of its own,
  // taken when it subscribes and released when its stream completes, errors or is unsubscribed.
  @DistributedLock('price-feed:{0}', { wait: 5_000 })
  ticks(sku: string, @FencingToken() token?: number): Observable<number> {
    return this.prices.stream(sku, token!);
  }
}

// Several subscribers, one run (and one lock): share the stream the method returns.
export function sharedTicks(feed: PriceFeed, sku: string): Observable<number> {
  return feed.ticks(sku).pipe(share());
}
