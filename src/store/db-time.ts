/**
 * The database's clock, as seen from this host: leases, reaping and due times compare times that different hosts
 * write, so every Node process judges them on the one clock they all share, the database's (docs/design.md "One
 * clock"). The offset of this host's clock from the database's is measured as NTP does for one server (RFC 5905,
 * section 8: the offset is the server's time minus the midpoint of the request's send and receive times), keeping the
 * sample with the shortest round trip, whose error is at most half that round trip.
 */
import { sql } from 'drizzle-orm';
import type { Clock } from '../domain/clock.ts';
import { type Db, query } from './db.ts';

/** One measurement: the database's clock minus this host's (whole ms), and the round trip it was measured in (ms). */
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
    // Whole ms: times are epoch ms integers everywhere (a fraction would not fit a bigint column).
    const sample = { offsetMs: Math.round(Number(row!.ms) - (sent + received) / 2), roundTripMs: received - sent };
    if (!best || sample.roundTripMs < best.roundTripMs) best = sample;
  }
  return best!;
}
