/** The logging the engine needs: pino's `Logger` (Node) and the Worker's JSON logger both fit. */
export type EngineLogger = Record<'debug' | 'info' | 'warn' | 'error', (fields: Record<string, unknown>, msg: string) => void>;
