#!/usr/bin/env node
/**
 * `npm run test:servers`: the suites that hold the library to a server, run on each server of the
 * compatibility matrix (Valkey 8.0.1 and Redis 7.4.1, built from `../shared/servers` by
 * scripts/build-servers.mjs into a cache outside the repository, once):
 *
 * - the voter conformance table (test/conformance: every behaviour on every voter, each row
 *   against its mutant) and test/integration/deployments/server-software.spec.ts (the server
 *   named by its software and version);
 * - the fault scenarios S0, S5, S5-noguard, S8, S16, S20-guard and S20-control, reduced run
 *   (test/faults/faults.spec.ts, selected by their test names with `-t`); the controls (-noguard,
 *   -control) pass only when they show their violation.
 *
 * Each run's servers come from the REDIS_SERVER_BIN environment variable, which every launcher of
 * lib/testing reads (RedisNodes, RedisClusterNodes, SentinelGroup; the fault suite's network
 * namespaces too). Debian's redis-server stays what `npm test` runs.
 *
 *   npm run test:servers [-- valkey|redis ...] [-- --results]
 *
 * Names filter the servers (default: all). --results writes each server's results into
 * test/conformance/RESULTS.md and test/faults/RESULTS.md (a row, a section per server); without
 * it the tables are only printed. Without the source folder it says so and exits 0 (a clone
 * elsewhere has none). Exits 1 when a suite failed on some server, or ran other tests than these.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildAll, sourceDir } from './build-servers.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The fault scenarios of the matrix: id, and the start of its test's name in faults.spec.ts. */
export const FAULT_SCENARIOS = [
  ['S0', 'S0: contending processes'],
  ['S5', 'S5 with the restart guard'],
  ['S5-noguard', 'S5 without the restart guard'],
  ['S8', 'S8: with 2 of 5 nodes'],
  ['S16', 'S16: a minority cut off'],
  ['S20-guard', "S20: Kleppmann's interleaving"],
  ['S20-control', 'S20 control (neither)'],
];

/** The suites of one server's run: jest arguments, and how many tests must pass (0: any). */
const SUITES = [
  {
    name: 'conformance',
    args: ['test/conformance', 'test/integration/deployments/server-software.spec.ts'],
    expect: 0,
  },
  {
    name: `faults (${FAULT_SCENARIOS.map(([id]) => id).join(', ')})`,
    args: [
      'test/faults/faults.spec.ts',
      '-t',
      FAULT_SCENARIOS.map(([, title]) => title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
    ],
    expect: FAULT_SCENARIOS.length,
  },
];

function say(line) {
  process.stdout.write(`test:servers: ${line}\n`);
}

/** Runs one suite on one server; resolves { ok, seconds, why }. */
function runSuite(suite, server, results) {
  const out = mkdtempSync(join(tmpdir(), 'test-servers-'));
  const report = join(out, 'jest.json');
  const started = Date.now();
  const env = {
    ...process.env,
    REDIS_SERVER_BIN: server.binary,
    NODE_OPTIONS: '--experimental-vm-modules',
    ...(results ? { CONFORMANCE_RESULTS: '1', FAULTS_RESULTS: 'test/faults/RESULTS.md' } : {}),
  };
  const jest = join(root, 'node_modules', '.bin', 'jest');
  const run = spawnSync(jest, ['--runInBand', '--json', `--outputFile=${report}`, ...suite.args], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  let why;
  try {
    const summary = JSON.parse(readFileSync(report, 'utf8'));
    if (run.status !== 0 || !summary.success) {
      why = `${summary.numFailedTests} failed, ${summary.numPassedTests} passed`;
    } else if (suite.expect > 0 && summary.numPassedTests !== suite.expect) {
      // A renamed test would drop out of the matrix without a word: count them.
      why = `${summary.numPassedTests} tests passed, ${suite.expect} expected (a scenario's test renamed?)`;
    }
  } catch {
    why = `jest exited ${run.status ?? run.signal} without a report`;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  return { ok: why === undefined, seconds, why };
}

function main(argv) {
  const results = argv.includes('--results');
  const names = argv.filter((a) => !a.startsWith('--'));
  if (names.some((n) => n !== 'valkey' && n !== 'redis')) {
    process.stderr.write(`test:servers: unknown server "${names.join(' ')}" (valkey, redis)\n`);
    return 2;
  }
  let servers;
  try {
    servers = buildAll(process.env, (line) => say(line.replace(/^build-servers: /, '')));
  } catch (err) {
    say(`could not build the servers: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (servers.length === 0) {
    say(`skipped: no server sources at ${sourceDir()} (a clone without ../shared/servers)`);
    return 0;
  }
  const chosen = servers.filter((s) => names.length === 0 || names.includes(s.name));
  const lines = [];
  let failed = false;
  for (const server of chosen) {
    const label = `${server.name === 'valkey' ? 'Valkey' : 'Redis'} ${server.version}`;
    for (const suite of SUITES) {
      say(`${label}: ${suite.name} ...`);
      const r = runSuite(suite, server, results);
      failed ||= !r.ok;
      lines.push(`${label}: ${suite.name} ${r.ok ? 'passed' : `FAILED (${r.why})`} in ${r.seconds} s`);
    }
  }
  for (const line of lines) say(line);
  return failed ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2));
}
