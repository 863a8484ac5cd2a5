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
