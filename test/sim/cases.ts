/*
 * The seeds `npm test` replays (test/sim/simulate.spec.ts): each control on a pinned seed where it
 * finds its violation, and each engine bug the simulation found on a seed that showed it (the run
 * is clean since the fix; reverting the fix makes it fail again). A replay runs the seed twice and
 * checks that both runs are identical. Seeds hold for this simulator: a change to the world's
 * draws moves them (then find new ones with the fix reverted, and say so in the commit).
 */

/** A seed and the flags that select its run, as `npm run simulate -- --replay <seed> <flags>` takes them. */
export interface SimCase {
  readonly name: string;
  readonly seed: number;
  readonly flags: readonly string[];
  /** The invariant the run must break (a control), or undefined: no violation (a regression case). */
  readonly violation?: string;
}

/** Each control finds its violation on its seed: the simulator sees what it looks for. */
export const CONTROL_CASES: readonly SimCase[] = [
  // restart guard off, restarts without persistence: two holders at once
  { name: 'restart', seed: 2, flags: ['--control', 'restart'], violation: 'overlap' },
  // clock guard off, forward steps of a voter's clock: two holders at once
  // (a seed's run moves with the engine: seed 3 no longer overlaps since fail-fast acquires retry a
  // split vote; seeds 2, 7, 9, 10 and 12 of 1-12 do)
  { name: 'clock', seed: 2, flags: ['--control', 'clock'], violation: 'overlap' },
  // a store that does not check tokens, holders paused past the ttl: a stale write gets in
  { name: 'fencing', seed: 1, flags: ['--control', 'fencing'], violation: 'stale write accepted' },
];

/** The engine bugs found by the simulation, on a seed that showed each (commit, what). */
export const REGRESSION_CASES: readonly SimCase[] = [
  {
    // 01b8f4c: MaxListenersExceededWarning at an engine's 11th waiting acquire (the warning's
    // process.nextTick broke the seal: an unexpected error in every run with 11 waiters)
    name: 'no listener warning at the 11th waiter (01b8f4c)',
    seed: 1,
    flags: [],
  },
  {
    // bccbd7c: a late give-back of a semaphore attempt freed the slot a later attempt won: more
    // holders than permits
    name: 'a semaphore attempt keeps its slot against an earlier give-back (bccbd7c)',
    seed: 107,
    flags: ['--faults', 'partition,asymmetric,stop,delay,pause'],
  },
  {
    // b63396d: a semaphore's split vote retried at once: a command storm
    name: "a semaphore's split vote backs off (b63396d)",
    seed: 204,
    flags: ['--faults', 'partition,asymmetric,stop,delay'],
  },
  {
    // 846db39: attempt, rename, own hand-over, attempt at once while a majority abstained: a storm
    name: 'a hand-over that does not count after an unavailable attempt waits out the pause (846db39)',
    seed: 732601424,
    flags: ['--separate-budgets'], // the driver's budgets when the seed was found
  },
  {
    // the same loop after busy attempts (a holder elsewhere): the fix above covered unavailable ones
    name: 'a hand-over that does not count after any failed attempt waits out the pause',
    seed: 2386780603,
    flags: ['--separate-budgets'], // the driver's budgets when the seed was found
  },
  {
    // A voter ahead of the others when a new engine first read it (bootstrap) counted there: v1
    // stepped 10.4 s forward while c0.0 held k1 (granted by v0, v1, v4); c0.0 crashed and was cut
    // from v1 before it heard v1 again, so no engine saw the step; c1.4, a new process, was
    // granted k1 by v1, v2, v3 (v2 and v3 never had c0.0's grant: a partition) 2.7 s before
    // c0.0's validity ended: two holders at once. Now a voter ahead of the others' median by more
    // than the clock guard at an engine's first reading does not count there for the restart guard.
    name: 'a voter ahead at a new engine’s first reading does not count (overlap)',
    seed: 3080223590,
    flags: [],
  },
  {
    // The same fix, tokens: 3 voters, v2's clock stepped forward again and again (about 7 s ahead in
    // all), v1 was flushed again and again: each a minority, together a majority. A client started
    // after the steps (it never read v2 before, so its clock guard saw no step) counted v2 and got
    // a token seeded from v2's clock, raised on v1 and v2 only; v1's FLUSHALL dropped that copy,
    // and the tokens that followed, from v0 and v1 (whose clocks ran behind), were lower (token
    // order on k1). A known issue until that client's bootstrap stopped counting v2.
    name: 'token order: a voter ahead at a new engine’s first reading does not count',
    seed: 20000035,
    flags: ['--voters', '3', '--clients', '5', '--separate-budgets'],
  },
  {
    // A known issue until the release order fix (a let-go sent before a vote the voter held back,
    // send.ts): 5 voters, default budgets, v1's wall clock stepped 294 ms forward at 17.59 s;
    // c1.7 was granted permit 2 of semaphore k1 with a token seeded from v1's clock, and c2.8, a
    // client started after the step, got the same permit 1.2 s later from a majority the first
    // token had not reached, 273 ms lower (token order on k1#2). With that fix the run differs and
    // breaks nothing; not shown to be the cause: kept so that a change that brings the violation
    // back is seen (one token-order violation in 1,240 default seeds since: seed 3594078474 below).
    name: "token order after one voter's forward step, a semaphore permit (no longer shown)",
    seed: 3152743629,
    flags: [],
  },
  {
    // A known issue until a voter ahead of the voters' median by more than the clock guard stopped
    // counting at every reading (it counted again, lead and all, once the guard after its step had
    // passed): 5 voters, default budgets (one of the 120 seeds of 604b361). v0's clock ran about 23 s
    // ahead after forward steps; it crashed losing its last second of AOF and seeded its counter for
    // k3 from its clock again: a reader's token of ...137.46 s at about 114.4 s, raised on v2 and v3
    // only; v3's counters were dropped (restart guard) and seeded from v3's clock, and the next
    // writer's majority held neither v0 nor v2: ...134.34 s, lower (token order, read-write).
    name: 'token order: a voter that stays ahead of the voters does not count (read-write)',
    seed: 3594078474,
    flags: [],
  },
  {
    // --all-faults (every fault kind drawn in one run: AOF loss, failovers, FLUSHALL, clock steps;
    // the default draws keep state loss and forward steps within one minority budget): k1's permit
    // tokens went back from ...095.48 s to ...091.22 s, the same mechanism as the case above. A
    // known issue until the same fix.
    name: 'token order with every fault kind at once: a voter ahead does not count (--all-faults)',
    seed: 3152743677,
    flags: ['--all-faults'],
  },
  {
    // --all-faults (found in the 250 seeds from 11000000 once seed 3594078474 was fixed): after every
    // fault had healed (20.47 s), the probe of k0 (a mutex that multi-resource waiters share) was
    // not granted within the 28 s bound: 324 of the 358 turns the voters gave on k0 from then on
    // went to multi-resource waiters no engine listened for (PUBLISH reached nobody), each holding
    // k0 for turnMs, a different one on each voter. A promote now skips a multi-resource waiter
    // nobody hears, as it skipped a single-resource one.
    name: 'turns skip multi-resource waiters nobody listens for (--all-faults)',
    seed: 11000023,
    flags: ['--all-faults'],
  },
  {
    // A voter whose clock lagged the voters' time by more than the restart guard seeded a lost
    // fence counter from its clock, below tokens already raised on it: token order broke (a node
    // now abstains instead when it is behind the proposed seed by more than half the guard). Found
    // by ad3f1b8's derived seeds: v1 11 s behind, guard 6,056 ms.
    name: 'a voter far behind does not seed a fence counter from its clock (3388729418)',
    seed: 3388729418,
    flags: [],
  },
  {
    // The same on a read-write key: v0 33 s behind, guard 12,912 ms (found searching 1,119 seeds).
    name: 'the same on a read-write key (3389000044)',
    seed: 3389000044,
    flags: [],
  },
  // 24d0049 (one identity check retry at a time per shard) has no seed here: on this simulator no
  // run re-finds it with the fix reverted (77 runs of crash,stop,partition,failover: the busiest
  // link's figures do not move); test/unit/identity-guard.spec.ts holds it (128 INFO before, 4 after).
];

/**
 * Known issues: runs outside the assumptions the simulator keeps by default, which still break an
 * invariant; each case says why, and must keep finding its violation (a change that ends it moves
 * the case to the regressions).
 */
export const KNOWN_ISSUE_CASES: readonly SimCase[] = [];
