/**
 * The message handlers of `chime node` (docs/protocol.md "Messages"): one input line in, at most one reply line out.
 * No I/O besides the `log` callback; `index.ts` connects it to stdin and stdout.
 */
import type { Clock } from '../domain/clock.ts';
import { toIso } from '../domain/clock.ts';
import { MAX_ATTEMPTS_LIMIT } from '../domain/retry.ts';
import { LogicalClock } from './logical-clock.ts';
import {
  type Body,
  type Envelope,
  ERROR_CODE,
  errorReply,
  formatLine,
  type MsgId,
  malformed,
  ProtocolError,
  parseLine,
  parseTime,
  reply,
} from './protocol.ts';
import { InvalidJobError, type JobSpec, type NodeJob, type RetrySettings, Scheduler, UnknownJobError } from './scheduler.ts';

/** A reply body without `in_reply_to` (added by the node). */
type ReplyBody = { type: string; [field: string]: unknown };

/** Options of a `ChimeNode`. */
export type ChimeNodeOptions = {
  /** The wall clock, followed until a message carries `current_time`; default the system clock. */
  clock?: Clock;
  /** Job id generator; default UUID v7. */
  newId?: () => string;
  /** Receives one log line at a time (no line break); never stdout. Default: discard. */
  log?: (line: string) => void;
};

/** The `src` of an error reply to a line whose `dest` cannot be read, before `init`. */
const FALLBACK_NODE_ID = 'chime';

/**
 * One protocol node: its logical clock and its job table. A reply swaps the message's `src` and `dest`, so the
 * node answers as whatever it was addressed as, with or without `init` (`init` only records `node_id`).
 *
 * Every message may carry `current_time` (RFC 3339 or epoch ms); it sets the logical clock before the message is
 * handled. Errors are answered with `error` replies (code 10 unknown type, 12 malformed or invalid field,
 * 13 crash, 20 unknown job id) when the message's `src` and `msg_id` can be read, and only logged otherwise;
 * the node keeps serving either way.
 */
export class ChimeNode {
  /** The id given by `init`, if any. */
  nodeId: string | undefined;
  /** The cluster's node ids given by `init`. */
  nodeIds: string[] = [];
  /** The node's time. */
  readonly clock: LogicalClock;
  /** The job table. */
  readonly scheduler: Scheduler;
  private readonly log: (line: string) => void;
  private readonly handlers: Record<string, (body: Body) => ReplyBody>;

  constructor(opts: ChimeNodeOptions = {}) {
    this.clock = new LogicalClock(opts.clock);
    this.scheduler = new Scheduler(this.clock, opts.newId);
    this.log = opts.log ?? (() => {});
    this.handlers = {
      init: (b) => this.init(b),
      schedule_job: (b) => this.scheduleJob(b),
      execute_jobs: () => this.executeJobs(),
      execute_job: (b) => this.executeJob(b),
    };
  }

  /**
   * Handles one input line.
   * @param line a line of input without its line break; blank lines are ignored
   * @returns the reply as one JSON line (no line break), or null when there is nothing to send
   */
  handleLine(line: string): string | null {
    if (line.trim() === '') return null;
    const parsed = parseLine(line);
    const out = parsed.ok
      ? this.handle(parsed.message)
      : this.failure(parsed.salvage.src, parsed.salvage.dest, parsed.salvage.msgId, parsed.error, line);
    return out && formatLine(out);
  }

  /**
   * Handles one message.
   * @returns the reply, or null when an error cannot be addressed (no `msg_id`)
   */
  handle(message: Envelope): Envelope | null {
    const { src, dest, body } = message;
    try {
      if (body.current_time !== undefined) this.clock.set(parseTime(body.current_time, 'current_time'));
      const handler = Object.hasOwn(this.handlers, body.type) ? this.handlers[body.type] : undefined;
      if (!handler) throw new ProtocolError(ERROR_CODE.notSupported, `unsupported message type ${JSON.stringify(body.type)}`);
      return reply(dest, src, body.msg_id, handler(body));
    } catch (err) {
      return this.failure(src, dest, body.msg_id, toProtocolError(err, this.log), undefined);
    }
  }

  /** The error reply to a failed message, or null (and a log line) when it cannot be addressed. */
  private failure(
    src: string | undefined,
    dest: string | undefined,
    msgId: MsgId | undefined,
    error: ProtocolError,
    line: string | undefined,
  ): Envelope | null {
    const what = line === undefined ? '' : `: ${line.length > 200 ? `${line.slice(0, 200)}…` : line}`;
    if (src === undefined || msgId === undefined) {
      this.log(`error ${error.code} (${error.message}), not answered: no ${src === undefined ? 'src' : 'msg_id'}${what}`);
      return null;
    }
    this.log(`error ${error.code} to ${src} msg ${msgId}: ${error.message}`);
    return errorReply(dest ?? this.nodeId ?? FALLBACK_NODE_ID, src, msgId, error);
  }

  /** `init { node_id, node_ids }` → `init_ok`. */
  private init(b: Body): ReplyBody {
    const nodeId = b.node_id;
    if (typeof nodeId !== 'string' || nodeId === '') throw malformed('"node_id" must be a non-empty string');
    const nodeIds = b.node_ids ?? [];
    if (!Array.isArray(nodeIds) || !nodeIds.every((n) => typeof n === 'string')) throw malformed('"node_ids" must be an array of strings');
    this.nodeId = nodeId;
    this.nodeIds = nodeIds as string[];
    this.log(`initialized as ${nodeId} of [${this.nodeIds.join(', ')}]`);
    return { type: 'init_ok' };
  }

  /**
   * `schedule_job { task, payload?, delay_ms | cron, retry? }` → `job_scheduled { job_id, scheduled_at }` for a
   * one-time job, `job_scheduled { job_id, next_run }` for a cron job. A field given as null counts as absent;
   * `payload` defaults to null. Errors (code 12): task not a non-empty string, both or neither of delay_ms and
   * cron, delay_ms not a non-negative integer, a cron expression the domain refuses, retry out of range.
   */
  private scheduleJob(b: Body): ReplyBody {
    if (typeof b.task !== 'string' || b.task === '') throw malformed('"task" must be a non-empty string');
    const delay = b.delay_ms ?? undefined;
    const cron = b.cron ?? undefined;
    if (delay !== undefined && cron !== undefined) throw malformed('give either "delay_ms" or "cron", not both');
    if (delay === undefined && cron === undefined) throw malformed('give one of "delay_ms" (a one-time job) or "cron" (a recurring job)');
    const retry = readRetry(b.retry);
    const common = { task: b.task, payload: b.payload ?? null, ...(retry ? { retry } : {}) };
    let spec: JobSpec;
    if (delay !== undefined) {
      if (typeof delay !== 'number' || !Number.isSafeInteger(delay) || delay < 0) {
        throw malformed(`"delay_ms" must be a non-negative integer of milliseconds, got ${JSON.stringify(delay)}`);
      }
      spec = { ...common, delayMs: delay };
    } else {
      if (typeof cron !== 'string' || cron.trim() === '') throw malformed('"cron" must be a 5-field cron expression');
      spec = { ...common, cron };
    }
    let job: NodeJob;
    try {
      job = this.scheduler.schedule(spec);
    } catch (err) {
      if (err instanceof InvalidJobError) {
        throw malformed(
          `invalid ${spec.cron !== undefined ? `cron ${JSON.stringify(spec.cron)}` : '"delay_ms"'}: ${err.issues.map((i) => i.message).join('; ')}`,
        );
      }
      throw err;
    }
    return job.kind === 'cron'
      ? { type: 'job_scheduled', job_id: job.id, next_run: toIso(job.dueAt!) }
      : { type: 'job_scheduled', job_id: job.id, scheduled_at: toIso(job.dueAt!) };
  }

  /** `execute_jobs { current_time? }` → `jobs_executed { count, jobs }` (current_time is applied by `handle`). */
  private executeJobs(): ReplyBody {
    const jobs = this.scheduler.runDue();
    return { type: 'jobs_executed', count: jobs.length, jobs };
  }

  /** `execute_job { job_id, force_fail? }` → `job_executed { job_id }` or `job_failed { job_id, retry_scheduled, backoff_ms }`. */
  private executeJob(b: Body): ReplyBody {
    const jobId = b.job_id;
    if (typeof jobId !== 'string' || jobId === '') throw malformed('"job_id" must be a non-empty string');
    const forceFail = b.force_fail ?? false;
    if (typeof forceFail !== 'boolean') throw malformed('"force_fail" must be a boolean');
    const result = this.scheduler.run(jobId, { fail: forceFail });
    return result.ok
      ? { type: 'job_executed', job_id: jobId }
      : { type: 'job_failed', job_id: jobId, retry_scheduled: result.retryScheduled, backoff_ms: result.backoffMs };
  }
}

/** Reads `retry: { base_ms?, max_attempts? }`; undefined when absent. @throws ProtocolError code 12 */
function readRetry(value: unknown): Partial<RetrySettings> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw malformed('"retry" must be an object { base_ms, max_attempts }');
  const { base_ms: baseMs, max_attempts: maxAttempts } = value as Record<string, unknown>;
  const out: Partial<RetrySettings> = {};
  if (baseMs !== undefined) {
    if (typeof baseMs !== 'number' || !Number.isSafeInteger(baseMs) || baseMs < 1)
      throw malformed(`"retry.base_ms" must be a positive integer, got ${JSON.stringify(baseMs)}`);
    out.baseMs = baseMs;
  }
  if (maxAttempts !== undefined) {
    if (typeof maxAttempts !== 'number' || !Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
      throw malformed(`"retry.max_attempts" must be an integer in 1…${MAX_ATTEMPTS_LIMIT}, got ${JSON.stringify(maxAttempts)}`);
    }
    out.maxAttempts = maxAttempts;
  }
  return out;
}

/** Maps a thrown value to the error to answer with: known errors to their codes, anything else to 13 crash. */
function toProtocolError(err: unknown, log: (line: string) => void): ProtocolError {
  if (err instanceof ProtocolError) return err;
  if (err instanceof UnknownJobError) return new ProtocolError(ERROR_CODE.keyDoesNotExist, err.message);
  if (err instanceof InvalidJobError) return malformed(err.message);
  log(`crash: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return new ProtocolError(ERROR_CODE.crash, `internal error: ${err instanceof Error ? err.message : String(err)}`);
}
