/**
 * `nest-quorum-lock/terminus`: a health indicator for @nestjs/terminus (an optional peer, 11 or
 * 12). Kept out of the main entry so apps without Terminus never load it.
 */
export { RedlockHealthIndicator } from './redlock-health.indicator.js';
export type {
  RedlockHealthDetails,
  RedlockNodeHealth,
  RedlockNodeState,
} from './redlock-health.indicator.js';
export { RedlockHealthModule } from './redlock-health.module.js';
