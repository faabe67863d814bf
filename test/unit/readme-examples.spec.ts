import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every TypeScript block of the README must appear verbatim in docs/examples, which `npm run lint`
 * type-checks: an example that stops compiling fails CI.
 */
test('README TypeScript examples are excerpts of type-checked files', () => {
  const root = join(import.meta.dirname, '..', '..');
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const dir = join(root, 'docs', 'examples');
  const examples = readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
  expect(blocks.length).toBeGreaterThanOrEqual(5);
  const missing = blocks.filter((block) => !examples.includes(block));
  expect(missing).toEqual([]);
});
