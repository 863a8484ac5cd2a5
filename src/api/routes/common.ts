/** Pieces shared by the route modules. */
import { PROBLEMS } from '../problems.ts';
import { ProblemSchema } from '../schemas.ts';

/** OpenAPI `responses` entries for the given problem statuses. */
export function problemResponses(...statuses: number[]) {
  const out: Record<number, { description: string; content: { 'application/problem+json': { schema: typeof ProblemSchema } } }> = {};
  for (const s of statuses) {
    const title = Object.values(PROBLEMS).find((p) => p.status === s)?.title ?? 'Error';
    out[s] = { description: title, content: { 'application/problem+json': { schema: ProblemSchema } } };
  }
  return out;
}

/** True for PostgreSQL's unique_violation (SQLSTATE 23505), from either driver (drizzle may wrap it in `cause`). */
export function isUniqueViolation(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.code === '23505') return true;
  }
  return false;
}
