/**
 * One answer naming every bad field of a request (API.md "Conventions"). zod-openapi validates a request's parts one
 * after the other (query, path, headers, then the JSON body), and the app's default hook answers the first part that
 * fails with that part's schema errors only. A route whose body has rules beyond its schema (a job's schedule must
 * fire, its callback must be allowed), or whose path or headers may fail beside its body, takes this hook instead.
 */
import type { Hook, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { AppEnv } from './env.ts';
import { type FieldError, schemaFieldErrors, validationError } from './problems.ts';

/** The body's problems beyond its schema, in the parts of it that pass their own schemas. */
export type BodyRules = (raw: unknown, c: Context<AppEnv>) => Promise<FieldError[]>;

/**
 * @param bodySchema the route's JSON body schema
 * @param bodyRules the body's problems beyond `bodySchema`, given the body as sent (anything)
 * @returns a hook that, when any part of the request fails its schema, throws one ApiError `validation` naming the
 *   bad fields of that part and every problem of the body (schema and rules); a request whose parts all pass goes
 *   on to the handler, which applies the rules itself
 */
// Generic in the route's input, path and responses (inferred where the hook is passed), none of which it reads.
export function everyFieldHook<I, P extends string, R>(bodySchema: z.ZodType, bodyRules: BodyRules): Hook<I, AppEnv, P, R> {
  const hook = async (result: Parameters<Hook<I, AppEnv, P, R>>[0], c: Context<AppEnv, P>): Promise<undefined> => {
    if (result.success) return undefined;
    const errors = schemaFieldErrors(result.error.issues);
    // Hono caches the parsed body (the JSON guard read it before): no second parse. Malformed or absent: nothing to add.
    const raw: unknown = await c.req.json().catch(() => undefined);
    if (result.target !== 'json') {
      if (raw === undefined) throw validationError(errors);
      const body = bodySchema.safeParse(raw);
      if (!body.success) errors.push(...schemaFieldErrors(body.error.issues));
    }
    throw validationError([...errors, ...(await bodyRules(raw, c))]);
  };
  // zod-validator awaits the hook; Hook's type has no room for a promise.
  return hook as unknown as Hook<I, AppEnv, P, R>;
}
