export { FencedWriter } from './fenced-writer.js';
//# sourceMappingURL=index.js.map