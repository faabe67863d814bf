import { optionalPeer } from './optional-peer.js';
import type { LockErrorPayload } from './payload.js';

// `graphql`, not `@nestjs/graphql`: GraphQLError lives there, and @nestjs/graphql requires it.
const graphql = optionalPeer(() => import('graphql'));

/**
 * A `GraphQLError` with `extensions.code` (and `extensions.retryAfterMs` when known). Nest rethrows
 * errors in the GraphQL context to the executor, which copies `extensions` into the located error
 * that lands in the response's `errors` array.
 */
export async function toGraphQLError(payload: LockErrorPayload, cause: Error): Promise<Error> {
  const { GraphQLError } = await graphql();
  const { message, ...extensions } = payload;
  return new GraphQLError(message, { extensions, originalError: cause });
}
