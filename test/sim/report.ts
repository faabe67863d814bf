import type { Acquire, StoreOp } from '../faults/checker.js';
import type { Violation } from './checks.js';
import { describeConfig } from './config.js';
import type { RunResult } from './run.js';

const sec = (ms: number | undefined) => (ms === undefined ? '?' : (ms / 1000).toFixed(3).padStart(9));

/** One line per thing that happened to `keys` (grants, holds, store operations) and per fault. */
export function eventsOf(result: RunResult, keys: readonly string[]): string[] {
  const lines: Array<[number, string]> = [];
  const mine = (resource: string) =>
    keys.length === 0 || keys.some((k) => resource === k || resource.startsWith(`${k}#`));
  const name = (a: Acquire) => `${a.worker}#${a.i}`;
  for (const a of result.report.acquires) {
    if (!mine(a.resource)) continue;
    const what = `${a.resource}${a.mode ? ` ${a.mode}` : ''}${a.permits ? ` permits ${a.permits}` : ''}`;
    lines.push([a.request, `${name(a)} requests ${what} (wait ${Math.round(a.wait)})`]);
    if (a.outcome === 'granted')
      lines.push([
        a.end!,
        `${name(a)} granted ${a.resource}${a.permit === undefined ? '' : ` permit ${a.permit}`} token ${a.token}, valid until ${sec(a.grantValidityEnd).trim()} s`,
      ]);
    if (a.outcome === 'failed')
      lines.push([a.end!, `${name(a)} failed: ${a.error}: ${a.message ?? ''}`.slice(0, 160)]);
    for (const e of a.extensions)
      lines.push([e.t, `${name(a)} extend ${e.ok ? 'ok' : `failed (${e.error})`}`]);
    if (a.abort) lines.push([a.abort.t, `${name(a)} signal aborted: ${a.abort.reason}`]);
    if (a.releaseCalled !== undefined)
      lines.push([a.releaseCalled, `${name(a)} releases (valid until ${sec(a.validityEnd).trim()} s)`]);
  }
  for (const o of result.report.ops as StoreOp[]) {
    if (!mine(o.resource)) continue;
    const who = `${o.worker}#${o.i}`;
    lines.push([
      o.request,
      `${who} ${o.kind} ${o.resource} token ${o.token}${o.kind === 'write' ? ` value ${o.value}` : ''}`,
    ]);
    if (o.ack !== undefined)
      lines.push([
        o.ack,
        `${who} ${o.kind} ${o.ok ? 'accepted' : 'REFUSED'}${o.kind === 'read' ? ` (value ${o.value})` : ''}`,
      ]);
  }
  for (const e of result.world.log)
    lines.push([e.at, `** ${e.what}${e.forMs ? ` for ${Math.round(e.forMs)} ms` : ''}`]);
  return lines.sort((x, y) => x[0] - y[0]).map(([t, text]) => `${sec(t)} s  ${text}`);
}

/** A violation as printed: the seed, the invariant, and the events of the keys involved. */
export function describeViolation(result: RunResult, v: Violation, maxLines = 60): string {
  const events = eventsOf(result, v.keys);
  // Around the violation: the lines that name the holders in its detail first, else the last ones.
  const named = [...v.detail.matchAll(/\b(c\d+\.\d+#\d+)\b/g)].map((m) => m[1]!);
  let shown = events;
  if (named.length > 0) {
    const hits = events.flatMap((line, i) => (named.some((n) => line.includes(`${n} `)) ? [i] : []));
    const from = Math.max(0, Math.min(...hits) - 10);
    const to = Math.min(events.length, Math.max(...hits) + 10);
    shown = events.slice(from, to);
  }
  if (shown.length > maxLines)
    shown = [...shown.slice(0, maxLines / 2), '   ...', ...shown.slice(-maxLines / 2)];
  return [
    `seed ${result.seed}: ${v.invariant}: ${v.detail}`,
    `  run: ${describeConfig(result.config)}`,
    `  events of ${v.keys.length ? v.keys.join(', ') : 'every key'} (simulated time):`,
    ...shown.map((line) => `    ${line}`),
  ].join('\n');
}
