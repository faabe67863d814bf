import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const lib = join(import.meta.dirname, '..', '..', 'lib');

/** Every module `entry` reaches through relative imports, with the bare packages each imports. */
function graph(entry: string): Map<string, { runtime: string[]; typeOnly: string[] }> {
  const seen = new Map<string, { runtime: string[]; typeOnly: string[] }>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const source = readFileSync(file, 'utf8');
    const imports = { runtime: [] as string[], typeOnly: [] as string[] };
    seen.set(file, imports);
    for (const m of source.matchAll(/^(?:import|export)\s+(type\s+)?[^'"]*?from\s+'([^']+)'/gm)) {
      const [, typeOnly, spec] = m;
      if (spec!.startsWith('.')) visit(resolve(dirname(file), spec!.replace(/\.js$/, '.ts')));
      else (typeOnly ? imports.typeOnly : imports.runtime).push(spec!);
    }
  };
  visit(join(lib, entry));
  return seen;
}
const packages = (g: ReturnType<typeof graph>, kind: 'runtime' | 'typeOnly') =>
  new Set([...g.values()].flatMap((i) => i[kind]));

test('the main entry point never reaches the PostgreSQL helper or pg', () => {
  const main = graph('index.ts');
  expect(main.size).toBeGreaterThan(5);
  expect([...main.keys()].filter((f) => f.includes(join('fencing', 'postgres')))).toEqual([]);
  expect(packages(main, 'runtime').has('pg')).toBe(false);
});

test('nest-quorum-lock/postgres imports nothing at run time, and not even the types of pg', () => {
  const postgres = graph(join('fencing', 'postgres', 'index.ts'));
  expect(postgres.size).toBeGreaterThanOrEqual(5);
  expect([...packages(postgres, 'runtime')]).toEqual([]);
  expect(packages(postgres, 'typeOnly').has('pg')).toBe(false); // users need no @types/pg
});
