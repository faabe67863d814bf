/**
 * `npm run bench [-- B1 B3 ... --baseline <dist dir>]`: starts 5 local redis-server nodes,
 * runs the selected benchmarks for our engine (and another build of it, with --baseline) and the
 * peer libraries against the same nodes, prints a table and writes bench/results.json. See
 * bench/README.md for the knobs.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { RedisNodes } from 'nest-quorum-lock/testing';
import { b1 } from './b1-uncontended.js';
import { b2 } from './b2-throughput.js';
import { b3 } from './b3-contention.js';
import { b4 } from './b4-http.js';
import { b5 } from './b5-stopped-node.js';
import { b6 } from './b6-watchdog.js';
import { b7 } from './b7-cluster.js';
import { b8 } from './b8-first-grant.js';
import { b9 } from './b9-semaphore.js';
import { b10 } from './b10-read-write.js';
import { readConfig } from './config.js';
import { baselineLibrary, packageEngines, selectLibraries, smokeTest, type Library } from './libraries.js';
import { startNodes } from './nodes.js';
import { FLOOR, renderTable, type BenchContext, type BenchResult, type Benchmark } from './report.js';
import { settle } from './stats.js';

/** Every benchmark, in run order. */
const BENCHMARKS: readonly Benchmark[] = [b1, b2, b3, b8, b9, b10, b4, b5, b6, b7];

/** The column every ratio is taken against when it runs (else ours). */
const REFERENCE = 'redlock5';

const NODE_COUNT = 5;
const RESULTS_FILE = fileURLToPath(new URL('../results.json', import.meta.url));

const log = (message: string) => console.log(`[bench] ${message}`);

function selectBenchmarks(args: readonly string[]): Benchmark[] {
  if (args.length === 0) return [...BENCHMARKS];
  const wanted = args.map((a) => a.toUpperCase());
  const unknown = wanted.filter((w) => !BENCHMARKS.some((b) => b.id === w));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown benchmark(s) ${unknown.join(', ')}; choose from ${BENCHMARKS.map((b) => b.id).join(', ')}`,
    );
  }
  return BENCHMARKS.filter((b) => wanted.includes(b.id));
}

/** Ends the nodes by pid on Ctrl-C / SIGTERM, even mid-benchmark (a stopped node is resumed first). */
function closeOnSignals(nodes: RedisNodes): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    log(`${signal}: stopping the redis-server nodes`);
    void nodes.close().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
}

/** Splits `--baseline <dir>` (or `--baseline=<dir>`) off the benchmark ids. */
function parseArgs(argv: readonly string[]): { ids: string[]; baseline: string | undefined } {
  const ids: string[] = [];
  let baseline: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--baseline') {
      baseline = argv[++i];
      if (baseline === undefined) throw new Error('--baseline needs a directory (a built dist/)');
    } else if (arg.startsWith('--baseline=')) {
      baseline = arg.slice('--baseline='.length);
    } else {
      ids.push(arg);
    }
  }
  return { ids, baseline };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(
      'usage: npm run bench [-- B1 B2 B3 B8 B9 B4 B5 B6 B7] [--baseline <dist dir>]   (env: see bench/README.md)',
    );
    return 0;
  }
  const args = parseArgs(argv);
  const benchmarks = selectBenchmarks(args.ids);
  const loadAtStart = loadavg()[0]!;
  const config = readConfig(args.baseline);
  const baseline = config.baseline === undefined ? undefined : await baselineLibrary(config.baseline);
  const candidates = selectLibraries(config.libraries, baseline);

  log(`starting ${NODE_COUNT} redis-server nodes`);
  const nodes = await startNodes(NODE_COUNT);
  closeOnSignals(nodes);
  try {
    const urls = nodes.urls;
    const redisVersion = /redis_version:(\S+)/.exec(await nodes.client(0).info('server'))?.[1] ?? '?';
    const settings = { ttl: config.ttl, wait: config.wait, nodeTimeout: config.nodeTimeout };

    const libraries: Library[] = [];
    const libraryStatus: Array<{ id: string; label: string; pkg: string; runs: boolean; note?: string }> = [];
    const setupNotes: string[] = [];
    for (const lib of candidates) {
      const problem = await smokeTest(lib, urls, settings);
      const engines = packageEngines(lib.packageName);
      const enginesNote = engines ? enginesMismatch(engines) : undefined;
      if (problem) {
        setupNotes.push(`${lib.label} does not run here (${process.version}): ${problem}; left out`);
      } else {
        libraries.push(lib);
        if (enginesNote)
          setupNotes.push(
            `${lib.label} declares engines.node "${engines}" but runs on ${process.version} (smoke test passed)`,
          );
      }
      libraryStatus.push({
        id: lib.id,
        label: lib.label,
        pkg: lib.pkg,
        runs: !problem,
        ...(problem ? { note: problem } : {}),
      });
    }
    for (const note of setupNotes) log(note);

    const ctx: BenchContext = { nodes, urls, config, libraries, log };
    const results: BenchResult[] = [];
    let failed = false;
    for (const bench of benchmarks) {
      log(`== ${bench.id}: ${bench.title}`);
      try {
        await settle();
        results.push(await bench.run(ctx));
      } catch (err) {
        failed = true;
        const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
        log(`${bench.id} failed: ${message}`);
        results.push({
          id: bench.id,
          title: bench.title,
          rows: [],
          targets: [],
          notes: [`FAILED: ${message.split('\n')[0]}`],
          details: {},
        });
      }
    }

    const loadAtEnd = loadavg()[0]!;
    const load = `load average ${loadAtStart.toFixed(1)} at start, ${loadAtEnd.toFixed(1)} at end`;
    if (Math.max(loadAtStart, loadAtEnd) > cpus().length) {
      setupNotes.push(
        `${load} on ${cpus().length} CPUs: other work shared the machine, timings are pessimistic`,
      );
    }
    const columns = [...libraries.map((l) => ({ id: l.id as string, label: l.label }))];
    // Columns of one benchmark only (B9's second redis-semaphore class), after the libraries.
    for (const extra of results.flatMap((r) => r.columns ?? [])) {
      if (!columns.some((c) => c.id === extra.id)) columns.push(extra);
    }
    columns.push({ id: FLOOR, label: 'floor (no lock)' });
    const reference = libraries.some((l) => l.id === REFERENCE) ? REFERENCE : 'ours';
    const table = renderTable(results, columns, reference);
    const setup = setupNotes.length > 0 ? `\nSetup:\n${setupNotes.map((n) => `  ${n}`).join('\n')}\n` : '';
    console.log(
      `\n${NODE_COUNT} local redis-server ${redisVersion} nodes, Node ${process.version}, ${cpus().length} CPUs, scale ${config.scale}, ${load}\n${setup}\n${table}\n`,
    );

    const json = {
      generatedAt: new Date().toISOString(),
      environment: {
        node: process.version,
        redis: redisVersion,
        nodes: NODE_COUNT,
        cpus: cpus().length,
        platform: process.platform,
        loadAverage: { start: loadAtStart, end: loadAtEnd },
      },
      config,
      libraries: libraryStatus,
      setupNotes,
      results,
      table,
    };
    writeFileSync(RESULTS_FILE, `${JSON.stringify(json, null, 2)}\n`);
    log(`results written to ${RESULTS_FILE}`);
    return failed ? 1 : 0;
  } finally {
    await nodes.close();
  }
}

/** Describes a declared `>=N` engine range that the running Node does not satisfy, if so. */
function enginesMismatch(range: string): string | undefined {
  const wanted = /^>=\s*(\d+)/.exec(range.trim())?.[1];
  const running = Number(process.versions.node.split('.')[0]);
  return wanted !== undefined && running < Number(wanted) ? `needs ${range}` : undefined;
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
