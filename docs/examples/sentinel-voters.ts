// The README's "Deploying safely" example: Sentinel-managed primaries as voters (ioredis options
// with `sentinels` + `name`). Type-checked by `npm run lint`; the README block appears here verbatim.
import { Module } from '@nestjs/common';
import { RedlockModule } from 'nest-quorum-lock';

@Module({
  imports: [
    RedlockModule.forRoot({
      nodes: [
        {
          sentinels: [
            { host: 's1', port: 26379 },
            { host: 's2', port: 26379 },
          ],
          name: 'locks-a',
        },
        {
          sentinels: [
            { host: 's1', port: 26379 },
            { host: 's2', port: 26379 },
          ],
          name: 'locks-b',
        },
        'redis://locks-c:6379',
      ],
    }),
  ],
})
export class SentinelVotersModule {}
