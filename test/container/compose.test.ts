/**
 * compose.yaml, read as Compose reads it (YAML with merge keys): PostgreSQL 15 on a named volume, `chime migrate` once
 * it is healthy, then the API on port 8080 and a dispatcher once the migration completed, with the secrets required
 * from the environment. The stack itself is not started here (postgres:15 cannot be pulled on these machines): the
 * image test (image.test.ts) runs the same sequence, migrate then API and dispatcher, against the machine's PostgreSQL.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const compose = parse(readFileSync(new URL('../../compose.yaml', import.meta.url), 'utf8'), { merge: true });
const services = compose.services;

/**
 * A value as Compose interpolates it from `env`: `${NAME}`, `${NAME:-default}` (default when unset or empty) and
 * `${NAME:?message}` (an error with the message when unset or empty).
 * @throws Error with the message of the first required variable `env` lacks
 */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op: string | undefined, arg: string) => {
    if (env[name]) return env[name];
    if (op === '?') throw new Error(`${name}: ${arg}`);
    return op === '-' ? arg : '';
  });
}
/** The secrets an operator puts in .env. */
const DOT_ENV = { CHIME_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'), CHIME_ADMIN_TOKEN: 'a-token-of-at-least-16-chars' };

describe('compose.yaml', () => {
  it('has PostgreSQL 15 with its data on a named volume, healthy once it accepts connections', () => {
    const pg = services.postgres;
    expect(pg.image).toBe('postgres:15');
    const [volume] = pg.volumes[0].split(':');
    expect(Object.keys(compose.volumes)).toContain(volume);
    expect(pg.volumes[0]).toBe(`${volume}:/var/lib/postgresql/data`);
    expect(pg.healthcheck.test).toContain('pg_isready');
    // Not published: only the Chime services reach it, on the compose network.
    expect(pg.ports).toBeUndefined();
  });

  it('migrates once, after PostgreSQL is healthy, then starts the API and a dispatcher after the migration succeeded', () => {
    expect(services.migrate.command).toEqual(['migrate']);
    expect(services.migrate.restart).toBe('no');
    expect(services.migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(services.api.command).toEqual(['serve', '--role', 'api']);
    expect(services.api.ports).toEqual(['8080:8080']);
    expect(services.dispatcher.command).toEqual(['serve', '--role', 'dispatcher']);
    // No port: `--scale dispatcher=N` adds dispatchers.
    expect(services.dispatcher.ports).toBeUndefined();
    for (const name of ['api', 'dispatcher']) {
      expect(services[name].depends_on, name).toEqual({ migrate: { condition: 'service_completed_successfully' } });
      expect(services[name].restart, name).toBe('unless-stopped');
    }
    expect(Object.keys(services).sort()).toEqual(['api', 'dispatcher', 'migrate', 'postgres']);
  });

  it('builds one image from the Dockerfile for every Chime service, each on the same PostgreSQL', () => {
    for (const name of ['migrate', 'api', 'dispatcher']) {
      const s = services[name];
      expect(s.build, name).toBe('.');
      expect(s.image, name).toBe('chime');
      // The user, password and database PostgreSQL was given, by default and with POSTGRES_PASSWORD set.
      for (const env of [DOT_ENV, { ...DOT_ENV, POSTGRES_PASSWORD: 's3cret' }]) {
        const pg = services.postgres.environment;
        const userinfo = `${interpolate(pg.POSTGRES_USER, env)}:${interpolate(pg.POSTGRES_PASSWORD, env)}`;
        expect(interpolate(s.environment.DATABASE_URL, env), name).toBe(`postgres://${userinfo}@postgres:5432/${pg.POSTGRES_DB}`);
      }
      // Enough for the dispatcher's drain (CHIME_SHUTDOWN_GRACE_MS, 10 s) before Compose's SIGKILL.
      expect(s.stop_grace_period, name).toBe('15s');
    }
  });

  it('requires the secrets from the environment or .env, saying how to make them, and gives the admin token to the API only', () => {
    for (const name of ['migrate', 'api', 'dispatcher']) {
      const key = services[name].environment.CHIME_ENCRYPTION_KEY;
      expect(interpolate(key, DOT_ENV), name).toBe(DOT_ENV.CHIME_ENCRYPTION_KEY);
      expect(() => interpolate(key, {}), name).toThrow(/CHIME_ENCRYPTION_KEY: .*openssl rand -base64 32/);
    }
    expect(interpolate(services.api.environment.CHIME_ADMIN_TOKEN, DOT_ENV)).toBe(DOT_ENV.CHIME_ADMIN_TOKEN);
    expect(() => interpolate(services.api.environment.CHIME_ADMIN_TOKEN, {})).toThrow(/CHIME_ADMIN_TOKEN: .*16 characters/);
    expect(services.dispatcher.environment.CHIME_ADMIN_TOKEN).toBeUndefined();
    expect(services.migrate.environment.CHIME_ADMIN_TOKEN).toBeUndefined();
  });
});
