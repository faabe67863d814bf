import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The transports' packages are optional peers: an app without @nestjs/microservices (or
 * websockets, or GraphQL) must still load the library. So lib/ may reach them only through
 * `await import()` on first use (lib/nest/contexts), or with type-only imports, which are erased.
 */
const OPTIONAL_PEERS = ['@nestjs/microservices', '@nestjs/websockets', '@nestjs/graphql', 'graphql'];
const LIB = join(process.cwd(), 'lib');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Static value imports / re-exports of `pkg` (or a subpath of it) in `text`. */
function staticImportsOf(text: string, pkg: string): string[] {
  const quoted = `['"]${pkg.replace(/[/.]/g, '\\$&')}(?:/[^'"]*)?['"]`;
  const fromClause = new RegExp(`^\\s*(import|export)\\s+(?!type\\s)[^;]*?\\bfrom\\s+${quoted}`, 'gm');
  const bare = new RegExp(`^\\s*import\\s+${quoted}`, 'gm');
  const required = new RegExp(`\\brequire\\(\\s*${quoted}\\s*\\)`, 'g');
  return [...text.matchAll(fromClause), ...text.matchAll(bare), ...text.matchAll(required)].map((m) =>
    m[0].trim(),
  );
}

test('lib/ never imports an optional transport package statically', () => {
  const files = sources(LIB);
  expect(files.length).toBeGreaterThan(10);
  const offending = files.flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    return OPTIONAL_PEERS.flatMap((pkg) =>
      staticImportsOf(text, pkg).map((hit) => `${relative(LIB, file)}: ${hit}`),
    );
  });
  expect(offending).toEqual([]);
});

test('the check itself sees a static import (it can fail)', () => {
  expect(
    staticImportsOf("import { RpcException } from '@nestjs/microservices';", '@nestjs/microservices'),
  ).toHaveLength(1);
  expect(staticImportsOf("import { GraphQLError } from 'graphql';", 'graphql')).toHaveLength(1);
  expect(staticImportsOf("import type { GraphQLError } from 'graphql';", 'graphql')).toEqual([]);
  expect(staticImportsOf("const m = await import('@nestjs/websockets');", '@nestjs/websockets')).toEqual([]);
});
