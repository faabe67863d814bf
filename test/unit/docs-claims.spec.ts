import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { LockService, RedlockOptionsError } from '../../lib/index.js';
import { RedlockTestingModule } from '../../lib/testing/index.js';

/*
 * Claims of the README and docs/ that are prose rather than code (issue 40, item 8): each is
 * quoted from its page and checked against package.json or the engine (here the in-memory voter of
 * RedlockTestingModule: option checks need no Redis). Code examples are checked elsewhere
 * (readme-examples.spec.ts compiles them; docs-examples-*.spec.ts run them).
 */

const root = join(import.meta.dirname, '..', '..');
const page = (path: string) => readFileSync(join(root, path), 'utf8');
/** The text of a Markdown section, from its heading to the next heading of the same level. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start === -1) throw new Error(`no section ${heading}`);
  const level = heading.split(' ')[0]!;
  const next = markdown.indexOf(`\n${level} `, start + heading.length + 2);
  return markdown.slice(start, next === -1 ? undefined : next);
}

/** The Redis clients the library takes (lib/core/clients/), as npm names them. */
const CLIENT_PACKAGES = ['ioredis', 'iovalkey', 'redis', '@valkey/valkey-glide'];

describe('docs claims', () => {
  test("the README's install line names every Redis client the package takes: ioredis, iovalkey, redis (node-redis) or @valkey/valkey-glide", () => {
    const manifest = JSON.parse(page('package.json')) as {
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    for (const name of CLIENT_PACKAGES) {
      expect({ name, optionalPeer: manifest.peerDependenciesMeta[name]?.optional }).toEqual({
        name,
        optionalPeer: true,
      });
    }
    const installation = section(page('README.md'), '## Installation');
    expect(installation).toContain('ioredis, iovalkey, redis (node-redis) or @valkey/valkey-glide');
    const install = /```bash\n(npm install nest-quorum-lock[^\n]*)\n```/.exec(installation)?.[1];
    expect(install).toBeDefined();
    for (const name of CLIENT_PACKAGES) expect(install).toMatch(new RegExp(`(^|[\\s:,])${name}(\\s|,|$)`));
  });

  test("docs/semaphores.md: mode 'read' with permits > 1 is a RedlockOptionsError; mode 'read' alone is a reader (not 'reserved')", async () => {
    const limits = section(page('docs/semaphores.md'), '## Limits');
    expect(limits).not.toMatch(/reserved/);
    expect(limits).toContain(
      "A semaphore has no read mode: `mode: 'read'` with `permits` > 1 is a `RedlockOptionsError`",
    );
    expect(limits).toContain("`mode: 'read'` alone is a read-write lock's reader");

    const moduleRef = await Test.createTestingModule({ imports: [RedlockTestingModule.forRoot()] }).compile();
    await moduleRef.init();
    try {
      const locks = moduleRef.get(LockService);
      const refused = await locks.acquire('gpu', { permits: 4, mode: 'read' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RedlockOptionsError);
      expect((refused as Error).message).toContain("'read' with permits > 1");
      const reader = await locks.acquire('catalog', { mode: 'read' });
      const another = await locks.acquire('catalog', { mode: 'read' }); // shared
      expect([reader.mode, another.mode]).toEqual(['read', 'read']);
      await Promise.all([reader.release(), another.release()]);
    } finally {
      await moduleRef.close();
    }
  });
});
