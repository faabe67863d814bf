import { CLOCK_MARK, IDENTITY_CHECK, RUN_ID, SEED_SLOT_MARKERS } from '../../core/scripts/guards.js';
import type { LuaScript } from '../../core/scripts/lua.js';
import { ACL_PROBE } from '../../core/voter/acl-probe.js';
import type { Emulation } from './scripts.js';
import type { MemoryServer } from './server.js';

/*
 * The guards' maintenance scripts (scripts/guards.ts) and the ACL probe (voter/acl-probe.ts)
 * emulated. A memory server has no ACL: the probe finds nothing missing, and leaves what the Lua
 * leaves (its scratch keys deleted, an empty message on the wake channel).
 */

/** The SCAN + DEL loop of the identity check and the clock marking: how many keys it deleted. */
function dropMatching(db: MemoryServer, pattern: string): number {
  return db.keys(pattern).reduce((dropped, key) => dropped + db.del(key), 0);
}

const identityCheck: Emulation = (db, [marker, record], [runId, trusted, guardArg, pattern]) => {
  const guard = Number(guardArg);
  const [markerValue, recordValue, now] = [db.get(marker), db.get(record), db.nowMs()];
  const left = () =>
    markerValue && markerValue !== '0' && Number(markerValue) > now ? Number(markerValue) - now : 0;
  const [, writer, writerTrusted] = /^(\S+) (\d)$/.exec(recordValue ?? '') ?? [];
  if (writer === runId) return [left(), 'same', '', 0];
  db.set(record, `${runId} ${trusted}`);
  if (markerValue === undefined) {
    db.set(marker, (now + guard).toFixed(0));
    return [guard, 'new', '', 0];
  }
  if (recordValue === undefined) return [left(), 'adopted', '', 0];
  if (writerTrusted === '1' && trusted === '1') return [left(), 'trusted', writer, 0];
  if (left() < guard) db.set(marker, (now + guard).toFixed(0));
  const dropped = dropMatching(db, pattern);
  return [Math.max(left(), guard), 'changed', writer ?? '', dropped];
};

const clockMark: Emulation = (db, _keys, [forMs, pattern, past, ...markers]) => {
  const now = db.nowMs();
  if (past !== '' && now <= Number(past)) return [0, 0];
  const ready = now + Number(forMs);
  for (const marker of markers) {
    if ((Number(db.get(marker) ?? '0') || 0) < ready) db.set(marker, ready.toFixed(0));
  }
  return [ready - now, dropMatching(db, pattern)];
};

const seedSlotMarkers: Emulation = (db, _keys, [guardArg, ...markers]) => {
  const guard = Number(guardArg);
  const value = guard <= 0 ? '0' : (db.nowMs() + guard).toFixed(0);
  const settled = (marker: string) => (guard <= 0 ? db.get(marker) === '0' : db.get(marker) !== undefined);
  if (settled(markers[0]) && settled(markers.at(-1)!)) return 0;
  let written = 0;
  for (const marker of markers) {
    if (!settled(marker)) written += Number(db.set(marker, value));
  }
  return written;
};

const aclProbe: Emulation = (db, [key, queue], [channel]) => {
  db.del(key);
  db.del(queue);
  db.publish(channel, '');
  return [];
};

export const GUARD_SCRIPTS: Array<[LuaScript, Emulation]> = [
  [IDENTITY_CHECK, identityCheck],
  [RUN_ID, (db) => db.runId],
  [CLOCK_MARK, clockMark],
  [SEED_SLOT_MARKERS, seedSlotMarkers],
  [ACL_PROBE, aclProbe],
];
