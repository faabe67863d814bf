/**
 * Pictures of a fault run, the way Jepsen draws them: one self-contained HTML page per scenario
 * (inline SVG, no script, no network) with
 * - a timeline of the whole run: one lane per worker process, each hold as a bar from grant to
 *   release (or validity end), a lane per resource with every holder's bars together (an overlap
 *   would show as a red band there), a lane per lock node with its faults, and the fault windows
 *   shaded and labelled across the chart;
 * - the same, zoomed on the first fault window, where each bar carries its fencing token;
 * - acquire latency over time (log scale), coloured by outcome.
 * Writes the store refused are marked ×, stale writes the store accepted (a violation) as a red ✖.
 *
 * Drawn from the checker's Report (the histories it read) and the driver's fault windows; the full
 * run (FAULTS_FULL=1) or FAULTS_TIMELINES=1 writes them to test/faults/timelines/<scenario>.html.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { slotOf, type Acquire, type Report, type StoreOp } from './checker.js';
import type { FaultWindow } from './harness.js';

export const TIMELINE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'timelines');

/** Whether this run draws its timelines: the full run, or FAULTS_TIMELINES=1. */
export const timelinesWanted = (): boolean =>
  process.env.FAULTS_FULL === '1' || process.env.FAULTS_TIMELINES === '1';

export interface TimelineInput {
  id: string;
  title: string;
  report: Pick<
    Report,
    'acquires' | 'ops' | 'staleWrites' | 'overlaps' | 'tokenOrderViolations' | 'staleWritesAccepted'
  >;
  windows: readonly FaultWindow[];
}

/** Writes `<dir>/<id>.html`; returns its path. */
export function writeTimeline(input: TimelineInput, dir = TIMELINE_DIR): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${input.id}.html`);
  writeFileSync(file, renderTimeline(input));
  return file;
}

// ---- layout -------------------------------------------------------------------------------------

const WIDTH = 1360;
const LEFT = 150;
const RIGHT = 20;
const LANE = 20;
const BAR = 12;
const PALETTE = ['#3b6fb6', '#2f9e6b', '#8a5cc2', '#c28a1f', '#1f9bb0', '#b0521f', '#5d6b7d', '#a83b76'];
const FAULT = '#d9534f';

/** A fault window in ms, with the nodes its label names ("partition 1,3", "kill 0 + stop 2"). */
interface Window {
  label: string;
  start: number;
  end: number;
  nodes: Array<{ node: number; kind: string }>;
}

/** Nodes named by a window label: each ` + `-separated part ends in a comma-separated node list. */
export function nodesOf(label: string): Array<{ node: number; kind: string }> {
  return label.split(' + ').flatMap((part) => {
    const m = /^(.*?)\s*(\d+(?:,\d+)*)$/.exec(part.trim());
    return m ? m[2]!.split(',').map((n) => ({ node: Number(n), kind: m[1]!.trim() || 'fault' })) : [];
  });
}

const esc = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const f1 = (n: number) => n.toFixed(1);

/** Where a grant's hold ends: release called, or the validity end if that came first. */
const holdEnd = (a: Acquire) => Math.min(a.releaseCalled ?? Infinity, a.validityEnd ?? Infinity);

interface Scale {
  t0: number;
  t1: number;
  x: (t: number) => number;
}

function scale(t0: number, t1: number): Scale {
  const span = Math.max(t1 - t0, 1);
  return { t0, t1, x: (t) => LEFT + ((t - t0) / span) * (WIDTH - LEFT - RIGHT) };
}

/** Time axis ticks (seconds from the run's start) at a readable step. */
function axis(s: Scale, origin: number, y: number, height: number): string {
  const spanS = (s.t1 - s.t0) / 1000;
  const step = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120].find((st) => spanS / st <= 14) ?? 300;
  const out: string[] = [];
  const first = Math.ceil((s.t0 - origin) / 1000 / step) * step;
  for (let t = first; t * 1000 + origin <= s.t1; t += step) {
    const x = s.x(origin + t * 1000);
    out.push(
      `<line x1="${f1(x)}" y1="${y}" x2="${f1(x)}" y2="${y + height}" stroke="#e4e4e4"/>` +
        `<text x="${f1(x)}" y="${y + height + 13}" class="tick">${+t.toFixed(1)} s</text>`,
    );
  }
  return out.join('');
}

/** Shaded fault windows with their label, across `height` px from `y`. */
function shading(s: Scale, windows: readonly Window[], y: number, height: number, labels: boolean): string {
  // Two rows of labels; a label that fits in neither is left out (its node lane still shows it).
  const rowEnds = [-Infinity, -Infinity];
  return windows
    .filter((w) => w.end > s.t0 && w.start < s.t1)
    .map((w) => {
      const x0 = Math.max(s.x(w.start), LEFT);
      const x1 = Math.min(s.x(w.end), WIDTH - RIGHT);
      let text = '';
      const row = rowEnds.findIndex((end) => x0 >= end);
      if (labels && row >= 0) {
        rowEnds[row] = x0 + w.label.length * 6 + 8;
        text = `<text x="${f1(x0 + 2)}" y="${y + 10 + row * 11}" class="wlabel">${esc(w.label)}</text>`;
      }
      return (
        `<rect x="${f1(x0)}" y="${y}" width="${f1(Math.max(x1 - x0, 1))}" height="${height}" class="window">` +
        `<title>${esc(w.label)}: ${f1(w.end - w.start)} ms</title></rect>${text}`
      );
    })
    .join('');
}

/** A semaphore's holders are drawn one lane per permit (its own lock), a plain lock's per resource. */
const laneOf = (a: Acquire): string => slotOf(a) ?? a.resource;

interface Lanes {
  workers: string[];
  resources: string[];
  nodes: number[];
}

function lanesOf(input: TimelineInput, windows: readonly Window[]): Lanes {
  const workers = [...new Set(input.report.acquires.map((a) => a.worker))].sort((a, b) =>
    a.localeCompare(b, 'en', { numeric: true }),
  );
  const granted = input.report.acquires.filter((a) => a.outcome === 'granted');
  const resources = [...new Set(granted.map(laneOf))].sort();
  const nodes = [...new Set(windows.flatMap((w) => w.nodes.map((n) => n.node)))].sort((a, b) => a - b);
  return { workers, resources, nodes };
}

/** Token text that fits `px`: the whole token, its last 4 digits, or nothing. */
function tokenLabel(token: number | undefined, px: number): string {
  if (token === undefined) return '';
  const full = String(token);
  if (full.length * 5.6 + 4 <= px) return full;
  const tail = `…${full.slice(-4)}`;
  return tail.length * 5.6 + 4 <= px ? tail : '';
}

/** One timeline chart (overview or zoom) of every lane; returns the SVG and its height. */
function timelineChart(
  input: TimelineInput,
  windows: readonly Window[],
  lanes: Lanes,
  s: Scale,
  origin: number,
  labelTokens: boolean,
): { svg: string; height: number } {
  const top = 28;
  const rows: string[] = [];
  const parts: string[] = [];
  let y = top;
  const colour = new Map(lanes.workers.map((w, i) => [w, PALETTE[i % PALETTE.length]!]));
  const visible = (a: number, b: number) => b > s.t0 && a < s.t1;
  const clampX = (t: number) => Math.min(Math.max(s.x(t), LEFT), WIDTH - RIGHT);
  // The overview draws thousands of holds a fraction of a pixel apart: bars of one colour that
  // touch on screen are drawn as one (its tooltip counts them), which keeps the page small.
  let run: { x0: number; x1: number; y: number; fill: string; holds: Acquire[] } | undefined;
  const flush = (): string => {
    if (!run) return '';
    const r = run;
    run = undefined;
    if (r.holds.length === 1) return holdRect(r.holds[0]!, r.y, r.fill, false);
    return (
      `<rect x="${f1(r.x0)}" y="${r.y + (LANE - BAR) / 2}" width="${f1(r.x1 - r.x0)}" height="${BAR}" fill="${r.fill}" class="hold">` +
      `<title>${r.holds.length} holds of ${esc(r.holds[0]!.worker)}, tokens ${r.holds[0]!.token}-${r.holds.at(-1)!.token}</title></rect>`
    );
  };
  const holdBar = (a: Acquire, laneY: number, fill: string, withToken: boolean): string => {
    if (withToken) return flush() + holdRect(a, laneY, fill, true);
    const x0 = clampX(a.end!);
    const x1 = Math.max(clampX(holdEnd(a)), x0 + 0.8);
    if (run && run.fill === fill && run.y === laneY && x0 <= run.x1 + 0.6) {
      run.x1 = Math.max(run.x1, x1);
      run.holds.push(a);
      return '';
    }
    const out = flush();
    run = { x0, x1, y: laneY, fill, holds: [a] };
    return out;
  };
  const holdRect = (a: Acquire, laneY: number, fill: string, withToken: boolean) => {
    const x0 = clampX(a.end!);
    const x1 = clampX(holdEnd(a));
    const w = Math.max(x1 - x0, 0.8);
    const label = withToken ? tokenLabel(a.token, w) : '';
    return (
      `<rect x="${f1(x0)}" y="${laneY + (LANE - BAR) / 2}" width="${f1(w)}" height="${BAR}" fill="${fill}" class="hold">` +
      `<title>${esc(a.worker)}#${a.i} ${esc(a.resource)}: token ${a.token}, held ${f1(holdEnd(a) - a.end!)} ms ` +
      `(acquire took ${f1(a.end! - a.request)} ms)</title></rect>` +
      (label ? `<text x="${f1(x0 + 2)}" y="${laneY + LANE / 2 + 3.5}" class="token">${label}</text>` : '')
    );
  };

  // Resource lanes: every holder together; intersecting holds are drawn red on top.
  for (const resource of lanes.resources) {
    const holds = input.report.acquires
      .filter((a) => laneOf(a) === resource && a.outcome === 'granted' && holdEnd(a) > a.end!)
      .sort((p, q) => p.end! - q.end!);
    rows.push(
      `<text x="${LEFT - 8}" y="${y + LANE / 2 + 4}" class="lane-label">lock ${esc(resource)}</text>`,
    );
    parts.push(`<g class="resource-lane" data-resource="${esc(resource)}">`);
    let reach = -Infinity;
    for (const a of holds) {
      if (visible(a.end!, holdEnd(a))) parts.push(holdBar(a, y, colour.get(a.worker)!, false));
      if (a.end! < reach) {
        const x0 = clampX(a.end!);
        const x1 = clampX(Math.min(reach, holdEnd(a)));
        parts.push(
          `<rect x="${f1(x0)}" y="${y}" width="${f1(Math.max(x1 - x0, 2))}" height="${LANE}" class="overlap">` +
            `<title>overlap</title></rect>`,
        );
      }
      reach = Math.max(reach, holdEnd(a));
    }
    parts.push(flush(), '</g>');
    y += LANE;
  }
  y += 6;

  // Worker lanes: waits (request -> outcome) as a thin line, holds as bars, writes as marks.
  const stale = new Set(input.report.staleWrites.map((o) => `${o.worker}:${o.i}:${o.request}`));
  for (const worker of lanes.workers) {
    const mine = input.report.acquires.filter((a) => a.worker === worker);
    const resource = mine[0]?.resource ?? '';
    rows.push(
      `<text x="${LEFT - 8}" y="${y + LANE / 2 + 4}" class="lane-label">${esc(worker)} (${esc(resource)})</text>`,
    );
    parts.push(`<g class="lane" data-worker="${esc(worker)}">`);
    let lastFailX = -Infinity;
    for (const a of mine) {
      const end = a.end ?? a.request + a.ttl;
      if (!visible(a.request, Math.max(end, a.outcome === 'granted' ? holdEnd(a) : end))) continue;
      if (end - a.request > 0 && s.x(end) - s.x(a.request) >= (labelTokens ? 1 : 2)) {
        parts.push(
          `<line x1="${f1(clampX(a.request))}" y1="${y + LANE / 2}" x2="${f1(clampX(end))}" y2="${y + LANE / 2}" class="wait"/>`,
        );
      }
      if (a.outcome === 'granted') parts.push(holdBar(a, y, colour.get(worker)!, labelTokens));
      else if (a.outcome === 'failed' && (labelTokens || clampX(end) - lastFailX >= 1.5)) {
        lastFailX = clampX(end);
        parts.push(
          `<circle cx="${f1(clampX(end))}" cy="${y + LANE / 2}" r="2" class="failed"><title>${esc(a.error ?? 'failed')} ` +
            `after ${f1(end - a.request)} ms</title></circle>`,
        );
      }
    }
    parts.push(flush());
    for (const o of input.report.ops.filter((op) => op.worker === worker && op.kind === 'write')) {
      if (!visible(o.request, o.request)) continue;
      parts.push(writeMark(o, s.x(o.request), y, stale.has(`${o.worker}:${o.i}:${o.request}`)));
    }
    parts.push('</g>');
    y += LANE;
  }
  y += 6;

  // Node lanes: which node each fault hit, and when.
  for (const node of lanes.nodes) {
    rows.push(`<text x="${LEFT - 8}" y="${y + LANE / 2 + 4}" class="lane-label">node ${node}</text>`);
    parts.push(`<g class="node-lane" data-node="${node}">`);
    for (const w of windows) {
      for (const hit of w.nodes.filter((n) => n.node === node)) {
        if (!visible(w.start, w.end)) continue;
        const x0 = clampX(w.start);
        const x1 = clampX(w.end);
        parts.push(
          `<rect x="${f1(x0)}" y="${y + 3}" width="${f1(Math.max(x1 - x0, 1))}" height="${LANE - 6}" class="node-fault">` +
            `<title>${esc(hit.kind)} node ${node}: ${f1(w.end - w.start)} ms</title></rect>`,
        );
      }
    }
    parts.push('</g>');
    y += LANE;
  }

  const height = y + 22;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">` +
    shading(s, windows, 0, height - 20, true) +
    axis(s, origin, top - 4, y - top + 4) +
    rows.join('') +
    parts.join('') +
    `</svg>`;
  return { svg, height };
}

function writeMark(o: StoreOp, x: number, laneY: number, stale: boolean): string {
  const cy = laneY + LANE / 2;
  if (stale) {
    return `<text x="${f1(x)}" y="${cy + 6}" class="stale">✖<title>STALE WRITE ACCEPTED: token ${o.token}</title></text>`;
  }
  if (o.ok === false) {
    return `<text x="${f1(x)}" y="${cy + 4}" class="refused">×<title>write with token ${o.token} refused by the fenced store</title></text>`;
  }
  return '';
}

/** Acquire latency over time, log scale, one dot per attempt with an outcome. */
function latencyChart(input: TimelineInput, windows: readonly Window[], s: Scale, origin: number): string {
  const top = 14;
  const h = 200;
  const decided = input.report.acquires.filter((a) => a.end !== undefined);
  const lat = decided.map((a) => Math.max(a.end! - a.request, 0.05));
  const hi = Math.max(10, ...lat);
  const lo = 0.1;
  const decades = Math.ceil(Math.log10(hi / lo));
  const y = (ms: number) => top + h - (Math.log10(Math.max(ms, lo) / lo) / decades) * h;
  const grid: string[] = [];
  for (let d = 0; d <= decades; d++) {
    const ms = lo * 10 ** d;
    grid.push(
      `<line x1="${LEFT}" y1="${f1(y(ms))}" x2="${WIDTH - RIGHT}" y2="${f1(y(ms))}" stroke="#e4e4e4"/>` +
        `<text x="${LEFT - 8}" y="${f1(y(ms) + 4)}" class="lane-label">${ms >= 1000 ? `${ms / 1000} s` : `${+ms.toFixed(1)} ms`}</text>`,
    );
  }
  // One dot per attempt, except where an earlier one of the same outcome covers its pixel.
  const drawn = new Set<string>();
  const dots = decided
    .map((a, k) => {
      const cls = a.outcome === 'granted' ? 'lat-ok' : 'lat-fail';
      const [cx, cy] = [s.x(a.request), y(lat[k]!)];
      const pixel = `${cls}:${Math.round(cx)}:${Math.round(cy)}`;
      if (drawn.has(pixel)) return '';
      drawn.add(pixel);
      return `<circle cx="${f1(cx)}" cy="${f1(cy)}" r="1.6" class="${cls} point"/>`;
    })
    .join('');
  const height = top + h + 30;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" class="latency">` +
    shading(s, windows, 0, top + h, false) +
    axis(s, origin, top, h) +
    grid.join('') +
    dots +
    `</svg>`
  );
}

/** The page: headline figures, legend, overview, zoom on the first fault, latency. */
export function renderTimeline(input: TimelineInput): string {
  const windows: Window[] = input.windows
    .map((w) => ({
      label: w.label,
      start: Number(w.start) / 1e6,
      end: Number(w.end) / 1e6,
      nodes: nodesOf(w.label),
    }))
    .sort((a, b) => a.start - b.start);
  const acquires = input.report.acquires;
  const times = [
    ...acquires.map((a) => a.request),
    ...acquires.filter((a) => a.outcome === 'granted').map(holdEnd),
    ...windows.flatMap((w) => [w.start, w.end]),
  ].filter(Number.isFinite);
  const origin = times.length ? Math.min(...times) : 0;
  const last = times.length ? Math.max(...times) : 1;
  const lanes = lanesOf(input, windows);
  const overview = timelineChart(input, windows, lanes, scale(origin, last), origin, false);

  let zoom = '';
  const focus = windows[0];
  if (focus) {
    // The cut's first ~half second: short enough that the bars carry their tokens.
    const zs = scale(Math.max(origin, focus.start - 300), Math.min(last, focus.start + 500));
    zoom =
      `<h2>Zoom: the ${f1((zs.t1 - zs.t0) / 1000)} s around the start of “${esc(focus.label)}”, each hold labelled ` +
      `with its fencing token (…last 4 digits where the whole token does not fit)</h2>` +
      timelineChart(input, windows, lanes, zs, origin, true).svg;
  }
  const grants = acquires.filter((a) => a.outcome === 'granted').length;
  const r = input.report;
  const verdict = r.overlaps === 0 && r.tokenOrderViolations === 0 && r.staleWritesAccepted === 0;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(input.id)}: ${esc(input.title)}</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; } h2 { font-size: 14px; margin: 18px 0 4px; }
.verdict { font-weight: 600; color: ${verdict ? '#2f7d32' : FAULT}; }
.legend span { margin-right: 14px; } .sw { display: inline-block; width: 18px; height: 10px; vertical-align: middle; margin-right: 4px; }
svg text { font: 10px system-ui, sans-serif; }
.lane-label { text-anchor: end; fill: #444; } .tick { text-anchor: middle; fill: #777; }
.window { fill: ${FAULT}; fill-opacity: 0.09; } .wlabel { fill: #a02a26; font-weight: 600; }
.wait { stroke: #bbb; stroke-width: 1; } .failed { fill: #e08a2e; }
.hold { stroke: #fff; stroke-width: 0.3; } .token { fill: #fff; font: 9px ui-monospace, monospace; pointer-events: none; }
.overlap { fill: ${FAULT}; fill-opacity: 0.85; } .node-fault { fill: ${FAULT}; fill-opacity: 0.75; }
.refused { fill: #e08a2e; font-weight: 700; text-anchor: middle; } .stale { fill: ${FAULT}; font-size: 16px; text-anchor: middle; }
.lat-ok { fill: #3b6fb6; fill-opacity: 0.6; } .lat-fail { fill: #e08a2e; }
</style></head><body>
<h1>${esc(input.id)}: ${esc(input.title)}</h1>
<div>${lanes.workers.length} worker processes, ${acquires.length} acquires, ${grants} grants, ${windows.length} fault windows.
<span class="verdict">${r.overlaps} overlapping holds, ${r.tokenOrderViolations} token order violations, ${r.staleWritesAccepted} stale writes accepted.</span></div>
<div class="legend"><span><i class="sw" style="background:${PALETTE[0]}"></i>hold (grant → release), one colour per process</span>
<span><i class="sw" style="background:#bbb;height:2px"></i>waiting in acquire</span>
<span><i class="sw" style="background:#e08a2e;border-radius:5px;width:6px;height:6px"></i>acquire failed</span>
<span><i class="sw" style="background:${FAULT};opacity:.25"></i>fault window</span>
<span><i class="sw" style="background:${FAULT};opacity:.75"></i>node hit by the fault</span>
<span><b style="color:#e08a2e">×</b> write refused by the fenced store</span>
<span><b style="color:${FAULT}">✖</b> stale write accepted</span>
<span><i class="sw" style="background:${FAULT}"></i>overlap (in a "lock" lane)</span></div>
<h2>Timeline of the whole run (seconds from the first request)</h2>
${overview.svg}
${zoom}
<h2>Acquire latency over time (request → outcome; blue granted, orange failed; log scale)</h2>
${latencyChart(input, windows, scale(origin, last), origin)}
</body></html>
`;
}
