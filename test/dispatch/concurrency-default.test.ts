/**
 * The dispatcher's concurrency default depends on the database (src/config.ts, EMBEDDED_DISPATCH_CONCURRENCY): 256 on
 * PostgreSQL, 64 on the embedded database, whose queries run on the process's own event loop; a set
 * CHIME_DISPATCH_CONCURRENCY wins on either.
 */
import { describe, expect, it } from 'vitest';
import { EMBEDDED_DISPATCH_CONCURRENCY, loadConfig } from '../../src/config.ts';
import { DISPATCHER_DEFAULTS } from '../../src/dispatch/defaults.ts';

const KEY = Buffer.alloc(32, 7).toString('base64');
const POSTGRES = { DATABASE_URL: 'postgres://chime@db.internal/chime', CHIME_ENCRYPTION_KEY: KEY };

describe('CHIME_DISPATCH_CONCURRENCY', () => {
  it('defaults to 256 on PostgreSQL and 64 on the embedded database', () => {
    expect(loadConfig(POSTGRES).dispatch.concurrency).toBe(256);
    expect(DISPATCHER_DEFAULTS.concurrency).toBe(256);
    expect(loadConfig({}).dispatch.concurrency).toBe(EMBEDDED_DISPATCH_CONCURRENCY);
    expect(EMBEDDED_DISPATCH_CONCURRENCY).toBe(64);
  });

  it('is what the operator sets, on either database', () => {
    expect(loadConfig({ ...POSTGRES, CHIME_DISPATCH_CONCURRENCY: '32' }).dispatch.concurrency).toBe(32);
    expect(loadConfig({ CHIME_DISPATCH_CONCURRENCY: '512' }).dispatch.concurrency).toBe(512);
    expect(() => loadConfig({ CHIME_DISPATCH_CONCURRENCY: '0' })).toThrow(/CHIME_DISPATCH_CONCURRENCY/);
  });
});
