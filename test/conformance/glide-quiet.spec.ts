import { spawn } from 'node:child_process';
import { join } from 'node:path';

/*
 * Quiet GLIDE (issue 39, item 5). Valkey GLIDE logs through a native logger that is process-wide
 * and belongs to the application (the library never configures it); by default it prints WARN
 * and ERROR lines on stdout, one for every error reply, failed request or dropped subscription.
 * The library's own work must cause none: a child process runs the GLIDE columns of the
 * conformance table (their own Jest run, about 45 s, GLIDE's logger as an application leaves it)
 * and its output is read line by line, each GLIDE line told by the row that was running
 * (conformance.spec.ts marks each row under CONFORMANCE_ROW_MARKS=1).
 *
 * Three rows restart the servers under the voter on purpose (identity-guard, abstention-reporting:
 * the driver's changeServer; shard-abstention, a Cluster row: one master, changeOneServer). There GLIDE reports the outage itself: its connections lost and
 * re-established, the requests that were in flight or sent into the outage, a cluster that says
 * it is down until its masters meet again, and the first script call on a restarted server,
 * whose script cache is empty, made before the voter saw the restart (GLIDE reconnects without a
 * word). Those lines, and only those, are accepted in those rows; any other line, or any line in
 * another row, fails the test.
 */

/** The rows whose driver restarts the servers (changeServer, changeOneServer). */
const RESTART_ROWS = new Set(['identity-guard', 'abstention-reporting', 'shard-abstention']);

/** What GLIDE says of an outage (accepted in RESTART_ROWS only). */
const OUTAGE = [
  /disconnected from|Connection reset by peer|Connection refused|RecvError|Will attempt to reconnect/,
  // A socket error the kernel gave a request (its text ends in "(os error N)"): a request written
  // into a killed server's socket (Broken pipe, os error 32: CI's Valkey 8.0.1 run, identity-guard
  // row, GlideClusterClient), a reset or an abort. The library sends nothing that causes one.
  /\(os error \d+\)/,
  /Connection in recovery|fail_pending_requests|Can't reconnect to initial nodes|loading the dataset/,
  /Fatal(Send|Receive)Error|pipeline writer task has terminated|channel closed/,
  /\btimed out\b|timeout_watchdog/,
  /cluster is down|CLUSTERDOWN|MOVED target address .* not found/,
  /NoScriptError/,
];

/** A line of GLIDE's logger at WARN or above: `<time> WARN logger_core: ...` (ANSI colours removed). */
const GLIDE_LINE = /^\S+\s+(WARN|ERROR)\s+logger_core:\s*(.*)$/;
const ROW_MARK = /^@@ row (.*) \| (.*)$/;

interface GlideLine {
  readonly row: string;
  readonly level: string;
  readonly text: string;
}

/** Runs the GLIDE columns in a child Jest; resolves its exit code and output (stdout and stderr). */
function runGlideColumns(): Promise<{ code: number | null; output: string }> {
  const jest = join(process.cwd(), 'node_modules', 'jest', 'bin', 'jest.js');
  const child = spawn(
    process.execPath,
    [jest, '--runInBand', 'test/conformance/conformance.spec.ts', '-t', 'Valkey GLIDE'],
    {
      cwd: process.cwd(),
      env: {
        ...process.env,
        NODE_OPTIONS: '--experimental-vm-modules',
        CONFORMANCE_ROW_MARKS: '1',
        CONFORMANCE_RESULTS: '', // the child's table is not the published one
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

/** GLIDE's lines, each with the row that was running when it was printed. */
function glideLines(output: string): { lines: GlideLine[]; rows: string[] } {
  const lines: GlideLine[] = [];
  const rows: string[] = [];
  let row = '(before the first row)';
  // eslint-disable-next-line no-control-regex
  for (const raw of output.replace(/\x1b\[[0-9;]*m/g, '').split('\n')) {
    const mark = ROW_MARK.exec(raw);
    if (mark) {
      row = `${mark[1]} | ${mark[2]}`;
      if (mark[2] !== 'stop') rows.push(row);
      continue;
    }
    const glide = GLIDE_LINE.exec(raw.trim());
    if (glide) lines.push({ row, level: glide[1]!, text: glide[2]! });
  }
  return { lines, rows };
}

/** Whether a line is GLIDE reporting the outage of a row that restarts the servers. */
function isOutage(line: GlideLine): boolean {
  const row = line.row.split(' | ')[1] ?? '';
  return RESTART_ROWS.has(row) && OUTAGE.some((pattern) => pattern.test(line.text));
}

test('the GLIDE columns of the conformance table print no GLIDE line at WARN or above', async () => {
  const { code, output } = await runGlideColumns();
  const { lines, rows } = glideLines(output);
  // The run itself: both GLIDE columns, every row of each, all passed.
  expect({ code, tail: code === 0 ? '' : output.slice(-3000) }).toEqual({ code: 0, tail: '' });
  expect(rows.filter((r) => r.startsWith('Valkey GLIDE 2 (GlideClient) |')).length).toBeGreaterThanOrEqual(
    17,
  );
  expect(
    rows.filter((r) => r.startsWith('Valkey GLIDE 2 (GlideClusterClient) |')).length,
  ).toBeGreaterThanOrEqual(17);
  const unexplained = lines.filter((line) => !isOutage(line)).map((l) => `${l.row}: ${l.level} ${l.text}`);
  expect(unexplained).toEqual([]);
}, 240_000);
