import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

/** Debian's Chromium (`apt-get install chromium`); `npm test`'s pre-step installs it where it can. */
export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

/**
 * Flags for a throwaway headless Chromium: --no-sandbox because tests run as root in CI;
 * everything that would reach the network by itself (updates, sync, QUIC probes) is off.
 */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--remote-debugging-port=0',
];

let availability: { ok: boolean; reason?: string } | undefined;

function probeChromium(): { ok: boolean; reason?: string } {
  const fix =
    'install it with `sudo apt-get install -y chromium` (Debian), or set CHROMIUM_BIN to a Chromium';
  if (!existsSync(CHROMIUM)) return { ok: false, reason: `${CHROMIUM} not found: ${fix}` };
  const head = readFileSync(CHROMIUM).subarray(0, 4096).toString('latin1');
  if (head.startsWith('#!') && /\bsnap\b/.test(head)) {
    return { ok: false, reason: `${CHROMIUM} is a snap stub, which does not run here: ${fix}` };
  }
  const r = spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8', timeout: 15_000 });
  if (r.status !== 0 || !/chrom/i.test(r.stdout ?? '')) {
    const said = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-3).join(' / ');
    return {
      ok: false,
      reason: `\`${CHROMIUM} --version\` failed (${r.status ?? r.error?.message}): ${said || 'no output'}`,
    };
  }
  return { ok: true };
}

/** A page, driven over the Chrome DevTools protocol (a flat session of the browser socket). */
export interface BrowserPage {
  /** Evaluates `expression` in the page and returns its value (JSON-serialisable). */
  evaluate<T>(expression: string): Promise<T>;
  /** A PNG of the viewport. */
  screenshot(): Promise<Buffer>;
}

interface Pending {
  resolve(result: Record<string, unknown>): void;
  reject(err: Error): void;
}

/**
 * Headless Chromium for end-to-end tests without playwright: one process (in its own process
 * group, so that its helpers go with it), a temp profile, and a minimal DevTools-protocol client
 * over the `ws` package. Always {@link close} it: that ends the processes and removes the profile.
 */
export class HeadlessChromium {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  private constructor(
    private readonly proc: ChildProcess,
    private readonly profile: string,
    private readonly socket: WebSocket,
  ) {
    socket.on('message', (data) => {
      const msg = JSON.parse(String(data)) as {
        id?: number;
        result?: Record<string, unknown>;
        error?: { message: string };
      };
      const waiter = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!waiter) return; // an event: nothing here listens to those
      this.pending.delete(msg.id!);
      if (msg.error) waiter.reject(new Error(msg.error.message));
      else waiter.resolve(msg.result ?? {});
    });
    socket.on('close', () => {
      for (const waiter of this.pending.values())
        waiter.reject(new Error('Chromium closed the DevTools socket'));
      this.pending.clear();
    });
  }

  /**
   * Whether {@link CHROMIUM} can run here, and if not, why (for the skip message): missing, a snap
   * stub (Ubuntu's `chromium-browser` package, which does not run in containers), or failing to
   * start (`--version`). Cached: it runs Chromium once.
   */
  static availability(): { ok: boolean; reason?: string } {
    return (availability ??= probeChromium());
  }

  /** Starts Chromium and connects to its DevTools socket (bounded by `timeoutMs`). */
  static async launch(timeoutMs = 15_000): Promise<HeadlessChromium> {
    const profile = mkdtempSync(join(tmpdir(), 'dashboard-chromium-'));
    const proc = spawn(CHROMIUM, [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true, // its own process group: close() ends the renderer and helpers too
    });
    try {
      const url = await devToolsUrl(proc, timeoutMs);
      const socket = new WebSocket(url, { perMessageDeflate: false });
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      });
      return new HeadlessChromium(proc, profile, socket);
    } catch (err) {
      await stopGroup(proc, 0);
      rmSync(profile, { recursive: true, force: true });
      throw err;
    }
  }

  /** Opens `url` in a new tab of `width` x `height` CSS pixels and waits for its load event. */
  async open(url: string, width = 1200, height = 800): Promise<BrowserPage> {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as {
      sessionId: string;
    };
    const send = (method: string, params: Record<string, unknown> = {}) =>
      this.send(method, params, sessionId);
    await send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    await send('Page.navigate', { url });
    const page: BrowserPage = {
      evaluate: async <T>(expression: string) => {
        const { result, exceptionDetails } = (await send('Runtime.evaluate', {
          expression,
          returnByValue: true,
          awaitPromise: true,
        })) as { result: { value: T }; exceptionDetails?: { text: string } };
        if (exceptionDetails) throw new Error(`page script failed: ${exceptionDetails.text}`);
        return result.value;
      },
      screenshot: async () => {
        const { data } = (await send('Page.captureScreenshot', { format: 'png' })) as { data: string };
        return Buffer.from(data, 'base64');
      },
    };
    // Navigation is asynchronous: wait until the document has loaded.
    for (let i = 0; (await page.evaluate<string>('document.readyState')) !== 'complete'; i++) {
      if (i > 100) throw new Error(`${url} did not finish loading`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return page;
  }

  /** Asks Chromium to quit, then ends its process group and removes the temp profile. */
  async close(): Promise<void> {
    try {
      if (this.socket.readyState === WebSocket.OPEN) {
        await within(this.send('Browser.close'), 1000).catch(() => undefined);
      }
      this.socket.terminate();
    } finally {
      await stopGroup(this.proc, 2000);
      rmSync(this.profile, { recursive: true, force: true });
    }
  }

  private send(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }
}

/** Reads the DevTools WebSocket address Chromium prints on stderr at start-up. */
function devToolsUrl(proc: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(
      () => fail(new Error(`Chromium gave no DevTools address within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (match) done(() => resolve(match[1]!));
    };
    const onExit = (code: number | null) =>
      fail(new Error(`Chromium exited (${code}) at start-up:\n${stderr}`));
    const done = (then: () => void) => {
      clearTimeout(timer);
      proc.stderr!.off('data', onData);
      proc.off('exit', onExit);
      proc.off('error', fail);
      // Keep draining stderr, or Chromium blocks once the pipe buffer is full.
      proc.stderr!.resume();
      then();
    };
    function fail(err: Error) {
      done(() => reject(err));
    }
    proc.stderr!.on('data', onData);
    proc.once('exit', onExit);
    proc.once('error', fail);
  });
}

/** Gives the browser `graceMs` to exit by itself, then SIGKILLs the process group we started. */
async function stopGroup(proc: ChildProcess, graceMs: number): Promise<void> {
  if (proc.pid === undefined) return;
  if (proc.exitCode === null && proc.signalCode === null && graceMs > 0) {
    await within(new Promise((r) => proc.once('exit', r)), graceMs);
  }
  try {
    process.kill(-proc.pid, 'SIGKILL'); // helpers may outlive the browser process by a moment
  } catch {
    // the group is already gone
  }
}

/** Waits for `promise`, at most `ms`; clears its timer so that no pending timer keeps Jest alive. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise((r) => (timer = setTimeout(r, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
