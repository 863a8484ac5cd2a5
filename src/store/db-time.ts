/**
 * The database's clock, as seen from this host: leases, reaping and due times compare times that different hosts
 * write, so every Node process judges them on the one clock they all share, the database's (docs/design.md "One
 * clock"). The offset of this host's clock from the database's is measured as NTP does for one server (RFC 5905,
 * section 8), keeping the sample with the shortest round trip; of the offsets that sample allows (the server read its
 * clock somewhere between the send and the receive), the lowest is taken, so that this host's shifted clock is never
 * ahead of the database's: an error of at most the round trip, always late, never early.
 */
import { sql } from 'drizzle-orm';
import type { Clock } from '../domain/clock.ts';
import { type Db, query } from './db.ts';

/**
 * One measurement: the database's clock minus this host's (whole ms, at most the true offset and at most the round trip
 * below it), and the round trip it was measured in (ms).
 */
export type ClockOffset = { offsetMs: number; roundTripMs: number };

/** Samples per measurement: the one with the shortest round trip is kept. */
export const CLOCK_SAMPLES = 5;

/**
 * Measures the database's clock (`clock_timestamp()`, which moves within a transaction, unlike `now()`) against
 * `local` (this host's clock, unshifted), `samples` times.
 * @returns the sample with the shortest round trip @throws the driver's error
 */
export async function measureClockOffset(db: Db, local: Clock, samples = CLOCK_SAMPLES): Promise<ClockOffset> {
  let best: ClockOffset | null = null;
  for (let i = 0; i < samples; i++) {
    const sent = local.now();
    const [row] = await query<{ ms: number | string }>(db, sql`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`);
    const received = local.now();
    // The low end of what the sample allows (the database read its clock somewhere within the round trip), in whole
    // ms (times are epoch ms integers everywhere): a clock that errs may only err late, so nothing fires early.
    const sample = { offsetMs: Math.floor(Number(row!.ms) - received), roundTripMs: received - sent };
    if (!best || sample.roundTripMs < best.roundTripMs) best = sample;
  }
  return best!;
}
