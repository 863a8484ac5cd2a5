/**
 * `chime_database_up` and `chime_due_backlog` (src/dispatch/metrics.ts `registerDueBacklog`): the database-unreachable
 * alert (deploy/prometheus/chime-alerts.yml) reads the gauge, so it must be 1 only when the backlog read answered, 0
 * when it failed or hung past the timeout, and both gauges must come from one read per scrape.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerDueBacklog } from '../../src/dispatch/metrics.ts';

/** The value of the unlabelled sample `name` in a Prometheus text exposition. */
function sample(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in:\n${text}`);
  return Number(m[1]);
}

describe('chime_database_up', () => {
  it('is 1 with the backlog when the read answers, one read per scrape', async () => {
    const registry = new Registry();
    let reads = 0;
    registerDueBacklog(registry, async () => {
      reads++;
      return 42;
    });
    const text = await registry.metrics();
    expect(sample(text, 'chime_due_backlog')).toBe(42);
    expect(sample(text, 'chime_database_up')).toBe(1);
    expect(reads).toBe(1);
    await registry.metrics();
    expect(reads).toBe(2);
  });

  it('is 0, with a backlog of -1, when the read fails', async () => {
    const registry = new Registry();
    registerDueBacklog(registry, () => Promise.reject(new Error('connect ECONNREFUSED')));
    const text = await registry.metrics();
    expect(sample(text, 'chime_due_backlog')).toBe(-1);
    expect(sample(text, 'chime_database_up')).toBe(0);
  });

  it('is 0 when the read hangs past the timeout, and the scrape still answers', async () => {
    const registry = new Registry();
    registerDueBacklog(registry, () => new Promise<number>(() => {}), 50);
    const started = Date.now();
    const text = await registry.metrics();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(sample(text, 'chime_due_backlog')).toBe(-1);
    expect(sample(text, 'chime_database_up')).toBe(0);
  });

  it('comes back to 1 once the database answers again', async () => {
    const registry = new Registry();
    let down = true;
    registerDueBacklog(registry, async () => {
      if (down) throw new Error('down');
      return 0;
    });
    expect(sample(await registry.metrics(), 'chime_database_up')).toBe(0);
    down = false;
    expect(sample(await registry.metrics(), 'chime_database_up')).toBe(1);
  });
});
