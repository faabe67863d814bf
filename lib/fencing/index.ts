export { FencedWriter } from './fenced-writer.js';
export type { FencedWriteResult } from './fenced-writer.js';
