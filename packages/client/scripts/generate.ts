/**
 * Generates `packages/client/src/schema.ts`, the TypeScript types of the Chime API, from the OpenAPI 3.1 document
 * the app serves at `/openapi.json`. The app is built in process (test/support/app.ts `startTestApp`, an in-memory
 * PGlite, no sockets), so the types always follow the routes of this checkout.
 *
 * Run from the repository root after changing a route or a schema:
 *
 *     node --import tsx packages/client/scripts/generate.ts
 *
 * (or `npm run generate -w @chime/client`). test/client/generated.test.ts fails while the committed file differs
 * from what this script would write. The output depends only on the document (no dates, no versions), so it is
 * stable across runs and machines.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { startTestApp, TEST_APP_URL } from '../../../test/support/app.ts';

/** Where the types are written, relative to nothing: an absolute path. */
export const SCHEMA_FILE = fileURLToPath(new URL('../src/schema.ts', import.meta.url));

/** The command that regenerates SCHEMA_FILE, from the repository root. */
export const GENERATE_COMMAND = 'node --import tsx packages/client/scripts/generate.ts';

const HEADER = `/**
 * GENERATED FILE, do not edit: the types of the Chime HTTP API, made by openapi-typescript from the OpenAPI 3.1
 * document the service serves at /openapi.json (src/api/routes/*.ts, src/api/schemas.ts).
 *
 * Regenerate after changing a route or a schema, from the repository root:
 *
 *     ${GENERATE_COMMAND}
 *
 * test/client/generated.test.ts fails while this file is out of date.
 */

`;

/**
 * The OpenAPI document of the app of this checkout, built in process over an in-memory database.
 * @throws when the app does not answer 200
 */
export async function fetchOpenApiDocument(): Promise<OpenAPI3> {
  const app = await startTestApp();
  try {
    const res = await app.fetch(`${TEST_APP_URL}/openapi.json`);
    if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as OpenAPI3;
  } finally {
    await app.close();
  }
}

/**
 * The text of SCHEMA_FILE for `doc`: the header, then openapi-typescript's output (`paths`, `components`,
 * `operations`; no enums or runtime code, so it is a declaration file).
 */
export async function renderSchema(doc: OpenAPI3): Promise<string> {
  // The service's version is the only part of the document that changes without the API changing.
  const stable: OpenAPI3 = { ...doc, info: { ...doc.info, version: '1' } };
  const ast = await openapiTS(stable, { silent: true, alphabetize: false, defaultNonNullable: false });
  return `${HEADER + astToString(ast).trimEnd()}\n`;
}

/** The generated types of the app of this checkout. */
export async function generateSchema(): Promise<string> {
  return renderSchema(await fetchOpenApiDocument());
}

async function main(): Promise<void> {
  const text = await generateSchema();
  await writeFile(SCHEMA_FILE, text);
  process.stdout.write(`wrote ${SCHEMA_FILE} (${text.split('\n').length} lines)\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
