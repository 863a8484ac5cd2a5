/**
 * `chime node`: the JSON-lines node protocol (docs/protocol.md; Maelstrom-style,
 * https://github.com/jepsen-io/maelstrom/blob/main/doc/protocol.md) over standard input and output.
 */
import { createInterface } from 'node:readline';
import type { Clock } from '../domain/clock.ts';
import { ChimeNode } from './node.ts';

export { ChimeNode, type ChimeNodeOptions } from './node.ts';
export { type Envelope, ERROR_CODE } from './protocol.ts';
export { type NodeJob, type RetrySettings, type RunResult, Scheduler } from './scheduler.ts';

/** The streams and collaborators of `runNodeProtocol`. */
export type NodeProtocolOptions = {
  /** JSON messages, one a line (UTF-8; `\n` or `\r\n`). */
  input: NodeJS.ReadableStream;
  /** Replies, one JSON line each, written as soon as the message is handled; nothing else is ever written here. */
  output: NodeJS.WritableStream;
  /** Log lines for humans (stderr in the CLI). */
  log: NodeJS.WritableStream;
  /** The wall clock, until a message carries `current_time`; default the system clock (for tests). */
  clock?: Clock;
  /** Job id generator; default UUID v7 (for tests). */
  newId?: () => string;
};

/**
 * Serves the node protocol: reads `input` line by line, handles each message in order and writes its reply (if
 * any) to `output` at once, as one line. Malformed lines and failing messages get `error` replies (or a log line
 * when they cannot be addressed) and the node carries on. Honors back-pressure: when `output` is full, reading
 * waits for it to drain. `output` is not ended.
 * @returns a promise that resolves when `input` ends (or `output` fails, e.g. EPIPE, which is logged); it does
 *   not reject
 */
export async function runNodeProtocol(opts: NodeProtocolOptions): Promise<void> {
  const { input, output, log } = opts;
  const logLine = (text: string): void => {
    log.write(`chime node: ${text}\n`);
  };
  const node = new ChimeNode({
    log: logLine,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.newId ? { newId: opts.newId } : {}),
  });
  const lines = createInterface({ input, crlfDelay: Infinity, terminal: false });
  let outputFailed = false;
  const onOutputError = (err: Error): void => {
    outputFailed = true;
    logLine(`output failed, stopping: ${err.message}`);
    lines.close();
  };
  output.on('error', onOutputError);
  let received = 0;
  let replied = 0;
  logLine('ready');
  try {
    for await (const line of lines) {
      received++;
      const out = node.handleLine(line);
      if (out === null || outputFailed) continue;
      replied++;
      if (!output.write(`${out}\n`)) await drainOrError(output);
    }
  } finally {
    logLine(`input ended after ${received} lines, ${replied} replies, ${node.scheduler.size} jobs`);
  }
}

/** Resolves on the stream's next 'drain' or 'error' (errors are handled by the caller's own listener). */
function drainOrError(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('error', done);
  });
}
