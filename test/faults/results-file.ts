/*
 * The server as a dimension of test/faults/RESULTS.md (issue 39): the file's main table is the
 * default server's run (Debian's redis-server); a run on another server (REDIS_SERVER_BIN, as
 * `npm run test:servers -- --results` sets it) writes its table into a section of its own,
 * between `<!-- server: Valkey 8.0.1 -->` markers inside the `<!-- servers -->` block, and a
 * regeneration of the main table carries that block over. Pure text functions: the spec's
 * afterAll does the file I/O.
 */

const BLOCK = ['<!-- servers -->', '<!-- /servers -->'] as const;
/** Where a new servers block goes: before the legend (the file's last section). */
const LEGEND_HEADING = '## How to read the table';

const SERVERS_HEADING =
  '## On other servers (issue 39)\n\n' +
  'The matrix scenarios (S0, S5, S5-noguard, S8, S16, S20-guard, S20-control), reduced run, on each ' +
  'server built from `../shared/servers` by `npm run test:servers -- --results` (the controls pass only ' +
  'when they show their violation).';

function markersOf(label: string): [string, string] {
  return [`<!-- server: ${label} -->`, `<!-- /server: ${label} -->`];
}

/** The servers block of `text` (markers included), or '' when it has none. */
export function serversBlock(text: string): string {
  const from = text.indexOf(BLOCK[0]);
  const to = text.indexOf(BLOCK[1]);
  if (from < 0 || to < from) return '';
  return text.slice(from, to + BLOCK[1].length);
}

/**
 * A regenerated file (`fresh`, the default server's run) with the servers block of the file it
 * replaces (`old`), before its legend.
 */
export function keepServers(fresh: string, old: string): string {
  const block = serversBlock(old);
  return block ? insertBeforeLegend(fresh, `${SERVERS_HEADING}\n\n${block}`) : fresh;
}

/** `text` with server `label`'s section set to `body` (its heading and table), others kept. */
export function withServerSection(text: string, label: string, body: string): string {
  const [open, close] = markersOf(label);
  const section = `${open}\n\n${body}\n\n${close}`;
  let block = serversBlock(text);
  if (!block) {
    text = insertBeforeLegend(text, `${SERVERS_HEADING}\n\n${BLOCK[0]}\n${BLOCK[1]}`);
    block = serversBlock(text);
  }
  const from = block.indexOf(open);
  const to = block.indexOf(close);
  const updated =
    from >= 0 && to > from
      ? `${block.slice(0, from)}${section}${block.slice(to + close.length)}`
      : `${block.slice(0, -BLOCK[1].length)}${section}\n\n${BLOCK[1]}`;
  return text.replace(block, () => updated);
}

function insertBeforeLegend(text: string, section: string): string {
  const at = text.indexOf(LEGEND_HEADING);
  if (at < 0) return `${text.trimEnd()}\n\n${section}\n`;
  return `${text.slice(0, at)}${section}\n\n${text.slice(at)}`;
}
