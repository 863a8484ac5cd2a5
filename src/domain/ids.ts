/** Identifiers: UUID v7 (RFC 9562 §5.7, via the `uuid` package), so ids sort by creation time. */
import { v7 } from 'uuid';

/** Random bytes drawn from `crypto.getRandomValues` at a time: 256 ids' worth. */
const RANDOM_POOL_BYTES = 16 * 256;

/**
 * Makes UUID v7s as `uuid`'s `v7()` does (the Unix time in ms, then a 32-bit counter seeded at random each new
 * millisecond and incremented within one, RFC 9562 §6.2 method 1, so ids made in this process sort in the order they
 * were made), but with its random bytes cut from a pool. `v7()` calls `crypto.getRandomValues` for every id, a
 * noticeable part of a batch registration, which needs two ids per job. Node's own `randomUUID` pools its entropy the
 * same way.
 */
export class IdGenerator {
  private pool = new Uint8Array(0);
  private offset = 0;
  private msecs = -Infinity;
  private seq = 0;

  /** @param now the clock, epoch ms (default Date.now) */
  constructor(private readonly now: () => number = Date.now) {}

  /** A new UUID v7 (lower-case hex with dashes). */
  next(): string {
    if (this.offset + 16 > this.pool.length) {
      this.pool = crypto.getRandomValues(new Uint8Array(RANDOM_POOL_BYTES));
      this.offset = 0;
    }
    const random = this.pool.subarray(this.offset, (this.offset += 16));
    const now = this.now();
    if (now > this.msecs) {
      // The counter's seed, taken from the same bytes `uuid` takes it from.
      this.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
      this.msecs = now;
    } else {
      this.seq = (this.seq + 1) | 0;
      // The counter wrapped: borrow the next millisecond rather than repeat (as `uuid` does).
      if (this.seq === 0) this.msecs++;
    }
    return v7({ random, msecs: this.msecs, seq: this.seq });
  }
}

const ids = new IdGenerator();

/** A new UUID v7: increasing within this process, by creation time across processes. */
export function newId(): string {
  return ids.next();
}

/** True for a syntactically valid UUID (any version); used to answer 404 rather than a SQL error. */
export function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}

/**
 * The smallest UUID v7 of millisecond `ms` (epoch ms): every v7 id made before `ms` sorts below it (RFC 9562 §5.7:
 * the first 48 bits are the Unix time in ms, big-endian), so `id < uuidV7LowerBound(t)` selects rows created before t
 * on the primary key's index alone.
 */
export function uuidV7LowerBound(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0').slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}
