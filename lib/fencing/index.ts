export { FencedWriter } from './fenced-writer.js';
export type { FencedWriteResult, FencedReadResult } from './fenced-writer.js';
