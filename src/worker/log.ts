/**
 * A tiny structured logger for the Worker (pino is Node-only): one JSON object per line through `console`, which
 * Workers Logs and `wrangler tail` collect. Levels and names as pino's, so CHIME_LOG_LEVEL means the same thing.
 */

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Logs `msg` with structured fields at a level. */
export type WorkerLogger = Record<LogLevel, (fields: Record<string, unknown>, msg: string) => void>;

/** Where lines go; default `console`. */
export type LogSink = Pick<Console, 'log' | 'warn' | 'error'>;

/**
 * A logger that drops lines below `level` (`silent` drops all). Errors in fields are written as
 * `{ name, message, stack }`, as pino's `err` serializer does.
 */
export function createWorkerLogger(level: string, base: Record<string, unknown> = {}, sink: LogSink = console): WorkerLogger {
  const min = level === 'silent' ? Infinity : Math.max(0, LOG_LEVELS.indexOf(level as LogLevel));
  const make = (l: LogLevel) => {
    const rank = LOG_LEVELS.indexOf(l);
    const out = rank >= 4 ? sink.error : rank === 3 ? sink.warn : sink.log;
    return (fields: Record<string, unknown>, msg: string) => {
      if (rank < min) return;
      out.call(sink, JSON.stringify({ level: l, time: Date.now(), ...base, ...serialize(fields), msg }));
    };
  };
  return Object.fromEntries(LOG_LEVELS.map((l) => [l, make(l)])) as WorkerLogger;
}

function serialize(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    out[k] = v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v;
  }
  return out;
}
