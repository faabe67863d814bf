import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { renderTimeline } from '../faults/timeline.js';
import {
  CONTROLS,
  DEFAULT_OPTIONS,
  FAULT_KINDS,
  type Control,
  type FaultKind,
  type SimOptions,
} from './config.js';
import { seedOf } from './random.js';
import { describeViolation } from './report.js';
import { runOnce, type RunResult } from './run.js';

/*
 * npm run simulate -- [--seconds S | --runs R] [--seed N] [--replay SEED] [--control restart|clock|fencing]
 *   [--voters N] [--clients N] [--faults a,b,...] [--all-faults] [--separate-budgets] [--timeline FILE]
 *
 * Runs seeds one after another (from --seed, default one derived from the commit) for --seconds of
 * wall time (default 60), or for --runs seeds exactly (the same runs on any machine: what `npm test`
 * runs), and prints a progress line per 1,000 runs, every violation (its seed, the
 * invariant, the events of the keys involved, the command that replays it) and at the end
 * `simulated R runs (S simulated s, N operations) in W s: V violations`. --replay runs one seed
 * twice and prints what each run found (the same, event for event: the trace hashes agree).
 */

interface Cli {
  seconds: number;
  runs: number | undefined;
  seed: number | undefined;
  replay: number | undefined;
  timeline: string | undefined;
  options: SimOptions;
}

function parse(argv: readonly string[]): Cli {
  const cli: Cli = {
    seconds: 60,
    runs: undefined,
    seed: undefined,
    replay: undefined,
    timeline: undefined,
    options: DEFAULT_OPTIONS,
  };
  let options: { -readonly [K in keyof SimOptions]: SimOptions[K] } = { ...DEFAULT_OPTIONS };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    const int = (min: number) => {
      const v = value();
      const n = Number(v);
      if (!Number.isInteger(n) || n < min)
        throw new Error(`${flag} takes a whole number of at least ${min}, not ${v}`);
      return n;
    };
    switch (flag) {
      case '--seconds':
        cli.seconds = Number(value());
        if (!(cli.seconds > 0)) throw new Error('--seconds takes a number above 0');
        break;
      case '--runs':
        cli.runs = int(1);
        break;
      case '--seed':
        cli.seed = int(0);
        break;
      case '--replay':
        cli.replay = int(0);
        break;
      case '--timeline':
        cli.timeline = value();
        break;
      case '--voters':
        options.voters = int(1);
        break;
      case '--clients':
        options.clients = int(1);
        break;
      case '--all-faults':
        options.allFaults = true;
        break;
      case '--separate-budgets':
        options.separateBudgets = true;
        break;
      case '--faults': {
        const kinds = value().split(',').filter(Boolean);
        const unknown = kinds.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
        if (unknown.length)
          throw new Error(`unknown fault kinds ${unknown.join(', ')}: pick from ${FAULT_KINDS.join(', ')}`);
        options.faults = kinds as FaultKind[];
        break;
      }
      case '--control': {
        const control = value();
        if (!(CONTROLS as readonly string[]).includes(control))
          throw new Error(`unknown control ${control}: pick from ${CONTROLS.join(', ')}`);
        options = { ...options, control: control as Control };
        break;
      }
      default:
        throw new Error(`unknown option ${flag} (see test/sim/README.md)`);
    }
  }
  cli.options = options;
  return cli;
}

/** The flags that select `options` (what a replay needs besides the seed). */
export function flagsOf(options: SimOptions): string {
  const flags: string[] = [];
  if (options.voters !== DEFAULT_OPTIONS.voters) flags.push(`--voters ${options.voters}`);
  if (options.clients !== DEFAULT_OPTIONS.clients) flags.push(`--clients ${options.clients}`);
  if (options.faults.join() !== DEFAULT_OPTIONS.faults.join())
    flags.push(`--faults ${options.faults.join(',')}`);
  if (options.allFaults) flags.push('--all-faults');
  if (options.separateBudgets) flags.push('--separate-budgets');
  if (options.control) flags.push(`--control ${options.control}`);
  return flags.length ? ` ${flags.join(' ')}` : '';
}

/** A seed derived from the commit checked out (the same runs for the same commit). */
export function commitSeed(): { seed: number; commit: string } {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    // not a git checkout: one fixed seed
  }
  return { seed: seedOf(commit), commit };
}

function printViolations(result: RunResult, options: SimOptions): void {
  for (const v of result.violations) {
    console.log(describeViolation(result, v));
    console.log(`  replay: npm run simulate -- --replay ${result.seed}${flagsOf(options)}\n`);
  }
}

function timeline(result: RunResult, file: string): void {
  const windows = result.world.log.map((e) => ({
    label: e.what,
    start: BigInt(Math.round(e.at * 1e6)),
    end: BigInt(Math.round((e.at + (e.forMs ?? 50)) * 1e6)),
  }));
  const html = renderTimeline({
    id: `seed-${result.seed}`,
    title: result.violations.map((v) => v.invariant).join(', ') || 'no violation',
    report: result.report,
    windows,
  });
  writeFileSync(file, html);
  console.log(`timeline: ${file}`);
}

async function main(): Promise<void> {
  const cli = parse(process.argv.slice(2));
  const { options } = cli;
  if (cli.replay !== undefined) {
    const first = await runOnce(cli.replay, options);
    const second = await runOnce(cli.replay, options);
    for (const [n, result] of [first, second].entries()) {
      console.log(
        `run ${n + 1} of seed ${cli.replay}: ${result.events} events, trace ${result.trace}, ${result.violations.length} violations`,
      );
      printViolations(result, options);
    }
    const same = first.trace === second.trace && first.events === second.events;
    console.log(
      same
        ? 'both runs identical (same events, same trace)'
        : 'THE RUNS DIFFER: the simulation is not deterministic',
    );
    if (cli.timeline) timeline(first, cli.timeline);
    process.exitCode = same && first.violations.length === 0 ? 0 : 1;
    return;
  }
  const from = cli.seed ?? commitSeed().seed;
  console.log(
    `simulating from seed ${from}${flagsOf(options)} for ${cli.runs === undefined ? `${cli.seconds} s` : `${cli.runs} runs`}` +
      (cli.seed === undefined ? ` (derived from commit ${commitSeed().commit.slice(0, 12)})` : ''),
  );
  const started = performance.now();
  const cpuStarted = process.cpuUsage();
  let runs = 0;
  let simulatedMs = 0;
  let operations = 0;
  let violations = 0;
  const failing: number[] = [];
  const more = () =>
    cli.runs === undefined ? performance.now() - started < cli.seconds * 1000 : runs < cli.runs;
  for (let seed = from; more(); seed = (seed + 1) >>> 0) {
    const result = await runOnce(seed, options);
    runs++;
    simulatedMs += result.simulatedMs;
    operations += result.operations;
    if (result.violations.length > 0) {
      violations += result.violations.length;
      failing.push(seed);
      printViolations(result, options);
      if (cli.timeline) timeline(result, cli.timeline);
    }
    if (runs % 1000 === 0) {
      const wall = (performance.now() - started) / 1000;
      console.log(
        `${runs} runs, ${(simulatedMs / 1000).toFixed(0)} simulated s in ${wall.toFixed(0)} s ` +
          `(${(simulatedMs / 1000 / wall).toFixed(0)} simulated s per s, ${(operations / wall).toFixed(0)} operations per s): ${violations} violations`,
      );
    }
  }
  const wall = (performance.now() - started) / 1000;
  // CPU time too: on a shared machine the wall figure says as much about the neighbours.
  const cpuUsed = process.cpuUsage(cpuStarted);
  const cpu = (cpuUsed.user + cpuUsed.system) / 1e6;
  console.log(
    `${(simulatedMs / 1000 / wall).toFixed(0)} simulated s per wall s, ${(operations / wall).toFixed(0)} operations per wall s ` +
      `(${(simulatedMs / 1000 / cpu).toFixed(0)} simulated s, ${(operations / cpu).toFixed(0)} operations per CPU s)` +
      (failing.length ? `; failing seeds: ${failing.slice(0, 20).join(' ')}` : ''),
  );
  console.log(
    `simulated ${runs} runs (${(simulatedMs / 1000).toFixed(0)} simulated s, ${operations} operations) in ${wall.toFixed(1)} s: ${violations} violations`,
  );
  process.exitCode = violations > 0 ? 1 : 0;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 2;
});
