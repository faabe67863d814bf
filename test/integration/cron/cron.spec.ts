/**
 * Issue 12, item 5: `@Cron('* * * * * *')` + `@DistributedLock('report', { onBusy: 'skip',
 * holdAtLeast })` in two app PROCESSES whose wall clocks differ by 30 ms (libfaketime on one of
 * them), against real redis-server lock nodes: exactly one run per tick, strictly increasing fencing
 * tokens, and no ERROR line or stack trace in either process's output, in both decorator orders.
 * Two controls show what the pattern prevents: without holdAtLeast both instances run each tick;
 * with the default onBusy the losing instance logs an ERROR with a stack trace every tick.
 *
 * The four scenarios run at the same time (8 app processes, one pair per scenario, each its own
 * key prefix) to keep the runtime near 10 s on 2 cores. The apps are test/integration/cron/app.ts,
 * transpiled here and run by plain Node against the built library in dist/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { RedisNodes } from '../../../lib/testing/index.js';
import type { RunRecord } from './app.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(here, '../../..');
const DIST_ENTRY = join(ROOT, 'dist/index.js');
/** Inside the repo, so that the app's `@nestjs/*` and `ioredis` imports resolve from node_modules. */
const BUILD_DIR = join(ROOT, 'node_modules/.cache/nest-quorum-lock-cron-test');

/** The clock shift of instance B: "tens of ms", as in the issue. */
const SHIFT_MS = 30;
/** How long both instances of every scenario run together once all are ready (>= 5 ticks). */
const RUN_MS = 6_000;

const SCENARIOS = ['cron-above', 'cron-below', 'control-no-hold', 'control-throw'] as const;
type Scenario = (typeof SCENARIOS)[number];

/** libfaketime's multi-threaded preload library (Debian package `faketime`), or a failure with the fix. */
function faketimeLibrary(): string {
  const candidates = ['x86_64-linux-gnu', 'aarch64-linux-gnu', ''].map((arch) =>
    join('/usr/lib', arch, 'faketime/libfaketimeMT.so.1'),
  );
  const found = candidates.find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      `libfaketime not found (${candidates.join(', ')}): install it with ` +
        "`sudo apt-get install -y faketime` (Debian/Ubuntu); the cron test shifts one instance's clock with it.",
    );
  }
  return found;
}

/**
 * Transpiles app.ts as tsc would (legacy decorators and their metadata) and points its
 * `nest-quorum-lock` import at the build, which `npm test` makes first (pretest).
 */
function buildApp(): string {
  if (!existsSync(DIST_ENTRY)) {
    throw new Error(
      `${DIST_ENTRY} does not exist: run npm run build first (the cron apps import the build).`,
    );
  }
  const source = readFileSync(join(here, 'app.ts'), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
    },
  });
  const importLine = /from 'nest-quorum-lock';/;
  if (!importLine.test(outputText)) throw new Error('app.ts no longer imports nest-quorum-lock');
  mkdirSync(BUILD_DIR, { recursive: true });
  const out = join(BUILD_DIR, 'app.mjs');
  writeFileSync(out, outputText.replace(importLine, `from '${pathToFileURL(DIST_ENTRY).href}';`));
  return out;
}

/** One app process: its pid, everything it printed, and when it became ready or exited. */
class AppProcess {
  output = '';
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    private readonly proc: ChildProcess,
  ) {
    const collect = (chunk: Buffer) => (this.output += chunk.toString());
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    this.exited = new Promise((res) => proc.once('exit', () => res()));
    this.ready = new Promise((res, rej) => {
      const check = () => {
        if (/^ready$/m.test(this.output)) res();
      };
      proc.stdout!.on('data', check);
      void this.exited.then(() => rej(new Error(`${name} exited before it was ready:\n${this.output}`)));
    });
    this.ready.catch(() => undefined); // reported where it is awaited
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** SIGTERM (Nest's shutdown hooks stop the cron and release the lock), SIGKILL after 5 s; by pid. */
  async stop(): Promise<void> {
    if (!this.running) return;
    process.kill(this.pid, 'SIGTERM');
    const timer = setTimeout(() => this.running && process.kill(this.pid, 'SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** Runs per tick, from the first tick any instance ran to the last (0 for a tick nobody ran). */
function runsPerTick(runs: RunRecord[]): Array<{ tick: number; runs: RunRecord[] }> {
  const ticks = runs.map((r) => r.tick);
  const first = Math.min(...ticks);
  const last = Math.max(...ticks);
  return Array.from({ length: last - first + 1 }, (_, i) => ({
    tick: first + i,
    runs: runs.filter((r) => r.tick === first + i),
  }));
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
/** Lines that an operator would read as a failure: an ERROR level, or a stack frame. */
const alarming = (output: string) => output.split('\n').filter((l) => /ERROR|^\s+at\s/.test(l));
const skipLines = (output: string) => output.split('\n').filter((l) => /onBusy: 'skip'/.test(l));

describe('@Cron + @DistributedLock in two processes, clocks 30 ms apart (real redis-server nodes)', () => {
  let lockNodes: RedisNodes | undefined;
  let storeNode: RedisNodes | undefined;
  const apps = new Map<Scenario, { a: AppProcess; b: AppProcess }>();
  const runs = new Map<Scenario, RunRecord[]>();
  /** The first whole tick after every process was ready (the ones before saw 8 processes booting). */
  let steadyFrom = 0;

  beforeAll(async () => {
    const app = buildApp();
    const preload = faketimeLibrary();
    [lockNodes, storeNode] = await Promise.all([RedisNodes.start(3), RedisNodes.start(1)]);
    const launch = (scenario: Scenario, instance: 'A' | 'B') => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        NODE_OPTIONS: '', // not Jest's --experimental-vm-modules
        NO_COLOR: '1',
        LOCK_NODES: lockNodes!.urls.join(','),
        STORE_URL: storeNode!.url(0),
        SCENARIO: scenario,
        INSTANCE: instance,
      };
      if (instance === 'B') {
        // What `faketime -f '+0.03s' node app.mjs` sets up, without faketime's own parent process
        // in between, so that the pid we stop is the app's. Only the wall clock moves (Date.now(),
        // which the cron schedule reads); the monotonic clock stays shared, as between two machines.
        Object.assign(env, {
          LD_PRELOAD: preload,
          FAKETIME: `+${SHIFT_MS / 1000}s`,
          FAKETIME_DONT_FAKE_MONOTONIC: '1',
        });
      }
      const proc = spawn(process.execPath, [app], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      return new AppProcess(`${scenario}/${instance}`, proc);
    };
    for (const scenario of SCENARIOS)
      apps.set(scenario, { a: launch(scenario, 'A'), b: launch(scenario, 'B') });
    const all = [...apps.values()].flatMap(({ a, b }) => [a, b]);
    await Promise.all(all.map((p) => p.ready));
    steadyFrom = Math.ceil(Date.now() / 1000);
    await sleep(RUN_MS);
    await Promise.all(all.map((p) => p.stop()));
    const store = storeNode.client(0);
    for (const scenario of SCENARIOS) {
      const list = await store.lrange(`runs:${scenario}`, 0, -1);
      runs.set(
        scenario,
        list.map((line) => JSON.parse(line) as RunRecord),
      );
    }
  }, 60_000);

  afterAll(async () => {
    // Also when beforeAll failed half-way: every app process by its pid, then the nodes.
    await Promise.all([...apps.values()].flatMap(({ a, b }) => [a.stop(), b.stop()]));
    await Promise.all([lockNodes?.close(), storeNode?.close()]);
  });

  /** Median offset of an instance's clock from the store's, over its runs (NaN if it never ran). */
  const offsetOf = (scenario: Scenario, instance: string) => {
    const offsets = runs
      .get(scenario)!
      .filter((r) => r.instance === instance)
      .map((r) => r.offsetMs);
    return offsets.length > 0 ? median(offsets) : NaN;
  };

  /** Prints what the scenario did, for the report and for a failure's diagnosis. */
  const summary = (scenario: Scenario) => {
    const { a, b } = apps.get(scenario)!;
    const perTick = runsPerTick(runs.get(scenario)!);
    return (
      `${scenario}: ${perTick.length} ticks (${perTick.filter((t) => t.tick >= steadyFrom).length} after all were ready), runs per tick [${perTick.map((t) => t.runs.length).join(' ')}], ` +
      `winners [${perTick.map((t) => t.runs.map((r) => r.instance).join('+') || '-').join(' ')}], ` +
      `tokens [${perTick.flatMap((t) => t.runs.map((r) => r.fencingToken)).join(' ')}], ` +
      `alarming lines A ${alarming(a.output).length} B ${alarming(b.output).length}, ` +
      `skip lines A ${skipLines(a.output).length} B ${skipLines(b.output).length}, ` +
      `clock offsets (median, ms) ${['A', 'B'].map((i) => `${i} ${offsetOf(scenario, i).toFixed(1)}`).join(' ')}` +
      [a, b]
        .map((p) =>
          alarming(p.output)[0] ? `\nfirst alarming line of ${p.name}: ${alarming(p.output)[0]}` : '',
        )
        .join('')
    );
  };

  test('instance B really runs 30 ms ahead (libfaketime shifts Date.now(), and the cron follows it)', () => {
    for (const scenario of SCENARIOS) {
      // B wins the ticks (it fires first): its offset from the store's (unshifted) clock is the
      // shift. A rarely runs (only in the no-hold control), so 0 stands in for its offset otherwise.
      const b = offsetOf(scenario, 'B');
      const a = offsetOf(scenario, 'A');
      const shift = b - (Number.isNaN(a) ? 0 : a);
      expect(shift).toBeGreaterThan(SHIFT_MS - 10);
      expect(shift).toBeLessThan(SHIFT_MS + 10);
    }
  });

  test.each(['cron-above', 'cron-below'] as const)(
    '%s: exactly one run per tick, increasing tokens, no ERROR and no stack trace',
    (scenario) => {
      const { a, b } = apps.get(scenario)!;
      const all = runs.get(scenario)!;
      console.log(summary(scenario));
      const perTick = runsPerTick(all);
      // The ticks from the moment both instances were ready: one that fired while the other was
      // still starting (its first lock call compiling on a loaded machine) can come after the
      // holdAtLeast window, as a cold start of one replica would; the steady state is what counts.
      const steady = perTick.filter((t) => t.tick >= steadyFrom);
      expect(steady.length).toBeGreaterThanOrEqual(5);
      // Consecutive ticks, one run each: no tick run twice, none skipped by both.
      expect(steady.filter((t) => t.runs.length !== 1)).toEqual([]);
      // Exclusion itself held for every tick, the first ones too: tokens increasing run after run.
      const tokens = perTick.flatMap((t) => t.runs.map((r) => r.fencingToken!));
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
      expect(alarming(a.output)).toEqual([]);
      expect(alarming(b.output)).toEqual([]);
      // Both instances took part: the one that did not run a tick tried and skipped it (debug log).
      expect(skipLines(a.output).length + skipLines(b.output).length).toBeGreaterThanOrEqual(
        perTick.length - 2,
      );
    },
  );

  test('control, onBusy skip without holdAtLeast: the late instance runs the same tick again', () => {
    console.log(summary('control-no-hold'));
    const perTick = runsPerTick(runs.get('control-no-hold')!).filter((t) => t.tick >= steadyFrom);
    expect(perTick.length).toBeGreaterThanOrEqual(5);
    // The 5 ms job released its lock ~25 ms before the late instance fired: a quiet machine runs
    // every tick twice (6 of 6 here); on a loaded one a late timer sometimes makes both fire
    // together and one skips (3 of 6 seen with a type-check running beside). One is the failure.
    const twice = perTick.filter((t) => t.runs.length === 2);
    expect(twice.length).toBeGreaterThanOrEqual(1);
    // Exclusion itself held: the runs were one after the other, tokens still increasing.
    const tokens = perTick.flatMap((t) => t.runs.map((r) => r.fencingToken!));
    expect([...tokens].sort((x, y) => x - y)).toEqual(tokens);
  });

  test('control, holdAtLeast with the default onBusy: one run per tick, but an ERROR + stack every tick', () => {
    const { a, b } = apps.get('control-throw')!;
    console.log(summary('control-throw'));
    const perTick = runsPerTick(runs.get('control-throw')!);
    expect(perTick.filter((t) => t.runs.length !== 1)).toEqual([]);
    const errors = [...a.output.split('\n'), ...b.output.split('\n')].filter(
      (l) => /ERROR/.test(l) && /LockNotAcquiredError/.test(l),
    );
    expect(errors.length).toBeGreaterThanOrEqual(perTick.length - 2);
    expect(alarming(a.output + b.output).some((l) => /^\s+at\s/.test(l))).toBe(true);
  });
});
