/**
 * The console in Chromium (test/console/support.ts), jobs: a cron job in a time zone made through the form with its
 * live preview; a job of every other schedule kind made through the form; the job list's pages, filters, cells and
 * order; editing with the API's field errors beside the fields; cancel asking first; markup in a job's name, metadata
 * and response shown as text with no script run.
 */
import { describe, expect, it } from 'vitest';
import { focused, localDateTime } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import {
  BROWSER,
  DATABASE_TARGETS,
  hourIn,
  jobRow,
  listedJobs,
  listedRuns,
  loaded,
  newestFirst,
  RESPONSE_MARKUP,
  sortedColumn,
  useHarness,
  YEARLY,
} from './support.ts';

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: jobs', (target) => {
  const h = useHarness(target);

  it('creates a cron job in a time zone through the form, its next occurrences previewed as the user types', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.a);
    await page.getByRole('link', { name: 'New job' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Paris morning report');
    await page.getByLabel('Schedule type', { exact: true }).selectOption('cron');
    await page.getByLabel('Cron expression', { exact: true }).fill('0 9 * * 1-5');
    await page.getByLabel('Time zone', { exact: true }).selectOption('Europe/Paris');
    await page.getByLabel('Callback URL', { exact: true }).fill(`${h.receiver.url}/report`);
    const preview = page.getByRole('list', { name: 'Next occurrences' });
    await expect.poll(() => preview.locator('time').count(), { timeout: 10_000 }).toBe(10);
    const times = await preview.locator('time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime')!));
    for (const t of times) expect(hourIn(t, 'Europe/Paris'), t).toBe(9);
    await h.shot(page, 'job-form');
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/console\/jobs\/[0-9a-f-]{36}$/);
    const cronJobId = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: 'Paris morning report' }).waitFor();
    const job = (await h.a.api.get(`/v1/jobs/${cronJobId}`)).body;
    expect(job.schedule).toMatchObject({ type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Paris' });
    expect(hourIn(job.nextRunAt, 'Europe/Paris')).toBe(9);
    await expect.poll(() => page.getByRole('list', { name: 'Next occurrences' }).locator('time').count()).toBe(10);
    await h.shot(page, 'job');
  });

  it('creates once, delay, interval and dates jobs through the form, with their retry policy, relevancy window and delivery mode', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.a);
    const at = await localDateTime(page, 2, 9, 15);
    const start = await localDateTime(page, 1, 9);
    const end = await localDateTime(page, 1, 11);
    const day = await localDateTime(page, 3, 18, 30);
    const kinds: {
      type: string;
      fill: () => Promise<void>;
      schedule: Record<string, unknown>;
      form: Record<string, string>;
      expected: Record<string, unknown>;
      occurrences?: string[];
    }[] = [
      {
        type: 'once',
        fill: () => page.getByLabel('At', { exact: true }).fill(at.text),
        schedule: { type: 'once', at: at.iso },
        occurrences: [at.iso],
        form: {
          'Retry strategy': 'fixed',
          'Max attempts': '2',
          'Initial delay (ms)': '5000',
          'Relevancy window (seconds)': '90',
          'Delivery mode': 'at-most-once',
        },
        expected: {
          retry: { strategy: 'fixed', maxAttempts: 2, initialDelayMs: 5000 },
          relevancyWindowMs: 90_000,
          deliveryMode: 'at-most-once',
        },
      },
      {
        type: 'delay',
        fill: () => page.getByLabel('Delay (seconds)', { exact: true }).fill('3600'),
        schedule: { type: 'delay', delayMs: 3_600_000 },
        form: { 'Retry strategy': 'none', 'Delivery mode': 'at-least-once' },
        expected: { retry: { strategy: 'none', maxAttempts: 1 }, relevancyWindowMs: null, deliveryMode: 'at-least-once' },
      },
      {
        type: 'interval',
        fill: async () => {
          await page.getByLabel('Every (seconds)', { exact: true }).fill('1800');
          await page.getByLabel('Start at', { exact: true }).fill(start.text);
          await page.getByLabel('End at', { exact: true }).fill(end.text);
        },
        schedule: { type: 'interval', everyMs: 1_800_000, startAt: start.iso, endAt: end.iso },
        occurrences: [0, 1, 2, 3, 4].map((i) => new Date(Date.parse(start.iso) + i * 1_800_000).toISOString()),
        form: {
          'Retry strategy': 'linear',
          'Max attempts': '3',
          'Initial delay (ms)': '2000',
          'Max delay (ms)': '60000',
          'Relevancy window (seconds)': '600',
          'Delivery mode': 'at-most-once',
        },
        expected: {
          retry: { strategy: 'linear', maxAttempts: 3, initialDelayMs: 2000, maxDelayMs: 60_000 },
          relevancyWindowMs: 600_000,
          deliveryMode: 'at-most-once',
        },
      },
      {
        type: 'dates',
        fill: () => page.getByLabel('Dates (one per line)', { exact: true }).fill(`${day.text}\n2030-06-01T12:00:00+02:00`),
        schedule: { type: 'dates', dates: [day.iso, '2030-06-01T10:00:00.000Z'] },
        occurrences: [day.iso, '2030-06-01T10:00:00.000Z'],
        form: {
          'Retry strategy': 'exponential',
          'Max attempts': '7',
          'Initial delay (ms)': '500',
          'Max delay (ms)': '120000',
          'Relevancy window (seconds)': '30',
        },
        expected: {
          retry: { strategy: 'exponential', maxAttempts: 7, initialDelayMs: 500, maxDelayMs: 120_000, multiplier: 2 },
          relevancyWindowMs: 30_000,
          deliveryMode: 'at-least-once',
        },
      },
    ];
    for (const kind of kinds) {
      await page.goto(`${h.url}/console/jobs/new`);
      await page.getByRole('heading', { name: 'New job' }).waitFor();
      await page.getByLabel('Name', { exact: true }).fill(`form ${kind.type}`);
      await page.getByLabel('Schedule type', { exact: true }).selectOption(kind.type);
      await kind.fill();
      await page.getByLabel('Callback URL', { exact: true }).fill(`${h.receiver.url}/form-${kind.type}`);
      for (const [label, value] of Object.entries(kind.form)) {
        const control = page.getByLabel(label, { exact: true });
        if ((await control.evaluate((el) => el.tagName)) === 'SELECT') await control.selectOption(value);
        else await control.fill(value);
      }
      // The live preview: the schedule's next occurrences (a delay's one, an hour from now).
      const preview = page.getByRole('list', { name: 'Next occurrences' }).locator('time');
      const times = () => preview.evaluateAll((els) => els.map((e) => e.getAttribute('datetime')!));
      if (kind.occurrences) await expect.poll(times).toEqual(kind.occurrences);
      else {
        await expect.poll(() => preview.count()).toBe(1);
        expect(Math.abs(Date.parse((await times())[0]!) - Date.now() - 3_600_000)).toBeLessThan(120_000);
      }
      if (kind.type === 'interval') await h.shot(page, 'job-form-interval');
      await page.getByRole('button', { name: 'Create job' }).click();
      await page.waitForURL(/\/console\/jobs\/[0-9a-f-]{36}$/);
      await page.getByRole('heading', { name: `form ${kind.type}` }).waitFor();
      const job = (await h.a.api.get(`/v1/jobs/${page.url().split('/').pop()}`)).body;
      expect(job.schedule, kind.type).toMatchObject(kind.schedule);
      expect(job, kind.type).toMatchObject({
        status: 'active',
        callback: { url: `${h.receiver.url}/form-${kind.type}` },
        ...kind.expected,
      });
    }
  });

  it('lists jobs 25 a page with their schedule in words, next run and last outcome, filtered by status, name or key, and metadata', async () => {
    const c = await h.tenant('Tenant C');
    // 24 jobs made at once (every other one of team ops, the 7th with a key), then 4 that each show something.
    const filler = Array.from({ length: 24 }, (_, i) => ({
      name: `filler ${String(i + 1).padStart(2, '0')}`,
      ...(i === 6 ? { key: 'report-eu' } : {}),
      schedule: YEARLY,
      callback: { url: `${h.receiver.url}/ok` },
      metadata: { team: i % 2 === 0 ? 'ops' : 'dev' },
    }));
    const batch = await c.api.post('/v1/jobs/batch', { jobs: filler });
    expect(batch.body.results.map((r: { status: number }) => r.status)).toEqual(filler.map(() => 201));
    const backup = await h.makeJob(c, {
      name: 'nightly backup',
      schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'Europe/Berlin' },
      callback: { url: `${h.receiver.url}/ok` },
      metadata: { team: 'ops', env: 'prod' },
    });
    const sweep = await h.makeJob(c, {
      name: 'paused sweep',
      schedule: { type: 'interval', everyMs: 1_800_000 },
      callback: { url: `${h.receiver.url}/ok` },
    });
    expect((await c.api.request('PATCH', `/v1/jobs/${sweep}`, { paused: true })).status).toBe(200);
    const once = { schedule: YEARLY, retry: { strategy: 'none' } };
    const [okJob, failingJob] = [
      await h.makeJob(c, { name: 'ok once', ...once, callback: { url: `${h.receiver.url}/ok` } }),
      await h.makeJob(c, { name: 'failing once', ...once, callback: { url: `${h.receiver.url}/fail` } }),
    ];
    const [, failedRun] = await Promise.all([h.triggered(c, okJob, 'succeeded'), h.triggered(c, failingJob, 'failed')]);
    const all = [...filler.map((f) => f.name), 'nightly backup', 'paused sweep', 'ok once', 'failing once'].sort();

    const page = await h.newPage();
    await h.signIn(page, c);
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    // 25 a page, newest first; "Older →" shows the other 3, "← Newer" goes back.
    await expect.poll(() => listedJobs(page)).toHaveLength(25);
    const first = await listedJobs(page);
    expect(first).toEqual(expect.arrayContaining(['nightly backup', 'paused sweep', 'ok once', 'failing once']));
    // In the order of the column it names: creation, newest first.
    const order = await sortedColumn(page, page.locator('table.jobs-table'));
    expect(order).toMatchObject({ header: 'Created ↓', sort: 'descending' });
    expect(newestFirst(order.times), `${order.times}`).toBe(true);
    expect(await page.locator('table.jobs-table caption').textContent()).toBe('Newest first, by when each job was created.');
    // Each job's schedule in words, next run and the outcome of its newest finished run.
    const cells = (name: string) => jobRow(page, name).getByRole('cell');
    expect(await cells('nightly backup').nth(2).textContent()).toBe('Every day at 09:00 (Europe/Berlin)');
    expect(await cells('paused sweep').nth(2).textContent()).toMatch(/^Every 30 minutes from /);
    expect(await cells('paused sweep').nth(1).textContent()).toBe('paused');
    expect(await cells('nightly backup').nth(3).locator('time').getAttribute('datetime')).toBe(
      (await c.api.get(`/v1/jobs/${backup}`)).body.nextRunAt,
    );
    await expect.poll(() => cells('ok once').nth(4).textContent()).toBe('succeeded');
    await expect.poll(() => cells('failing once').nth(4).textContent()).toBe('failed');
    await expect.poll(() => cells('nightly backup').nth(4).textContent()).toBe('—');
    // A failure is impossible to miss: the banner above the list leads to it.
    const banner = page.getByRole('status').filter({ hasText: 'There are failed runs waiting' });
    await banner.waitFor();
    await loaded(page);
    await h.shot(page, 'jobs');
    await page.getByRole('button', { name: 'Older →' }).click();
    await expect.poll(() => listedJobs(page)).toHaveLength(3);
    expect([...first, ...(await listedJobs(page))].sort()).toEqual(all);
    expect(await page.getByRole('button', { name: 'Older →' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: '← Newer' }).click();
    await expect.poll(() => listedJobs(page)).toEqual(first);

    // Status: applied at once, and kept in the URL.
    const status = page.getByLabel('Status', { exact: true });
    await status.selectOption('paused');
    await expect.poll(() => listedJobs(page)).toEqual(['paused sweep']);
    expect(new URL(page.url()).searchParams.get('status')).toBe('paused');
    await status.selectOption('completed');
    await expect.poll(() => page.getByText('No job matches').count()).toBe(1);
    await status.selectOption('');
    await expect.poll(() => listedJobs(page)).toEqual(first);
    // Search: a case-insensitive part of the name, or of the key.
    // (Typing applies after a pause; Enter at once.)
    const search = page.getByLabel('Search', { exact: true });
    await search.fill('BACKUP');
    await expect.poll(() => listedJobs(page)).toEqual(['nightly backup']);
    expect(new URL(page.url()).searchParams.get('q')).toBe('BACKUP');
    await search.fill('report-EU');
    await search.press('Enter');
    await expect.poll(() => listedJobs(page)).toEqual(['filler 07']);
    await search.fill('');
    // Metadata: key=value pairs, all of which must match; a malformed one is explained beside the field.
    const metadata = page.getByLabel('Metadata', { exact: true });
    await metadata.fill('team=ops');
    await metadata.press('Enter');
    await expect
      .poll(() => listedJobs(page))
      .toEqual([...filler.filter((f) => f.metadata.team === 'ops').map((f) => f.name), 'nightly backup'].sort());
    await metadata.fill('team=ops, env=prod');
    await metadata.press('Enter');
    await expect.poll(() => listedJobs(page)).toEqual(['nightly backup']);
    await metadata.fill('team');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('#jobs-metadata-error').textContent()).toMatch(/is not key=value/);
    await metadata.fill('env=dev');
    await metadata.press('Enter');
    await expect.poll(() => page.getByText('No job matches').count()).toBe(1);
    // The banner's link: the dead letters, with the failed run.
    await banner.getByRole('link', { name: 'see dead letters' }).click();
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
    await expect.poll(() => listedRuns(page)).toEqual([failedRun]);
  });

  it("edits a job: the API's field errors beside the fields, a valid change saved; cancel asks first", async () => {
    const jobId = await h.makeJob(h.a, {
      name: 'edit me',
      schedule: { type: 'cron', expression: '0 8 * * *' },
      callback: { url: `${h.receiver.url}/report` },
    });
    const page = await h.newPage();
    await h.signIn(page, h.a, `/console/jobs/${jobId}`);
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit job' }).waitFor();
    const url = page.getByLabel('Callback URL', { exact: true });
    expect(await url.inputValue()).toBe(`${h.receiver.url}/report`);
    // What the API says about each mistake, shown beside its field.
    const urlProblem = await h.a.api.request('PATCH', `/v1/jobs/${jobId}`, { callback: { url: 'not a url' } });
    expect(urlProblem.status).toBe(400);
    const urlMessage = urlProblem.body.errors.find((e: { path: string }) => e.path === 'callback.url').message as string;
    const cronProblem = await h.a.api.post('/v1/schedules/preview', {
      schedule: { type: 'cron', expression: '61 * * * *', timezone: 'UTC' },
    });
    expect(cronProblem.status).toBe(400);
    const cronMessage = cronProblem.body.errors.find((e: { path: string }) => e.path === 'schedule.expression').message as string;

    await url.fill('not a url');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => page.locator('#f-url-error').textContent()).toBe(urlMessage);
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    expect(await url.getAttribute('aria-describedby')).toBe('f-url-error');
    // Preact runs effects (the focus move) after the next paint: the errors can show a frame before it.
    await expect.poll(async () => (await focused(page)).id, { message: 'the first field in error has the focus' }).toBe('f-url');
    await page.getByText('Not saved: see the messages above.').waitFor();
    // A cron expression the API refuses: its message beside the field as it is typed (the live preview asks).
    await page.getByLabel('Cron expression', { exact: true }).fill('61 * * * *');
    await expect.poll(() => page.locator('#f-expr-error').textContent()).toBe(cronMessage);
    await h.shot(page, 'edit-form');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Not saved: see the messages above.').waitFor();
    await expect.poll(() => page.locator('#f-expr-error').textContent()).toBe(cronMessage);
    expect((await h.a.api.get(`/v1/jobs/${jobId}`)).body).toMatchObject({
      name: 'edit me',
      schedule: { expression: '0 8 * * *' },
      callback: { url: `${h.receiver.url}/report` },
    });
    // Corrected, it is saved.
    await url.fill(`${h.receiver.url}/edited`);
    await expect.poll(() => page.locator('#f-url-error').count()).toBe(0);
    await page.getByLabel('Cron expression', { exact: true }).fill('30 6 * * 1');
    await expect.poll(() => page.locator('#f-expr-error').count()).toBe(0);
    await page.getByLabel('Name', { exact: true }).fill('edited job');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`/console/jobs/${jobId}$`));
    await page.getByRole('heading', { name: 'edited job' }).waitFor();
    const saved = (await h.a.api.get(`/v1/jobs/${jobId}`)).body;
    expect(saved).toMatchObject({
      name: 'edited job',
      schedule: { type: 'cron', expression: '30 6 * * 1' },
      callback: { url: `${h.receiver.url}/edited` },
    });
    expect(hourIn(saved.nextRunAt, 'UTC')).toBe(6);

    // Cancel asks first: the first click only asks, "Keep" keeps it; only the confirmation cancels.
    const jobStatus = async () => (await h.a.api.get(`/v1/jobs/${jobId}`)).body.status as string;
    await page.getByRole('button', { name: 'Cancel job' }).click();
    const question = page.getByRole('group', { name: /^Cancel this job\?/ });
    await question.waitFor();
    expect(await jobStatus()).toBe('active');
    await question.getByRole('button', { name: 'Keep' }).click();
    await page.getByRole('button', { name: 'Cancel job' }).waitFor();
    expect(await question.count()).toBe(0);
    expect(await jobStatus()).toBe('active');
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await question.getByRole('button', { name: 'Yes, cancel job' }).click();
    await page.getByText('The job is canceled.').waitFor();
    expect(await jobStatus()).toBe('canceled');
    await page.getByText('This job is canceled: it will not run again.').waitFor();
  });

  it('renders markup in a job name, metadata and a response as text, running no script', async () => {
    const name = '<img src=x onerror=alert(1)>';
    const made = await h.a.api.post('/v1/jobs', {
      name,
      schedule: { type: 'cron', expression: '0 0 1 1 *' },
      callback: { url: `${h.receiver.url}/markup` },
      metadata: { note: '<script>alert(2)</script>', '<b>k</b>': '<iframe src="javascript:alert(3)">' },
    });
    expect(made.status).toBe(201);
    const page = await h.newPage();
    await h.signIn(page, h.a);
    await expect.poll(() => page.getByText(name, { exact: true }).count()).toBeGreaterThan(0);
    await page.getByText(name, { exact: true }).first().click();
    await page.waitForURL(new RegExp(`/console/jobs/${made.body.jobId}$`));
    await expect.poll(() => page.getByText('<script>alert(2)</script>').count()).toBeGreaterThan(0);
    expect(await page.locator('img[src="x"], iframe, main script').count()).toBe(0);
    await h.shot(page, 'markup');
    // A response excerpt holding markup, on the run page.
    const runId = (await h.a.api.post(`/v1/jobs/${made.body.jobId}/trigger`)).body.runId;
    await eventually(async () => (await h.a.api.get(`/v1/runs/${runId}`)).body.status === 'succeeded', { what: 'the run to succeed' });
    await page.goto(`${h.url}/console/runs/${runId}`);
    await expect.poll(() => page.getByText(RESPONSE_MARKUP).count()).toBeGreaterThan(0);
    expect(await page.locator('main b, main script').count()).toBe(0);
  });

  it('saved a screenshot of every page it shows', () => {
    expect([...h.shots]).toEqual(expect.arrayContaining(['job-form', 'job', 'jobs', 'edit-form', 'job-form-interval', 'markup']));
  });
});
