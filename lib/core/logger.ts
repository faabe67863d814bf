/** The logging surface the engine needs. NestJS's `Logger` satisfies it; so does `console`. */
export interface RedlockLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Logger used when none is given: warnings and errors to stderr, info dropped. */
export const consoleLogger: RedlockLogger = {
  log: () => undefined,
  warn: (m) => console.warn(`[redlock] ${m}`),
  error: (m) => console.error(`[redlock] ${m}`),
};
