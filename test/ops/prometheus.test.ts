/**
 * The Prometheus alert rules (deploy/prometheus/chime-alerts.yml) work: `promtool check rules` accepts them, their
 * unit tests (chime-alerts.test.yml) pass, and those tests can fail: every alert's expression replaced by one that
 * never fires, or one that always fires, makes `promtool test rules` fail. Then a real Prometheus scrapes a real
 * `chime serve` on every database target with the README's scrape configuration: the target is up, the metrics the
 * rules read are there with the labels they select, every rule evaluates without error, nothing alerts while Chime is
 * healthy, and stopping Chime makes the instance-down and all-down alerts go pending.
 *
 * Needs Debian's `prometheus` package (`prometheus` and `promtool` on PATH): skipped without it, saying so, unless
 * CHIME_REQUIRE_PROMETHEUS is set (CI sets it), where a missing Prometheus fails.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant } from '../support/api.ts';
import { type ChimeProcess, freePort, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.ts';

const RULES_DIR = new URL('../../deploy/prometheus/', import.meta.url).pathname;
const RULES = join(RULES_DIR, 'chime-alerts.yml');
const RULE_TESTS = join(RULES_DIR, 'chime-alerts.test.yml');
const METRICS_TOKEN = 'prometheus-test-metrics-token-0123';

/** Whether `bin --version` runs: the binary is on PATH. */
const runs = (bin: string): boolean => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0;
const HAVE_PROMETHEUS = runs('prometheus') && runs('promtool');
// CI installs Debian's prometheus (.ci/run): there a missing one is a failure, not a skip.
if (!HAVE_PROMETHEUS && process.env.CHIME_REQUIRE_PROMETHEUS) {
  throw new Error('CHIME_REQUIRE_PROMETHEUS is set but prometheus/promtool are not installed (apt-get install prometheus)');
}
const SKIPPED = HAVE_PROMETHEUS ? '' : ' (skipped: prometheus/promtool not installed; apt-get install prometheus)';

/** Runs promtool with `args`; never rejects: the exit code and everything it wrote. */
function promtool(args: string[], cwd?: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('promtool', args, { cwd }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** The alert names of a rules file, in order. */
function alertNames(rules: string): string[] {
  return [...rules.matchAll(/^\s+- alert: (\w+)$/gm)].map((m) => m[1]!);
}

/** `rules` with the expression of alert `name` (a one-line or block scalar, up to its `for:`) replaced by `expr`. */
function withExpr(rules: string, name: string, expr: string): string {
  const re = new RegExp(`(- alert: ${name}\\n\\s+expr: )[\\s\\S]*?(\\n\\s+for: )`);
  if (!re.test(rules)) throw new Error(`no expr/for of alert ${name}`);
  return rules.replace(re, `$1${expr}$2`);
}

describe.skipIf(!HAVE_PROMETHEUS)(`the alert rules under promtool${SKIPPED}`, () => {
  it('pass promtool check rules and their unit tests', async () => {
    const check = await promtool(['check', 'rules', RULES]);
    expect(check.code, check.output).toBe(0);
    const test = await promtool(['test', 'rules', RULE_TESTS]);
    expect(test.code, test.output).toBe(0);
    expect(test.output).toMatch(/SUCCESS/);
  });

  // 9 alerts × 2 mutants × 2 promtool runs.
  it('fail their unit tests when any alert never fires, or always fires', { timeout: 120_000 }, async () => {
    const rules = await readFile(RULES, 'utf8');
    const names = alertNames(rules);
    expect(names.length).toBeGreaterThanOrEqual(10);
    const dir = await mkdtemp(join(tmpdir(), 'chime-alerts-'));
    try {
      await copyFile(RULE_TESTS, join(dir, 'chime-alerts.test.yml'));
      for (const name of names) {
        for (const expr of ['vector(1) == 0', 'vector(1)']) {
          await writeFile(join(dir, 'chime-alerts.yml'), withExpr(rules, name, expr));
          // The mutant is valid: the tests, not the syntax, must reject it.
          const check = await promtool(['check', 'rules', 'chime-alerts.yml'], dir);
          expect(check.code, `${name} as ${expr}: ${check.output}`).toBe(0);
          const test = await promtool(['test', 'rules', 'chime-alerts.test.yml'], dir);
          expect(test.code, `${name} as \`${expr}\` still passes its tests`).not.toBe(0);
          expect(test.output).toContain(`alertname: ${name},`);
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

type PromResponse<T> = { status: string; data: T; error?: string };
type Rule = { name: string; health: string; lastError?: string; lastEvaluation: string };
type Alert = { labels: Record<string, string>; state: string };
type Sample = { metric: Record<string, string>; value: [number, string] };

/** A Prometheus child process and its HTTP API. */
type Prometheus = {
  /** GET `path` of the HTTP API: the `data` of a success, else throws with its error. */
  api<T>(path: string): Promise<T>;
  query(q: string): Promise<Sample[]>;
  /** Active alerts: pending and firing. */
  alerts(): Promise<Alert[]>;
  output(): string;
  /** Kills it (SIGKILL: its data is a temporary directory) and removes that directory. */
  stop(): Promise<void>;
};

/**
 * Starts `prometheus` with the alert rules, scraping the chime at `chimePort` as the README configures it (job
 * `chime`, the metrics token from a credentials file), every `scrape.interval`, rules evaluated every second;
 * resolves once it is ready.
 */
async function startPrometheus(chimePort: number, scrape: { interval: string; timeout: string }): Promise<Prometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'chime-prometheus-'));
  const tokenFile = join(dir, 'chime-metrics-token');
  await writeFile(tokenFile, METRICS_TOKEN);
  await writeFile(
    join(dir, 'prometheus.yml'),
    [
      'global:',
      `  scrape_interval: ${scrape.interval}`,
      `  scrape_timeout: ${scrape.timeout}`,
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${RULES}`,
      'scrape_configs:',
      '  - job_name: chime',
      '    authorization:',
      '      type: Bearer',
      `      credentials_file: ${tokenFile}`,
      '    static_configs:',
      `      - targets: ['127.0.0.1:${chimePort}']`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    'prometheus',
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}: ${output}`);
      return (await fetch(`${url}/-/ready`).catch(() => null))?.ok;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: 'prometheus to be ready' },
  ).catch(async (err) => {
    await stop();
    throw err;
  });
  const api = async <T>(path: string): Promise<T> => {
    const r = (await (await fetch(`${url}${path}`)).json()) as PromResponse<T>;
    if (r.status !== 'success') throw new Error(`${path}: ${r.error}`);
    return r.data;
  };
  return {
    api,
    query: (q) => api<{ result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(q)}`).then((d) => d.result),
    alerts: () => api<{ alerts: Alert[] }>('/api/v1/alerts').then((d) => d.alerts),
    output: () => output,
    stop,
  };
}

describe.skipIf(!HAVE_PROMETHEUS).each(DATABASE_TARGETS)(`a real Prometheus scraping chime on $kind${SKIPPED}`, (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let prometheus: Prometheus;
  const prom = <T>(path: string) => prometheus.api<T>(path);
  const query = (q: string) => prometheus.query(q);
  const alerts = () => prometheus.alerts();

  beforeAll(async () => {
    db = await freshDatabase(target);
    // PostgreSQL: migrate on start (`chime serve` will require it to be asked for).
    chime = await startChime({ ...db.env, CHIME_METRICS_TOKEN: METRICS_TOKEN, ...(db.url ? { CHIME_MIGRATE: 'true' } : {}) });
    // At test speed: a scrape and a rule evaluation every second.
    prometheus = await startPrometheus(chime.port, { interval: '1s', timeout: '1s' });
  });

  afterAll(async () => {
    await prometheus?.stop();
    await chime?.stop('SIGKILL');
    await db?.drop();
  });

  it('scrapes chime with the metrics token, and every rule evaluates without error', { timeout: 60_000 }, async () => {
    const opts = { timeoutMs: 30_000, intervalMs: 200 };
    const targets = await eventually(
      async () => {
        const d = await prom<{ activeTargets: { health: string; lastError: string; labels: Record<string, string> }[] }>('/api/v1/targets');
        return d.activeTargets.length === 1 && d.activeTargets[0]!.health === 'up' && d.activeTargets;
      },
      { ...opts, what: 'the chime target to be up' },
    );
    expect(targets[0]!.labels.job).toBe('chime');
    await eventually(async () => (await query('up{job="chime"}'))[0]?.value[1] === '1', { ...opts, what: 'up{job="chime"} == 1' });
    const backlog = await eventually(async () => (await query('chime_due_backlog{job="chime"}'))[0], {
      ...opts,
      what: 'chime_due_backlog',
    });
    expect(backlog.value[1]).toBe('0');
    const dbUp = await eventually(async () => (await query('chime_database_up{job="chime"}'))[0], { ...opts, what: 'chime_database_up' });
    expect(dbUp.value[1]).toBe('1');

    const rules = await readFile(RULES, 'utf8');
    const expected = alertNames(rules);
    const evaluated = await eventually(
      async () => {
        const d = await prom<{ groups: { rules: Rule[] }[] }>('/api/v1/rules');
        const all = d.groups.flatMap((g) => g.rules);
        // Evaluated at least once since a successful scrape: health is "unknown" before the first evaluation.
        return all.length === expected.length && all.every((r) => r.health !== 'unknown') && all;
      },
      { ...opts, what: 'every rule to be evaluated' },
    );
    expect(evaluated.map((r) => r.name).sort()).toEqual([...expected].sort());
    for (const r of evaluated)
      expect({ rule: r.name, health: r.health, lastError: r.lastError ?? '' }).toEqual({ rule: r.name, health: 'ok', lastError: '' });

    // Healthy: nothing pending or firing (ChimeDown may be pending from before the first scrape, for one evaluation).
    await eventually(async () => (await alerts()).length === 0, { ...opts, what: 'no alert while chime is healthy' });
  });

  it('counts a dead letter with the outcome and error_class labels the dead-letter alert selects', { timeout: 60_000 }, async () => {
    const tenant = await createTestTenant(chime.url);
    // Nothing listens on a port just freed: the one attempt is refused and the run ends `failed`.
    const closed = await freePort();
    const r = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `http://127.0.0.1:${closed}/hook` },
      retry: { maxAttempts: 1 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const q = 'chime_attempts_total{job="chime",outcome="failed",error_class="connection_refused"}';
    const failed = await eventually(async () => (await query(q))[0], { timeoutMs: 30_000, intervalMs: 200, what: q });
    expect(Number(failed.value[1])).toBeGreaterThanOrEqual(1);
    const lag = await query('sum(chime_fire_lag_seconds_count{job="chime"})');
    expect(Number(lag[0]?.value[1])).toBeGreaterThanOrEqual(1);

    // Every series the rules' expressions read is one Chime exports (chime_attempts_total has series only once an
    // attempt was made, as now); every metric their runbook hints name is one it declares (# TYPE: chime_in_flight has
    // series only while callbacks are in flight; a histogram is declared by its base name).
    const rules = await readFile(RULES, 'utf8');
    const exported = new Set(await prom<string[]>('/api/v1/label/__name__/values'));
    const declared = await prom<Record<string, unknown>>('/api/v1/metadata');
    const metricNames = (text: string) => new Set([...text.matchAll(/\b(?:chime|nodejs|process)_[a-z0-9_]+/g)].map((m) => m[0]));
    const exprs = [...rules.matchAll(/expr: ([\s\S]*?)\n\s+for: /g)].map((m) => m[1]).join('\n');
    expect(
      [...metricNames(exprs)].filter((n) => !exported.has(n)),
      'series the rules read that Chime does not export',
    ).toEqual([]);
    const hinted = [...metricNames(rules)].filter((n) => !(n.replace(/_(bucket|count|sum)$/, '') in declared));
    expect(hinted, 'metrics the runbook hints name that Chime does not declare').toEqual([]);
  });

  it('sees up == 0 once chime stops, and ChimeInstanceDown and ChimeDown go pending', { timeout: 60_000 }, async () => {
    await chime.stop();
    const opts = { timeoutMs: 30_000, intervalMs: 200 };
    await eventually(async () => (await query('up{job="chime"}'))[0]?.value[1] === '0', { ...opts, what: 'up{job="chime"} == 0' });
    const down = await eventually(
      async () => {
        const active = await alerts();
        const named = (n: string) => active.find((a) => a.labels.alertname === n);
        return named('ChimeInstanceDown') && named('ChimeDown') && active;
      },
      { ...opts, what: 'ChimeInstanceDown and ChimeDown to be active' },
    );
    const instanceDown = down.find((a) => a.labels.alertname === 'ChimeInstanceDown')!;
    // `for: 2m`: pending through the rest of this test.
    expect(instanceDown.state).toBe('pending');
    expect(instanceDown.labels).toMatchObject({ job: 'chime', instance: `127.0.0.1:${chime.port}`, severity: 'warning' });
    expect(down.find((a) => a.labels.alertname === 'ChimeDown')!.labels).toMatchObject({ severity: 'critical' });
  });
});

// A database that stops answering (a network partition: TCP gives no error, connecting hangs) must read as the
// database down, not as Chime down: the backlog read gives up after 5 s, inside the README's 10 s scrape timeout.
describe.skipIf(!HAVE_PROMETHEUS || !process.env.TEST_DATABASE_URL)(
  `a database partition under a real Prometheus, on postgres${SKIPPED}${process.env.TEST_DATABASE_URL ? '' : ' (skipped: no TEST_DATABASE_URL)'}`,
  () => {
    let db: FreshDatabase;
    let proxy: FaultProxy;
    let chime: ChimeProcess;
    let prometheus: Prometheus;

    beforeAll(async () => {
      db = await freshDatabase({ kind: 'postgres' });
      const upstream = new URL(db.url!);
      proxy = await startFaultProxy(upstream.hostname, Number(upstream.port || 5432));
      chime = await startChime({
        ...db.env,
        DATABASE_URL: proxy.urlFor(db.url!),
        CHIME_MIGRATE: 'true',
        CHIME_METRICS_TOKEN: METRICS_TOKEN,
      });
      // A scrape timeout above the backlog read's 5 s, as Prometheus's default 10 s is.
      prometheus = await startPrometheus(chime.port, { interval: '8s', timeout: '7s' });
    });

    afterAll(async () => {
      await prometheus?.stop();
      await chime?.stop('SIGKILL');
      await proxy?.close();
      await db?.drop();
    });

    it('keeps chime up and reports chime_database_up 0, and ChimeDatabaseUnreachable goes pending', { timeout: 120_000 }, async () => {
      const opts = { timeoutMs: 45_000, intervalMs: 250 };
      const value = async (q: string) => (await prometheus.query(q))[0]?.value[1];
      await eventually(async () => (await value('chime_database_up{job="chime"}')) === '1', { ...opts, what: 'chime_database_up 1' });
      proxy.blackhole();
      await eventually(async () => (await value('chime_database_up{job="chime"}')) === '0', { ...opts, what: 'chime_database_up 0' });
      // Every scrape since the partition answered: none hung past the scrape timeout.
      expect(await value('min_over_time(up{job="chime"}[5m])'), 'every scrape succeeded').toBe('1');
      expect(await value('chime_due_backlog{job="chime"}')).toBe('-1');
      const alert = await eventually(
        async () => (await prometheus.alerts()).find((a) => a.labels.alertname === 'ChimeDatabaseUnreachable'),
        { ...opts, what: 'ChimeDatabaseUnreachable to be active' },
      );
      expect(alert.labels).toMatchObject({ job: 'chime', instance: `127.0.0.1:${chime.port}`, severity: 'critical' });
      const others = (await prometheus.alerts()).map((a) => a.labels.alertname);
      expect(others).not.toContain('ChimeInstanceDown');
    });
  },
);
