#!/usr/bin/env node
import { freshNodeCommand, FRESH_NODE_USAGE } from './fresh-node.js';
import { runCli } from './run.js';

/*
 * The package's command line (`npx nest-quorum-lock <command>`): `functions` prints the FUNCTION
 * library (run.ts); `fresh-node` records brand-new, empty nodes as fresh (fresh-node.ts).
 */

const [command, ...args] = process.argv.slice(2);
const out = { log: (line: string) => console.log(line), error: (line: string) => console.error(line) };

async function main(): Promise<number> {
  if (command === 'fresh-node') return freshNodeCommand(args, out);
  const { stdout, stderr, code } = runCli(process.argv.slice(2));
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  if (code !== 0 || command === undefined || command === 'help' || command.startsWith('-'))
    process.stdout.write(`\n${FRESH_NODE_USAGE}\n`);
  return code;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
