/**
 * The committed types of @chime/client (packages/client/src/schema.ts) are what the generator makes from the
 * OpenAPI document of the app of this checkout: a route or schema changed without regenerating fails here.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { GENERATE_COMMAND, generateSchema, SCHEMA_FILE } from '../../packages/client/scripts/generate.ts';

describe('@chime/client generated types', () => {
  let fresh: string;

  it('match the OpenAPI document the app serves now', async () => {
    let committed: string;
    [fresh, committed] = await Promise.all([generateSchema(), readFile(SCHEMA_FILE, 'utf8').catch(() => '')]);
    expect(
      committed,
      `packages/client/src/schema.ts is out of date with /openapi.json: run \`${GENERATE_COMMAND}\` from the repository root`,
    ).toBe(fresh);
  });

  it('are deterministic: another app, generated again, gives the same text', async () => {
    expect(await generateSchema()).toBe(fresh ?? (await generateSchema()));
  });

  it('say they are generated and how to regenerate them', async () => {
    const text = await readFile(SCHEMA_FILE, 'utf8');
    expect(text.slice(0, 600)).toContain('GENERATED FILE');
    expect(text.slice(0, 600)).toContain(GENERATE_COMMAND);
  });
});
