/** Identifiers: UUID v7 (RFC 9562 §5.7, via the `uuid` package), so ids sort by creation time. */
import { v7 } from 'uuid';

/** A new UUID v7. */
export function newId(): string {
  return v7();
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
