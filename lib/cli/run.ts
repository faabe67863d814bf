import { FUNCTION_LIBRARY } from '../core/scripts/library.js';

/** What a run of the command line printed, and its exit code. */
export interface CliResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number;
}

const USAGE = `Usage: nest-quorum-lock functions
  Prints the FUNCTION library (${FUNCTION_LIBRARY.name}) that the option scripts: 'functions'
  calls, for an administrator to load on every server (every master of a Cluster) where the lock's
  own ACL user may not FUNCTION LOAD:
    npx nest-quorum-lock functions | redis-cli -h HOST -p PORT -x FUNCTION LOAD
`;

/** `npx nest-quorum-lock <args>`: `functions` prints this version's FUNCTION library. */
export function runCli(args: readonly string[]): CliResult {
  const [command, ...rest] = args;
  if (command === 'functions' && rest.length === 0)
    return { stdout: FUNCTION_LIBRARY.source, stderr: '', code: 0 };
  if (command === undefined || command === 'help' || command === '--help' || command === '-h')
    return { stdout: USAGE, stderr: '', code: 0 };
  return { stdout: '', stderr: `nest-quorum-lock: unknown command: ${args.join(' ')}\n${USAGE}`, code: 2 };
}
