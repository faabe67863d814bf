import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * @nestjs/terminus is an optional peer: an app without it must load the main entry. So nothing
 * that `lib/index.ts` reaches may import it (or lib/terminus) at run time; only the
 * `nest-quorum-lock/terminus` entry does.
 */
const LIB = join(process.cwd(), 'lib');

/** Run-time import specifiers of a TypeScript source (type-only imports are erased by tsc). */
function runtimeImports(text: string): string[] {
  const specifiers: string[] = [];
  const fromClause = /^\s*(?:import|export)\s+(?!type\s)[^;]*?\bfrom\s+['"]([^'"]+)['"]/gm;
  const bare = /^\s*import\s+['"]([^'"]+)['"]/gm;
  const dynamic = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const re of [fromClause, bare, dynamic]) for (const m of text.matchAll(re)) specifiers.push(m[1]!);
  return specifiers;
}

/** Every source file reachable from `entry` through relative run-time imports, and the packages they import. */
function graph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of runtimeImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { files, packages };
}

test('the main entry never reaches @nestjs/terminus or lib/terminus', () => {
  const { files, packages } = graph(join(LIB, 'index.ts'));
  expect(files.size).toBeGreaterThan(10);
  expect([...packages].filter((p) => p.startsWith('@nestjs/terminus'))).toEqual([]);
  expect([...files].map((f) => relative(LIB, f)).filter((f) => f.startsWith('terminus'))).toEqual([]);
});

test('the terminus entry does import @nestjs/terminus (the check can fail)', () => {
  const { packages } = graph(join(LIB, 'terminus', 'index.ts'));
  expect(packages).toContain('@nestjs/terminus');
});

test('package.json exports ./terminus where tsconfig.build.json emits lib/terminus/index.ts', () => {
  const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8'));
  expect(pkg.exports['./terminus']).toEqual({
    types: './dist/terminus/index.d.ts',
    default: './dist/terminus/index.js',
  });
  expect(pkg.typesVersions['*'].terminus).toEqual(['./dist/terminus/index.d.ts']);
  expect(pkg.peerDependencies['@nestjs/terminus']).toBe('^11.0.0 || ^12.0.0');
  expect(pkg.peerDependenciesMeta['@nestjs/terminus']).toEqual({ optional: true });
});
