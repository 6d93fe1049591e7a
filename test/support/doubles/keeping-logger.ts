// A pino-shaped logger for tests: keeps its lines, and tells when a line of interest arrives.
import type { Logger } from '../../../src/common/logger.js';

export type LogLine = readonly [
  level: 'debug' | 'info' | 'warn' | 'error',
  fields: object,
  message: string,
];

export interface KeepingLogger extends Logger {
  readonly lines: LogLine[];
  /** Resolves with the `count`-th line (counting the ones kept already) that `matches`. */
  when(matches: (line: LogLine) => boolean, count?: number): Promise<LogLine>;
}

export function keepingLogger(): KeepingLogger {
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  const at =
    (level: LogLine[0]) =>
    (fields: object, message: string): void => {
      lines.push([level, fields, message]);
      for (const wake of [...waiters]) wake();
    };
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    when: (matches, count = 1) =>
      new Promise((resolve) => {
        const check = (): void => {
          const found = lines.filter(matches)[count - 1];
          if (found === undefined) return;
          waiters.delete(check);
          resolve(found);
        };
        waiters.add(check);
        check();
      }),
  };
}
