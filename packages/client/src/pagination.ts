/** Cursor pagination of the API's lists (`?limit=&cursor=` → `{ <items>: [...], nextCursor }`, API.md "Lists"). */

/** One page of a list: its items, newest first, and the cursor of the next page (null on the last). */
export type Page<T> = { items: T[]; nextCursor: string | null };

/**
 * A list of the API, read lazily page by page: nothing is requested until it is iterated, and each iteration starts
 * again from the first page (or from the `cursor` the list was asked with).
 *
 * @example
 * for await (const job of client.jobs.list({ status: 'active' })) console.log(job.jobId); // every active job
 * for await (const page of client.jobs.list({ limit: 100 }).pages()) console.log(page.items.length, page.nextCursor);
 * const first20 = await client.runs.feed({ status: 'failed' }).toArray(20);
 *
 * Errors of any page request (a `ChimeError`) are thrown from the iteration.
 */
export class Paginator<T> implements AsyncIterable<T> {
  /**
   * @param fetchPage reads the page at `cursor` (undefined: the first page)
   * @param startCursor where iteration starts (the `cursor` of the query)
   */
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
    private readonly startCursor?: string,
  ) {}

  /** The pages, in order, until one has no `nextCursor`. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.startCursor;
    const seen = new Set<string>();
    for (;;) {
      const page = await this.fetchPage(cursor);
      yield page;
      if (page.nextCursor === null || page.nextCursor === undefined || page.items.length === 0) return;
      // A server must never hand out the same cursor twice; if one did, stop rather than loop forever.
      if (seen.has(page.nextCursor)) return;
      seen.add(page.nextCursor);
      cursor = page.nextCursor;
    }
  }

  /** Every item of every page, in order (`for await (const item of list)`). */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Only the first page (one request). */
  async firstPage(): Promise<Page<T>> {
    return this.fetchPage(this.startCursor);
  }

  /**
   * The items as an array, reading pages until `max` items or the end (no further page is requested once `max` is reached).
   * @param max most items (default: all of them)
   */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const page of this.pages()) {
      for (const item of page.items) {
        out.push(item);
        if (out.length >= max) return out;
      }
    }
    return out;
  }
}
