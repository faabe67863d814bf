import type { Voters } from '../quorum/voters.js';

/*
 * Fencing, engine side (the nodes' counters, their seeding from the clock and the restart guard:
 * scripts/fence.ts). A token is, per resource, the maximum over the granting majority, and before
 * the lock is handed out a majority must hold counter >= token: a later holder's majority meets it
 * on at least one node, where the later increment comes after. So tokens strictly increase per
 * resource, also when a minority of nodes loses its counters.
 */

/** A voter's grant: its index and one token per lock key. */
export interface VoterGrant {
  readonly index: number;
  readonly reply: { readonly tokens: readonly number[] };
}

/**
 * The tokens of a grant (settlement). When the granting majority disagrees, a second round raises
 * the lagging granters' counters to the token (every one of them must confirm: the others hold it
 * already); that promise resolves undefined when it cannot. When they agree (nearly every grant),
 * the tokens come back at once, not as a promise: no extra tick per acquire.
 */
export function settleTokens(
  voters: Voters,
  lockKeys: readonly string[],
  value: string,
  grants: readonly VoterGrant[],
): number[] | Promise<number[] | undefined> {
  const count = lockKeys.length;
  const tokens = new Array<number>(count).fill(0);
  for (const { reply } of grants) {
    for (let i = 0; i < count; i++) if (reply.tokens[i]! > tokens[i]!) tokens[i] = reply.tokens[i]!;
  }
  const behind = grants.filter(({ reply }) => reply.tokens.some((token, i) => token !== tokens[i]));
  if (behind.length === 0) return tokens;
  const lagging = behind.map(({ index }) => voters.list[index]!);
  return voters
    .round(
      (voter) => voter.raiseFence(lockKeys, value, tokens),
      (raised) => (raised ? 'yes' : 'no'),
      { voters: lagging, quorum: lagging.length },
    )
    .then((round) => (round.ok ? tokens : undefined));
}
