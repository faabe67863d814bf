/**
 * Wall-clock steps for tests: the LD_PRELOAD shim of clock-shim/clock-shim.c, compiled on demand,
 * and the files through which a test steps the wall clock of a running process (a redis-server
 * voter, a worker) as an NTP step would, while CLOCK_MONOTONIC stays untouched.
 *
 * ```ts
 * const clocks = new ClockFiles();
 * const redis = await RedisNodes.start(5, { env: (i) => clocks.env(`node-${i}`) });
 * clocks.step('node-2', 30_000); // node 2's clock jumps 30 s ahead, at once
 * ```
 *
 * Debian's libfaketime is no substitute for redis-server: it makes the server fail at start
 * (jemalloc reads the clock while libfaketime initialises). The shim allocates nothing.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'clock-shim', 'clock-shim.c');

/**
 * The path of the compiled shim: built once per version of its source into a cache directory under
 * the OS temp dir (gcc -shared -fPIC -O2 ... -ldl), reused by later runs and processes.
 */
export function clockShimLibrary(): string {
  const source = readFileSync(SOURCE);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), `nest-quorum-lock-clock-shim-${hash}`);
  const library = join(dir, 'clock-shim.so');
  if (existsSync(library)) return library;
  mkdirSync(dir, { recursive: true });
  // Built under a name of its own, then renamed: a concurrent build never exposes a partial file.
  const partial = `${library}.${process.pid}`;
  try {
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-o', partial, SOURCE, '-ldl'], { stdio: 'pipe' });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? String(err);
    throw new Error(`Could not build the clock shim (needs gcc: apt-get install -y gcc):\n${stderr}`, {
      cause: err,
    });
  }
  renameSync(partial, library);
  return library;
}

/**
 * One offset file per clock name (a node, a worker); a process started with {@link env} of a name
 * reads its wall clock through that file. Offsets are whole milliseconds, kept across the
 * process's restarts (the file stays), and can be changed at any moment.
 */
export class ClockFiles {
  readonly dir = mkdtempSync(join(tmpdir(), 'clock-files-'));
  private readonly library = clockShimLibrary();
  private readonly offsets = new Map<string, number>();

  /** Environment variables that put a process's wall clock under the file of `name`. */
  env(name: string): Record<string, string> {
    if (!this.offsets.has(name)) this.set(name, 0);
    return { LD_PRELOAD: this.library, CLOCK_SHIM_FILE: this.file(name) };
  }

  /** The current offset of `name`'s clock, ms. */
  offset(name: string): number {
    return this.offsets.get(name) ?? 0;
  }

  /** Sets `name`'s wall clock to real time + `offsetMs`, at once. */
  set(name: string, offsetMs: number): void {
    this.write(name, 0, Math.round(offsetMs));
    this.offsets.set(name, Math.round(offsetMs));
  }

  /** Stops `name`'s wall clock at `epochUs` microseconds (until `undefined` lets it run again). */
  freeze(name: string, epochUs: number | undefined): void {
    if (!this.offsets.has(name)) this.set(name, 0);
    this.write(name, 8, epochUs ?? 0);
  }

  /** Steps `name`'s wall clock by `deltaMs` (forward when positive), at once. */
  step(name: string, deltaMs: number): void {
    this.set(name, this.offset(name) + deltaMs);
  }

  /** Removes the files (after the processes that read them ended). */
  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Writes an int64 at `at` in `name`'s file, in place (the processes map it: never replaced, never truncated). */
  private write(name: string, at: number, value: number): void {
    const bytes = Buffer.alloc(8);
    bytes.writeBigInt64LE(BigInt(value));
    const fd = openSync(this.file(name), existsSync(this.file(name)) ? 'r+' : 'w');
    try {
      writeSync(fd, bytes, 0, 8, at);
    } finally {
      closeSync(fd);
    }
  }

  private file(name: string): string {
    return join(this.dir, `${name.replace(/[^\w.-]/g, '_')}.offset`);
  }
}

/** The clock name of lock node `index` (what {@link ClockFiles.env} is given for it). */
export const nodeClock = (index: number): string => `node-${index}`;
