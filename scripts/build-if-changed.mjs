#!/usr/bin/env node
// The sample app's build step (`npm run start:sample`): runs `npm run build` unless nothing it
// reads changed since the last build that succeeded here, so that starting the app again after a
// first run costs no compile (as `nest start` and `tsc -b` skip up-to-date work). The record of
// that build lives in node_modules/.cache (never in dist/, which is published): a fresh clone, a
// removed dist/ or any changed, added or removed source file builds again.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const record = join(root, 'node_modules', '.cache', 'nest-quorum-lock', 'sample-build.json');
const inputs = [
  'lib',
  'sample-app/src',
  'tsconfig.json',
  'tsconfig.build.json',
  'sample-app/tsconfig.json',
  'package.json',
];
const outputs = ['dist/index.js', 'sample-app/dist/main.js'];

/** Every input file with its size and mtime: a change to any of them changes this text. */
function fingerprint() {
  const files = [];
  const visit = (path) => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return;
    if (stat.isDirectory()) for (const name of readdirSync(path).sort()) visit(join(path, name));
    else files.push(`${path.slice(root.length + 1)}:${stat.size}:${stat.mtimeMs}`);
  };
  for (const input of inputs) visit(join(root, input));
  return files.join('\n');
}

const now = fingerprint();
const upToDate =
  outputs.every((output) => existsSync(join(root, output))) &&
  existsSync(record) &&
  JSON.parse(readFileSync(record, 'utf8')).fingerprint === now;
if (upToDate) {
  console.log('build: up to date (no source changed since the last build here); skipped');
  process.exit(0);
}
const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
mkdirSync(dirname(record), { recursive: true });
writeFileSync(record, JSON.stringify({ fingerprint: now }));
