import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { CONTROL_CASES, KNOWN_ISSUE_CASES, REGRESSION_CASES, type SimCase } from './cases.js';

/*
 * The deterministic simulation in `npm test` (issue 37, item 9), as `npm run simulate` runs it (the
 * compiled simulator in a process of its own): SIM_RUNS (default 120, about 60 s on 2 cores) seeds
 * derived from the commit, a number of runs and not of seconds, so that the runs are the same for
 * the same commit on any machine; then each control on its pinned seed, and
 * each engine bug the simulation found on its seed (test/sim/cases.ts). A failing seed fails the
 * test with the simulator's output, which ends with the command that replays it.
 */

const root = join(import.meta.dirname, '..', '..');
const cli = join(root, 'build-sim', 'test', 'sim', 'cli.js');
const runs = Number(process.env.SIM_RUNS ?? 120);
/**
 * As `npm run simulate` runs it: a young generation large enough that most of a run's garbage (a
 * vote's promises, a command's round trip) dies there instead of being copied and promoted.
 */
const NODE_FLAGS = ['--max-semi-space-size=128'];

function simulate(args: readonly string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, NODE_OPTIONS: '' };
    execFile(
      process.execPath,
      [...NODE_FLAGS, cli, ...args],
      { cwd: root, env, maxBuffer: 256 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, output: stdout + stderr });
      },
    );
  });
}

/** The replays, one after another in one more process, beside the run of seeds (CI has 2 cores). */
const replays = new Map<SimCase, Promise<{ code: number; output: string }>>();
let queue: Promise<unknown> = Promise.resolve();
const replay = (c: SimCase) => replays.get(c)!;
const command = (c: SimCase) => `npm run simulate -- --replay ${c.seed} ${c.flags.join(' ')}`.trim();

beforeAll(() => {
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.sim.json'],
    { cwd: root, stdio: 'inherit' },
  );
  for (const c of [...CONTROL_CASES, ...KNOWN_ISSUE_CASES, ...REGRESSION_CASES]) {
    const done = queue.then(() => simulate(['--replay', String(c.seed), ...c.flags]));
    replays.set(c, done);
    queue = done;
  }
}, 120_000);

describe('deterministic simulation', () => {
  it(
    `finds no violation in ${runs} seeds derived from the commit`,
    async () => {
      const { code, output } = await simulate(['--runs', String(runs)]);
      const lines = output.trim().split('\n');
      console.log(`${lines[0]}\n${lines.slice(-2).join('\n')}`);
      // Any invariant broken fails, with the seed's replay command in the output (the token-order
      // known issue that was printed instead ended with seed 3594078474's fix: test/sim/cases.ts).
      if (!/: 0 violations$/.test(lines.at(-1) ?? '') || code !== 0) throw new Error(output);
    },
    (runs + 60) * 1000,
  );

  it.each([...CONTROL_CASES, ...KNOWN_ISSUE_CASES].map((c) => [c.name, c] as const))(
    '%s: finds its violation, the same twice',
    async (_name, c) => {
      const { output } = await replay(c);
      const runs = output.split('\n').filter((l) => /^run \d of seed/.test(l));
      const found = output.split('\n').filter((l) => l.startsWith(`seed ${c.seed}: ${c.violation}:`));
      const why = `${command(c)} should find "${c.violation}" in both runs:\n${output}`;
      if (runs.length !== 2 || runs.some((l) => / 0 violations$/.test(l))) throw new Error(why);
      if (found.length < 2 || found[0] !== found[found.length / 2]) throw new Error(why);
      expect(output).toContain('both runs identical');
    },
    120_000,
  );

  it.each(REGRESSION_CASES.map((c) => [c.name, c] as const))(
    'regression: %s',
    async (_name, c) => {
      const { code, output } = await replay(c);
      if (code !== 0) throw new Error(`${command(c)} found a violation again:\n${output}`);
      expect(output).toContain('both runs identical');
    },
    120_000,
  );
});
