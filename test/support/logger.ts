/** A logger for engine modules (`EngineLogger`) that keeps what it is given, for tests to read. */
import type { EngineLogger } from '../../src/dispatch/engine/logger.ts';

export type LogEntry = { level: 'debug' | 'info' | 'warn' | 'error'; fields: Record<string, unknown>; msg: string };

/** A logger that keeps every entry, in order, in `entries`. */
export function recordingLogger(): EngineLogger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry['level']) => (fields: Record<string, unknown>, msg: string) => void entries.push({ level, fields, msg });
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
