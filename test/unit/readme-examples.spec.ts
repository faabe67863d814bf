import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

/** The README and every page under docs/ (the README's details moved there). */
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The ```ts blocks of a Markdown text. */
export function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

const examples = readdirSync(join(root, 'docs', 'examples'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => readFileSync(join(root, 'docs', 'examples', f), 'utf8'))
  .join('\n');

/**
 * Every TypeScript block of the README and of docs/*.md must appear verbatim in docs/examples,
 * which `npm run lint` type-checks: an example that stops compiling fails CI.
 */
test.each(pages)('the TypeScript examples of %s are excerpts of type-checked files', (page) => {
  const blocks = tsBlocks(readFileSync(join(root, page), 'utf8'));
  const missing = blocks.filter((block) => !examples.includes(block));
  expect(missing).toEqual([]);
});

test('the README and docs/ hold the examples (and the check sees an edited one)', () => {
  const all = pages.flatMap((page) => tsBlocks(readFileSync(join(root, page), 'utf8')));
  expect(all.length).toBeGreaterThanOrEqual(15);
  expect(tsBlocks(readFileSync(join(root, 'README.md'), 'utf8')).length).toBeGreaterThanOrEqual(5);
  const edited = all[0]!.replace(/\S/, 'X');
  expect(examples.includes(edited)).toBe(false);
});

/** The Prisma schema blocks of the docs, each a model kept (and generated, run) in docs/examples/prisma. */
test('the Prisma models of docs/fencing.md are the files docs-examples.spec generates a client from', () => {
  const prisma = readdirSync(join(root, 'docs', 'examples', 'prisma'))
    .map((f) => readFileSync(join(root, 'docs', 'examples', 'prisma', f), 'utf8'))
    .join('\n');
  const blocks = [
    ...readFileSync(join(root, 'docs', 'fencing.md'), 'utf8').matchAll(/```prisma\n([\s\S]*?)```/g),
  ];
  expect(blocks.length).toBeGreaterThan(0);
  for (const [, block] of blocks) expect(prisma).toContain(block!);
});
