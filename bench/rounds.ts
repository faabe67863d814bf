/**
 * Runs every contestant's slice of a benchmark in turn, `rounds` times, rotating who goes first,
 * so that load from other processes on a shared machine is spread over all contestants instead of
 * landing on whichever ran during it.
 */
export async function interleave<T>(
  contestants: readonly T[],
  rounds: number,
  slice: (contestant: T, round: number) => Promise<void>,
): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < contestants.length; k++) {
      await slice(contestants[(round + k) % contestants.length]!, round);
    }
  }
}
