#!/usr/bin/env node
import { freshNodeCommand, FRESH_NODE_USAGE } from './fresh-node.js';

/*
 * The package's command line (`npx nest-quorum-lock <command>`). One command so far: fresh-node.
 */

const [command, ...args] = process.argv.slice(2);
const out = { log: (line: string) => console.log(line), error: (line: string) => console.error(line) };

async function main(): Promise<number> {
  if (command === 'fresh-node') return freshNodeCommand(args, out);
  out.error(
    `${command === undefined ? 'Name a command' : `Unknown command ${JSON.stringify(command)}`}.\n${FRESH_NODE_USAGE}`,
  );
  return 2;
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
