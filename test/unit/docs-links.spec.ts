import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/**
 * The README and the pages under docs/ (and bench/README.md) link to each other by relative path
 * and anchor: a page that moves or a heading that is renamed must not leave a dead link behind.
 * The README also stays short: the details live under docs/.
 */
const root = join(import.meta.dirname, '..', '..');
const pages = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, duplicates numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Relative links `[text](target)` and images outside code blocks and code spans. */
export function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

function brokenLinks(page: string): string[] {
  const text = readFileSync(join(root, page), 'utf8');
  const broken: string[] = [];
  for (const link of linksOf(text)) {
    const [path, anchor] = link.split('#', 2) as [string, string | undefined];
    const target = path === '' ? join(root, page) : join(root, dirname(page), decodeURIComponent(path));
    if (!existsSync(target)) {
      broken.push(`${page}: ${link} (no file ${relative(root, target)})`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(target).isDirectory() || !target.endsWith('.md')) {
      broken.push(`${page}: ${link} (an anchor into something that is not a Markdown page)`);
    } else if (!anchorsOf(readFileSync(target, 'utf8')).has(anchor)) {
      broken.push(`${page}: ${link} (no heading #${anchor} in ${relative(root, target)})`);
    }
  }
  return broken;
}

test.each(pages)('every relative link and anchor in %s resolves', (page) => {
  expect(brokenLinks(page)).toEqual([]);
});

test('the link check finds a dead file and a dead anchor', () => {
  const links = linksOf('[a](docs/none.md) [b](#nowhere) `[c](#in-code)`\n```\n[d](#in-block)\n```\n# Here');
  expect(links).toEqual(['docs/none.md', '#nowhere']);
  expect(anchorsOf('# Fencing in PostgreSQL\n## @DistributedLock and key templates\n# Here\n# Here')).toEqual(
    new Set(['fencing-in-postgresql', 'distributedlock-and-key-templates', 'here', 'here-1']),
  );
});

test('the README stays under 600 lines (details go to docs/)', () => {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length;
  expect(lines).toBeLessThan(600);
});
