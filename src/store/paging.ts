/** Keyset paging of the API's lists (API.md "Pagination"): newest first by UUID v7 id, `?cursor=` the last id shown. */

/**
 * Splits `limit + 1` rows (read newest first) into a page of `limit` and the cursor of the next page: the last id
 * shown, or null when the rows held no more.
 */
export function page<T extends { id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.id : null };
}
