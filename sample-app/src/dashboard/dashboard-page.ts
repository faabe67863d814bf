/**
 * The dashboard page: one HTML document with inline CSS and JS, no build step and nothing fetched
 * from elsewhere (it must work offline and behind strict networks). It opens an EventSource on
 * `<this path>/events` and renders the messages of messages.ts. Elements carry `data-*`
 * attributes (node state, account holder and token, activity kind) for the end-to-end test.
 */
export const DASHBOARD_PAGE = /* html */ `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nest-quorum-lock dashboard</title>
<style>
  :root { --bg:#f5f6f8; --card:#fff; --ink:#1d2330; --muted:#6b7385; --line:#e3e6ec;
          --up:#1a7f45; --down:#c62828; --abst:#b26a00; --info:#2f5fb3; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; background:var(--bg); color:var(--ink); }
  header { display:flex; align-items:center; gap:16px; padding:12px 24px; background:#1d2330; color:#fff; }
  header h1 { font-size:18px; margin:0; font-weight:600; }
  header .instance { color:#aab3c5; }
  #conn { margin-left:auto; font-size:12px; padding:3px 10px; border-radius:10px; background:#3a4252; }
  #conn.live { background:var(--up); }
  main { display:grid; grid-template-columns: 1fr 1fr; gap:16px; padding:16px 24px; }
  section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 16px; }
  section.wide { grid-column: 1 / -1; }
  h2 { font-size:13px; text-transform:uppercase; letter-spacing:.06em; color:var(--muted); margin:0 0 10px; }
  #quorum { font-weight:600; margin-left:8px; text-transform:none; letter-spacing:0; }
  #quorum.ok { color:var(--up); } #quorum.lost { color:var(--down); }
  #nodes { display:grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap:10px; }
  .node { border:1px solid var(--line); border-left:6px solid var(--muted); border-radius:6px; padding:8px 10px; }
  .node[data-state=up] { border-left-color:var(--up); }
  .node[data-state=down] { border-left-color:var(--down); background:#fdf1f1; }
  .node[data-state=abstaining] { border-left-color:var(--abst); background:#fff7ea; }
  .node .label { font-family:ui-monospace, monospace; font-size:13px; }
  .node .state { font-weight:700; text-transform:uppercase; font-size:12px; }
  .node[data-state=up] .state { color:var(--up); } .node[data-state=down] .state { color:var(--down); }
  .node[data-state=abstaining] .state { color:var(--abst); }
  .node .meta { color:var(--muted); font-size:12px; }
  table { width:100%; border-collapse:collapse; }
  th, td { text-align:left; padding:5px 8px; border-bottom:1px solid var(--line); }
  th { font-size:12px; color:var(--muted); font-weight:600; }
  td.num { font-family:ui-monospace, monospace; }
  .held { color:var(--info); font-weight:600; } .free { color:var(--muted); }
  #counts { display:flex; gap:12px; margin-bottom:10px; }
  .count { flex:1; border:1px solid var(--line); border-radius:6px; padding:6px 10px; }
  .count b { display:block; font-size:22px; }
  .count.granted b { color:var(--up); } .count.refused b { color:var(--abst); } .count.stale b { color:var(--down); }
  #recent { list-style:none; margin:0; padding:0; max-height:420px; overflow:auto; }
  #recent li { display:grid; grid-template-columns: 64px 150px 1fr; align-items:baseline; gap:8px; padding:4px 0; border-bottom:1px solid var(--line); }
  .time { color:var(--muted); font-family:ui-monospace, monospace; font-size:12px; }
  .kind { font-size:11px; font-weight:700; text-transform:uppercase; border-radius:4px; padding:1px 6px; justify-self:start; }
  .k-granted { background:#e3f4ea; color:var(--up); } .k-released { background:#eef0f4; color:var(--muted); }
  .k-busy, .k-unavailable { background:#fff0d9; color:var(--abst); }
  .k-lost, .k-stale-rejected { background:#fde4e4; color:var(--down); }
  .empty { color:var(--muted); font-style:italic; }
</style>
</head>
<body>
<header>
  <h1>nest-quorum-lock</h1><span class="instance">instance <b id="instance">?</b></span>
  <span id="conn">connecting</span>
</header>
<main>
  <section class="wide">
    <h2>Voters <span id="quorum"></span></h2>
    <div id="nodes"><span class="empty">waiting for the first probe</span></div>
  </section>
  <section>
    <h2>Account locks</h2>
    <table>
      <thead><tr><th>Account</th><th>Lock</th><th>Holder</th><th>Fencing token</th><th>Frees in</th></tr></thead>
      <tbody id="accounts"><tr><td colspan="5" class="empty">no account locked yet</td></tr></tbody>
    </table>
  </section>
  <section>
    <h2>Recent account locks (this instance)</h2>
    <div id="counts">
      <div class="count granted">granted<b id="c-granted">0</b></div>
      <div class="count refused">refused (busy / no quorum)<b id="c-refused">0</b></div>
      <div class="count stale">stale writes rejected<b id="c-stale">0</b></div>
    </div>
    <ul id="recent"><li class="empty">nothing yet</li></ul>
  </section>
</main>
<script>
'use strict';
const nodes = new Map(), accounts = new Map();
let recent = [];
const $ = (id) => document.getElementById(id);

/** Builds an element; text children are set as text, never parsed as HTML. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'class') el.className = v; else el.setAttribute(k, String(v));
  }
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
const ms = (v) => v === null || v === undefined ? '' : Math.round(v) + ' ms';

function renderNodes() {
  const list = [...nodes.values()].sort((a, b) => a.node.localeCompare(b.node, undefined, { numeric: true }));
  $('nodes').replaceChildren(...list.map((n) => {
    const state = n.state === 'abstaining' ? 'abstaining until ' + clock(n.abstainingUntil)
      : n.state === 'down' ? 'down, not answering' : 'up';
    const meta = n.state === 'up' ? 'latency ' + (n.latencyMs === null ? '?' : n.latencyMs.toFixed(1) + ' ms')
      : n.reason || '';
    return h('div', { class: 'node', 'data-node': n.node, 'data-state': n.state },
      h('div', { class: 'label' }, n.node), h('div', { class: 'state' }, state), h('div', { class: 'meta' }, meta));
  }));
}

function renderAccounts() {
  const rows = [...accounts.values()].sort((a, b) => a.account.localeCompare(b.account));
  if (!rows.length) return;
  $('accounts').replaceChildren(...rows.map((a) => h('tr',
    { 'data-account': a.account, 'data-held': a.held, 'data-holder': a.holder ?? a.lastHolder, 'data-token': a.fencingToken },
    h('td', {}, a.account),
    h('td', { class: a.held ? 'held' : 'free' }, a.held ? 'held' : 'free'),
    h('td', {}, a.holder ? a.holder : a.lastHolder ? 'last: ' + a.lastHolder : '-'),
    h('td', { class: 'num' }, a.fencingToken ?? '-'),
    h('td', { class: 'num' }, a.held ? ms(a.ttlMs) : ''))));
}

function renderRecent() {
  if (!recent.length) return;
  $('recent').replaceChildren(...recent.map((e) => {
    const label = e.kind === 'stale-rejected' ? 'stale write rejected' : e.kind;
    const what = [e.resource, e.fencingToken !== null ? 'token ' + e.fencingToken : '',
      e.durationMs !== null ? (e.kind === 'released' || e.kind === 'lost' ? 'held ' : 'after ') + e.durationMs + ' ms' : '',
      e.detail || ''].filter(Boolean).join(' · ');
    return h('li', { 'data-kind': e.kind, 'data-resource': e.resource },
      h('span', { class: 'time' }, clock(e.at)), h('span', { class: 'kind k-' + e.kind }, label), h('span', {}, what));
  }));
}

function renderCounts(c) {
  $('c-granted').textContent = c.granted; $('c-refused').textContent = c.refused; $('c-stale').textContent = c.staleRejected;
}

const es = new EventSource(location.pathname.replace(/\\/?$/, '/events'));
es.onopen = () => { $('conn').textContent = 'live'; $('conn').className = 'live'; };
es.onerror = () => { $('conn').textContent = 'reconnecting'; $('conn').className = ''; };
es.addEventListener('snapshot', (m) => {
  const s = JSON.parse(m.data);
  $('instance').textContent = s.instance; document.title = 'Locks, instance ' + s.instance;
  recent = s.recent; renderRecent(); renderCounts(s.counts);
});
es.addEventListener('status', (m) => {
  const s = JSON.parse(m.data);
  nodes.clear(); for (const n of s.nodes) nodes.set(n.node, n);
  for (const a of s.accounts) accounts.set(a.account, a);
  const voting = s.nodes.filter((n) => n.state === 'up').length;
  $('quorum').textContent = voting + ' of ' + s.nodes.length + ' voting, quorum ' + s.quorum
    + (s.quorumReachable ? ': locks can be granted' : ': NO QUORUM');
  $('quorum').className = s.quorumReachable ? 'ok' : 'lost';
  renderNodes(); renderAccounts();
});
es.addEventListener('node', (m) => { const { node } = JSON.parse(m.data); nodes.set(node.node, node); renderNodes(); });
es.addEventListener('activity', (m) => {
  const a = JSON.parse(m.data);
  recent = [a.entry, ...recent].slice(0, 50); renderRecent(); renderCounts(a.counts);
  accounts.set(a.account.account, a.account); renderAccounts();
});
</script>
</body>
</html>
`;
