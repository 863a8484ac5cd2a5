/**
 * The envelope of the `chime node` JSON-lines protocol (docs/protocol.md, after the Maelstrom protocol:
 * https://github.com/jepsen-io/maelstrom/blob/main/doc/protocol.md): parsing one input line, building replies,
 * and the error codes. Pure functions, no I/O.
 */

/**
 * Maelstrom's error codes, as far as `chime node` uses them (Maelstrom "Errors" table).
 * - 10 not supported: a body `type` the node does not know;
 * - 12 malformed request: a line that is not JSON, a bad envelope, or a missing or invalid field;
 * - 13 crash: an unexpected failure inside the node while handling the message;
 * - 20 key does not exist: an unknown `job_id`.
 */
export const ERROR_CODE = Object.freeze({
  notSupported: 10,
  malformedRequest: 12,
  crash: 13,
  keyDoesNotExist: 20,
} as const);
export type ErrorCode = (typeof ERROR_CODE)[keyof typeof ERROR_CODE];

/** A message id as the sender wrote it (Maelstrom uses integers; any JSON number or string is echoed back). */
export type MsgId = number | string;

/** A message body: `type`, optionally `msg_id`, and the type's own fields. */
export type Body = { type: string; msg_id?: MsgId; [field: string]: unknown };

/** One protocol message: `{ src, dest, body }`; `src` and `dest` are node or client ids. */
export type Envelope = { src: string; dest: string; body: Body };

/**
 * A request that cannot be served, with the Maelstrom error code to answer it with.
 * Thrown by handlers and validators; the loop turns it into an `error` reply.
 */
export class ProtocolError extends Error {
  /**
   * @param code Maelstrom error code (see `ERROR_CODE`)
   * @param message the reply's `text`, for a human
   */
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** Shorthand for a code-12 (malformed request) `ProtocolError`. */
export function malformed(text: string): ProtocolError {
  return new ProtocolError(ERROR_CODE.malformedRequest, text);
}

/**
 * What could be read of a line that is not a well-formed message: enough, when `src` and `msg_id` are there,
 * to address an `error` reply to it.
 */
export type Salvage = { src?: string; dest?: string; msgId?: MsgId };

/** The outcome of `parseLine`: a message, or an error with whatever could be read of the line. */
export type ParsedLine = { ok: true; message: Envelope } | { ok: false; error: ProtocolError; salvage: Salvage };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isMsgId = (v: unknown): v is MsgId => (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'string';

/**
 * Parses one input line into an envelope. Never throws.
 * A line that is not JSON, or whose envelope is not `{ src: string, dest: string, body: { type: string, … } }`,
 * gives `{ ok: false }` with a code-12 error and the `src`, `dest` and `msg_id` that could still be read —
 * from the parsed object, or, for text that is not JSON (e.g. a truncated line), by pattern matching.
 * @param line one line of input, without its line break
 */
export function parseLine(line: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { ok: false, error: malformed(`line is not JSON: ${(err as Error).message}`), salvage: salvageText(line) };
  }
  if (!isObject(value)) return { ok: false, error: malformed('message must be a JSON object'), salvage: {} };
  const { src, dest, body } = value;
  const salvage: Salvage = {};
  if (typeof src === 'string') salvage.src = src;
  if (typeof dest === 'string') salvage.dest = dest;
  if (isObject(body) && isMsgId(body.msg_id)) salvage.msgId = body.msg_id;
  const fail = (text: string): ParsedLine => ({ ok: false, error: malformed(text), salvage });
  if (typeof src !== 'string') return fail('envelope field "src" must be a string');
  if (typeof dest !== 'string') return fail('envelope field "dest" must be a string');
  if (!isObject(body)) return fail('envelope field "body" must be an object');
  if (typeof body.type !== 'string' || body.type === '') return fail('body field "type" must be a non-empty string');
  if (body.msg_id !== undefined && !isMsgId(body.msg_id)) return fail('body field "msg_id" must be a number');
  return { ok: true, message: { src, dest, body: body as Body } };
}

/** Reads `src`, `dest` and `msg_id` out of text that is not JSON, by pattern; each only if it is unambiguous. */
function salvageText(line: string): Salvage {
  const one = (re: RegExp): string | undefined => {
    const all = [...line.matchAll(re)];
    return all.length === 1 ? all[0]![1] : undefined;
  };
  const str = (name: string): string | undefined => {
    const raw = one(new RegExp(`"${name}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")`, 'g'));
    if (raw === undefined) return undefined;
    try {
      return JSON.parse(raw) as string;
    } catch {
      return undefined;
    }
  };
  const salvage: Salvage = {};
  const src = str('src');
  const dest = str('dest');
  const msgId = one(/"msg_id"\s*:\s*(-?\d+)(?![\d.eE])/g);
  if (src !== undefined) salvage.src = src;
  if (dest !== undefined) salvage.dest = dest;
  if (msgId !== undefined && Number.isSafeInteger(Number(msgId))) salvage.msgId = Number(msgId);
  return salvage;
}

/**
 * A reply envelope: `src` is the answering node, `dest` the request's `src`, and the body carries
 * `in_reply_to` = the request's `msg_id` (left out when the request had none).
 * @param from the replying node's id
 * @param to the id to answer (the request's `src`)
 * @param inReplyTo the request's `msg_id`
 * @param body the reply's `type` and fields
 */
export function reply(from: string, to: string, inReplyTo: MsgId | undefined, body: { type: string; [field: string]: unknown }): Envelope {
  const { type, ...fields } = body;
  return {
    src: from,
    dest: to,
    body: inReplyTo === undefined ? { type, ...fields } : { type, in_reply_to: inReplyTo, ...fields },
  };
}

/**
 * An `error` reply: body `{ type: "error", in_reply_to, code, text }` (Maelstrom "Errors").
 * @param from the replying node's id
 * @param to the id to answer
 * @param inReplyTo the failed request's `msg_id`
 * @param error the code and text to send
 */
export function errorReply(from: string, to: string, inReplyTo: MsgId, error: ProtocolError): Envelope {
  return reply(from, to, inReplyTo, { type: 'error', code: error.code, text: error.message });
}

/** Serializes a message as one line of output, without the line break. */
export function formatLine(message: Envelope): string {
  return JSON.stringify(message);
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;
/** The range of a JavaScript Date, in epoch ms (ECMA-262 §21.4.1.1). */
const MAX_EPOCH_MS = 8.64e15;

/**
 * Reads a point in time as the protocol accepts it: an RFC 3339 string (`2026-11-22T10:00:00Z`, any offset,
 * optional fraction) or an integer number of UTC epoch milliseconds.
 * @param value the field's value
 * @param field the field's name, for the error text
 * @returns UTC epoch milliseconds
 * @throws ProtocolError code 12 for anything else (other string formats, fractions of a ms, out-of-range times)
 */
export function parseTime(value: unknown, field: string): number {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && Math.abs(value) <= MAX_EPOCH_MS) return value;
    throw malformed(`"${field}" must be an RFC 3339 time or an integer of epoch milliseconds, got ${value}`);
  }
  const m = typeof value === 'string' ? RFC3339.exec(value) : null;
  if (m) {
    const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
    // Date.parse rolls impossible dates over (Feb 30 → Mar 2) and takes hour 24; RFC 3339 allows neither.
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    const daysInMonth = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
    const offsetOk = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
    if (month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 59 && offsetOk) {
      const t = Date.parse((value as string).toUpperCase().replace(' ', 'T'));
      if (!Number.isNaN(t)) return t;
    }
  }
  throw malformed(`"${field}" must be an RFC 3339 time or an integer of epoch milliseconds, got ${JSON.stringify(value)}`);
}
