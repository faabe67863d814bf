export { FencedWriter } from './fenced-writer.js';
export type { FencedWriteResult, FencedReadResult } from './fenced-writer.js';
export type { FencedStoreClient } from './store-client.js';
