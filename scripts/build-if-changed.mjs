#!/usr/bin/env node
// The sample app's build step (`npm run start:sample`). It emits the JavaScript of lib/ and
// sample-app/src without type-checking, as `nest start -b swc` does: one TypeScript program per
// tsconfig with `noCheck` and `noResolve`, so neither node_modules' declarations nor the checker are
// loaded (about a third of `npm run build`'s CPU). Type errors are still caught by `npm run build`,
// `npm run lint` and `npm test`, which type-check everything. The output is the same JavaScript
// except for decorator metadata of imported classes, which is emitted in the guarded form
// (`typeof X !== "undefined" && X`) that `isolatedModules` builds use; the project is checked with
// `isolatedModules`, so that form resolves to the same classes at run time.
//
// It skips the emit when nothing it reads changed since the last emit that succeeded here, so
// starting the app again costs no compile. The record of that emit lives in node_modules/.cache
// (never in dist/, which is published): a fresh clone, a removed dist/ or any changed, added or
// removed source file emits again.
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

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
const started = performance.now();
for (const config of ['tsconfig.build.json', 'sample-app/tsconfig.json']) emit(config);
mkdirSync(dirname(record), { recursive: true });
writeFileSync(record, JSON.stringify({ fingerprint: now }));
console.log(`build: emitted lib/ and sample-app/ in ${Math.round(performance.now() - started)} ms`);

/** Emits one tsconfig's JavaScript without type-checking; a syntax error stops the start. */
function emit(config) {
  const host = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => fail([diagnostic]),
  };
  const parsed = ts.getParsedCommandLineOfConfigFile(join(root, config), {}, host);
  if (parsed.errors.length > 0) fail(parsed.errors);
  const program = ts.createProgram(parsed.fileNames, {
    ...parsed.options,
    noCheck: true,
    noResolve: true,
    types: [],
    declaration: false,
    declarationMap: false,
  });
  const syntaxErrors = program.getSyntacticDiagnostics();
  if (syntaxErrors.length > 0) fail(syntaxErrors);
  const result = program.emit();
  if (result.emitSkipped) fail(result.diagnostics);
}

function fail(diagnostics) {
  console.error(
    ts.formatDiagnosticsWithColorAndContext(diagnostics, {
      getCanonicalFileName: (name) => name,
      getCurrentDirectory: () => root,
      getNewLine: () => '\n',
    }),
  );
  process.exit(1);
}
