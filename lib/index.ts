/** Public API: everything importable from the package root. */
export * from './core/index.js';
export * from './fencing/index.js';
export * from './nest/index.js';
