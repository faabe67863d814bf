/** Logger used when none is given: warnings and errors to stderr, info dropped. */
export const consoleLogger = {
    log: () => undefined,
    warn: (m) => console.warn(`[redlock] ${m}`),
    error: (m) => console.error(`[redlock] ${m}`),
};
//# sourceMappingURL=logger.js.map