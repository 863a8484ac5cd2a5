/**
 * The job form's model (src/console/app/job-form/form-model.ts, form-body.ts, field-paths.ts) without a browser: for every schedule
 * kind (a union of the others, and 6-field cron, included), a job fills the form and the form gives back the job's body
 * (form ⇄ body round trip) with its calendar, run limit, jitter mode and `then` links, in named zones rather than the
 * machine's; times as users type them; turning a schedule into a union; what the form cannot read, beside its field
 * (a union's schedule's field, a link's job); what an edit sends and clears; and the API's error paths mapped to the
 * fields.
 */
import { describe, expect, it } from 'vitest';
import { fieldOfPath, sortFieldErrors } from '../../src/console/app/job-form/field-paths.ts';
import { bodyOfForm, changedFields, type JobBodyDraft, parseTime, scheduleOfForm } from '../../src/console/app/job-form/form-body.ts';
import {
  blankForm,
  blankMember,
  type FormState,
  formFromJob,
  MAX_UNION_SCHEDULES,
  MIN_UNION_SCHEDULES,
  visibleFields,
  withType,
} from '../../src/console/app/job-form/form-model.ts';
import type { Job } from '../../src/console/app/types.ts';
import * as domain from '../../src/domain/schedule.ts';

const LA = 'America/Los_Angeles';

/** A job as the API returns it, with `over` on top (every field a body can set, set to something not a default). */
function job(over: Partial<Job>): Job {
  return {
    jobId: '0190a000-0000-7000-8000-000000000001',
    name: 'nightly report',
    key: 'report-eu',
    status: 'active',
    pausedReason: null,
    pauseAfterFailures: 3,
    consecutiveFailures: 0,
    schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Paris' },
    callback: {
      url: 'https://example.com/hook',
      method: 'PUT',
      headers: { 'X-Team': 'ops', 'X-Env': 'prod' },
      hasAuthToken: true,
      successStatusCodes: ['2xx', 304],
      timeoutMs: 5000,
    },
    payload: { report: 'daily', n: 2 },
    retry: { strategy: 'linear', maxAttempts: 3, initialDelayMs: 2000, maxDelayMs: 60_000, multiplier: 2, jitter: false },
    relevancyWindowMs: 90_000,
    deliveryMode: 'at-most-once',
    overlapPolicy: 'skip',
    catchUp: 'none',
    jitterMs: 250,
    jitterMode: 'spread',
    calendar: { key: 'uk-bank', roll: 'next' },
    maxRuns: 12,
    scheduledRuns: 3,
    then: [
      { jobId: '0190a000-0000-7000-8000-000000000002', on: 'failed' },
      { jobId: '0190a000-0000-7000-8000-000000000003', on: 'finished' },
    ],
    metadata: { team: 'ops', env: 'prod' },
    nextRunAt: null,
    lastRunAt: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    ...over,
  } as Job;
}

/** The body that re-creates `j` (what the form must build from it), less the auth token the API never returns. */
function bodyOf(j: Job): JobBodyDraft {
  const { hasAuthToken: _, ...callback } = j.callback;
  const schedule = j.schedule.type === 'delay' ? { type: 'delay', delayMs: j.schedule.delayMs } : j.schedule;
  return {
    name: j.name,
    key: j.key,
    schedule,
    callback,
    payload: j.payload,
    retry: j.retry,
    relevancyWindowMs: j.relevancyWindowMs,
    deliveryMode: j.deliveryMode,
    overlapPolicy: j.overlapPolicy,
    catchUp: j.catchUp,
    jitterMs: j.jitterMs,
    jitterMode: j.jitterMode,
    pauseAfterFailures: j.pauseAfterFailures,
    metadata: j.metadata,
    ...(j.calendar ? { calendar: j.calendar } : {}),
    ...(j.maxRuns ? { maxRuns: j.maxRuns } : {}),
    ...(j.then ? { then: j.then } : {}),
  };
}

/** One row per schedule kind: the stored schedule, and what the form shows of it on Los Angeles' wall clock. */
const KINDS: { kind: string; schedule: Job['schedule']; shown: Partial<FormState> }[] = [
  { kind: 'once', schedule: { type: 'once', at: '2026-12-01T17:00:30.000Z' }, shown: { type: 'once', at: '2026-12-01T09:00' } },
  {
    kind: 'delay',
    schedule: { type: 'delay', delayMs: 90_000, at: '2026-12-01T17:00:00.000Z' } as Job['schedule'],
    shown: { type: 'delay', delay: '90' },
  },
  {
    kind: 'interval',
    schedule: { type: 'interval', everyMs: 1_800_000, startAt: '2026-07-01T16:00:00.000Z', endAt: '2026-07-02T16:00:00.000Z' },
    shown: { type: 'interval', every: '1800', start: '2026-07-01T09:00', end: '2026-07-02T09:00' },
  },
  {
    kind: 'interval, open-ended',
    schedule: { type: 'interval', everyMs: 500 },
    shown: { type: 'interval', every: '0.5', start: '', end: '' },
  },
  {
    kind: 'dates',
    schedule: { type: 'dates', dates: ['2026-12-01T17:00:00.000Z', '2030-06-01T10:00:00.000Z'] },
    shown: { type: 'dates', dates: '2026-12-01T17:00:00.000Z\n2030-06-01T10:00:00.000Z' },
  },
  {
    kind: 'cron in a zone, with a span',
    schedule: {
      type: 'cron',
      expression: '0 9 * * 1-5',
      timezone: 'Asia/Kolkata',
      startAt: '2026-03-08T10:30:00.000Z',
      endAt: '2027-01-01T08:00:00.000Z',
    },
    shown: { type: 'cron', expr: '0 9 * * 1-5', tz: 'Asia/Kolkata', start: '2026-03-08T03:30', end: '2027-01-01T00:00' },
  },
  {
    kind: 'cron in UTC',
    schedule: { type: 'cron', expression: '@hourly', timezone: 'UTC' },
    shown: { type: 'cron', expr: '@hourly', tz: 'UTC' },
  },
  {
    kind: 'cron with seconds',
    schedule: { type: 'cron', expression: '*/15 * 9-17 * * 1-5', timezone: 'Europe/Paris' },
    shown: { type: 'cron', expr: '*/15 * 9-17 * * 1-5', tz: 'Europe/Paris' },
  },
  {
    kind: 'union of every kind a union holds',
    schedule: {
      type: 'union',
      schedules: [
        { type: 'cron', expression: '0 0 9 * * 1-5', timezone: 'Europe/London' },
        { type: 'interval', everyMs: 7_200_000, startAt: '2026-07-01T16:00:00.000Z' },
        { type: 'dates', dates: ['2026-12-24T18:00:00.000Z'] },
        { type: 'once', at: '2026-12-01T17:00:30.000Z' },
      ],
    },
    shown: {
      type: 'union',
      members: [
        { ...blankMember(LA), type: 'cron', expr: '0 0 9 * * 1-5', tz: 'Europe/London' },
        { ...blankMember(LA), type: 'interval', every: '7200', start: '2026-07-01T09:00' },
        { ...blankMember(LA), type: 'dates', dates: '2026-12-24T18:00:00.000Z' },
        { ...blankMember(LA), type: 'once', at: '2026-12-01T09:00' },
      ],
    },
  },
];

describe('the job form ⇄ the job body, for every schedule kind', () => {
  it.each(KINDS)('$kind: a job fills the form, and the form gives back its body', ({ schedule, shown }) => {
    const j = job({ schedule });
    const { form, exact } = formFromJob(j, LA);
    expect(form).toMatchObject(shown);
    expect(form).toMatchObject({
      url: 'https://example.com/hook',
      method: 'PUT',
      headers: 'X-Team: ops\nX-Env: prod',
      codes: '2xx, 304',
      metadata: 'team=ops\nenv=prod',
      token: '',
      calendar: 'uk-bank',
      roll: 'next',
      maxRuns: '12',
      jitterMode: 'spread',
      then: [
        { jobId: '0190a000-0000-7000-8000-000000000002', on: 'failed' },
        { jobId: '0190a000-0000-7000-8000-000000000003', on: 'finished' },
      ],
    });
    const { body, errors } = bodyOfForm(form, { zone: LA, edit: false, exact });
    expect(errors).toEqual({});
    expect(body).toEqual(bodyOf(j));
  });

  it.each(KINDS)('$kind: an edit that changes nothing sends nothing; a changed field alone', ({ schedule }) => {
    const { form, exact } = formFromJob(job({ schedule }), LA);
    const before = bodyOfForm(form, { zone: LA, edit: true, exact }).body;
    expect(changedFields(bodyOfForm(form, { zone: LA, edit: true, exact }).body, before)).toEqual({});
    const renamed = bodyOfForm({ ...form, name: 'weekly report', token: 's3cret' }, { zone: LA, edit: true, exact }).body;
    expect(changedFields(renamed, before)).toEqual({
      name: 'weekly report',
      callback: { ...(before.callback as object), authToken: 's3cret' },
    });
  });

  it.each(KINDS)('$kind: the same job seen from another zone gives back the same instants', ({ schedule }) => {
    const j = job({ schedule });
    for (const zone of ['Europe/Kyiv', 'Asia/Kolkata', 'Pacific/Chatham', 'UTC']) {
      const { form, exact } = formFromJob(j, zone);
      expect(bodyOfForm(form, { zone, edit: false, exact }).body.schedule, zone).toEqual(bodyOf(j).schedule);
    }
  });

  it('a new job: the defaults, a cron schedule in the given zone, and no empty optional field sent', () => {
    const form = { ...blankForm('Europe/Kyiv'), expr: '0 9 * * *', url: 'https://example.com/hook' };
    const { body, errors } = bodyOfForm(form, { zone: LA, edit: false });
    expect(errors).toEqual({});
    expect(body).toEqual({
      schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'Europe/Kyiv' },
      callback: { url: 'https://example.com/hook', method: 'POST', headers: {}, successStatusCodes: ['2xx'], timeoutMs: 10_000 },
      retry: { strategy: 'exponential', maxAttempts: 5, initialDelayMs: 1000, maxDelayMs: 3_600_000, multiplier: 2, jitter: true },
      deliveryMode: 'at-least-once',
      overlapPolicy: 'allow',
      catchUp: 'one',
      jitterMs: 0,
      jitterMode: 'stable',
      pauseAfterFailures: 0,
      metadata: {},
    });
    // An edit clears with null what is emptied.
    const cleared = bodyOfForm({ ...form, relevancy: '' }, { zone: LA, edit: true }).body;
    expect(cleared).toMatchObject({ name: null, payload: null, relevancyWindowMs: null, calendar: null, maxRuns: null, then: null });
    expect(cleared).not.toHaveProperty('key');
  });

  it('an edit that clears the calendar, the limit and the links sends null for each, and only them', () => {
    const { form, exact } = formFromJob(job({}), LA);
    const before = bodyOfForm(form, { zone: LA, edit: true, exact }).body;
    const after = bodyOfForm({ ...form, calendar: '', maxRuns: ' ', then: [] }, { zone: LA, edit: true, exact }).body;
    expect(changedFields(after, before)).toEqual({ calendar: null, maxRuns: null, then: null });
    const rolled = bodyOfForm(
      { ...form, roll: 'previous', jitterMode: 'random', overlap: 'buffer-one' },
      { zone: LA, edit: true, exact },
    ).body;
    expect(changedFields(rolled, before)).toEqual({
      calendar: { key: 'uk-bank', roll: 'previous' },
      jitterMode: 'random',
      overlapPolicy: 'buffer-one',
    });
  });
});

describe('a union of schedules in the form', () => {
  it('agrees with the domain on how many schedules a union holds', () => {
    expect([MIN_UNION_SCHEDULES, MAX_UNION_SCHEDULES]).toEqual([domain.MIN_UNION_SCHEDULES, domain.MAX_UNION_SCHEDULES]);
  });

  it('turning a schedule into a union keeps it as the first schedule and adds an empty one; turning back loses nothing', () => {
    const cron = { ...blankForm(LA), type: 'cron' as const, expr: '0 0 9 * * *', tz: 'Asia/Kolkata', start: '2026-07-01T09:00' };
    const union = withType(cron, 'union');
    expect(union.members).toEqual([
      { type: 'cron', at: '', every: '3600', start: '2026-07-01T09:00', end: '', dates: '', expr: '0 0 9 * * *', tz: 'Asia/Kolkata' },
      blankMember('Asia/Kolkata'),
    ]);
    const edited = { ...union, members: [union.members[0]!, { ...blankMember(LA), type: 'interval' as const, every: '90' }] };
    const back = withType(edited, 'cron');
    expect(back).toMatchObject({ type: 'cron', expr: '0 0 9 * * *' });
    expect(withType(back, 'union').members).toEqual(edited.members);
    // A delay cannot be one of a union's schedules: two empty ones.
    expect(withType({ ...blankForm(LA), type: 'delay' }, 'union').members).toEqual([blankMember(LA), blankMember(LA)]);
  });

  it("reads each schedule, and names a schedule's field it cannot read", () => {
    const form = {
      ...blankForm(LA),
      type: 'union' as const,
      members: [
        { ...blankMember('UTC'), expr: '30 */5 * * * *' },
        { ...blankMember(LA), type: 'interval' as const, every: 'often', start: 'soon' },
        { ...blankMember(LA), type: 'dates' as const, dates: '2026-12-01T09:00\nnext week' },
        { ...blankMember(LA), type: 'once' as const, at: '' },
        { ...blankMember(LA), expr: ' ' },
      ],
    };
    expect(scheduleOfForm(form, LA).errors).toEqual({
      'members.1.every': 'enter a number',
      'members.1.start': 'not a date and time',
      'members.2.dates': 'line 2: "next week" is not a date and time',
      'members.3.at': 'enter a date and time',
      'members.4.expr': 'enter a cron expression, such as 0 9 * * *',
    });
    const good = { ...form, members: [form.members[0]!, { ...blankMember(LA), type: 'interval' as const, every: '1.5' }] };
    expect(scheduleOfForm(good, LA)).toEqual({
      schedule: {
        type: 'union',
        schedules: [
          { type: 'cron', expression: '30 */5 * * * *', timezone: 'UTC' },
          { type: 'interval', everyMs: 1500 },
        ],
      },
      errors: {},
    });
    expect(scheduleOfForm({ ...form, members: [form.members[0]!] }, LA).errors).toEqual({ members: 'add at least 2 schedules' });
  });
});

describe('the `then` links in the form', () => {
  it('sends each link; a link without a job, or with words for one, is named', () => {
    const base = { ...blankForm(LA), expr: '0 9 * * *', url: 'https://example.com/hook' };
    const id = '0190a000-0000-7000-8000-00000000000a';
    const ok = bodyOfForm({ ...base, then: [{ jobId: ` ${id} `, on: 'succeeded' }] }, { zone: LA, edit: false });
    expect(ok.errors).toEqual({});
    expect(ok.body.then).toEqual([{ jobId: id, on: 'succeeded' }]);
    const bad = bodyOfForm(
      {
        ...base,
        then: [
          { jobId: '', on: 'failed' },
          { jobId: 'nightly report', on: 'failed' },
        ],
      },
      { zone: LA, edit: false },
    );
    expect(bad.errors).toEqual({ 'then.0.jobId': 'choose a job', 'then.1.jobId': 'not a job id: choose a job from the list' });
  });

  it('a run limit must be a whole number', () => {
    const base = { ...blankForm(LA), expr: '0 9 * * *', url: 'https://example.com/hook' };
    expect(bodyOfForm({ ...base, maxRuns: '2.5' }, { zone: LA, edit: false }).errors).toEqual({ maxRuns: 'enter a whole number' });
    expect(bodyOfForm({ ...base, maxRuns: '3' }, { zone: LA, edit: false }).body.maxRuns).toBe(3);
  });
});

describe('times as typed', () => {
  it.each([
    ['2026-12-01T09:00', LA, '2026-12-01T17:00:00.000Z'],
    ['2026-12-01 09:00:30', LA, '2026-12-01T17:00:30.000Z'],
    ['2026-07-01T09:00:00.5', LA, '2026-07-01T16:00:00.500Z'],
    ['2026-12-01', 'Europe/Paris', '2026-11-30T23:00:00.000Z'],
    ['2026-12-01T09:00', 'Asia/Kolkata', '2026-12-01T03:30:00.000Z'],
    ['2026-12-01T09:00Z', LA, '2026-12-01T09:00:00.000Z'],
    ['2026-12-01T09:00:00+02:00', LA, '2026-12-01T07:00:00.000Z'],
    // Los Angeles skips 02:00-03:00 on 8 March 2026 and has 01:00-02:00 twice on 1 November: as Date reads them.
    ['2026-03-08T02:30', LA, '2026-03-08T10:30:00.000Z'],
    ['2026-11-01T01:30', LA, '2026-11-01T08:30:00.000Z'],
  ])('%s in %s is %s', (text, zone, iso) => {
    expect(parseTime(text, zone)).toBe(iso);
  });

  it.each(['2026-02-30T09:00', '2026-12-01T24:00', '2026-12-01T09:60', 'tomorrow', '1 Dec 2026', ''])('"%s" is not a time', (text) => {
    expect(parseTime(text, LA)).toBeNull();
  });

  it('a time shown to the minute gives back its stored seconds while unchanged', () => {
    const exact = new Map([['2026-12-01T09:00', '2026-12-01T17:00:30.000Z']]);
    expect(parseTime('2026-12-01T09:00', LA, exact)).toBe('2026-12-01T17:00:30.000Z');
    expect(parseTime('2026-12-01T09:01', LA, exact)).toBe('2026-12-01T17:01:00.000Z');
  });
});

describe('what the form cannot read, beside its field', () => {
  const base = { ...blankForm(LA), expr: '0 9 * * *', url: 'https://example.com/hook' };
  it.each<[string, Partial<FormState>, Record<string, string>]>([
    ['a cron schedule without an expression', { type: 'cron', expr: ' ' }, { expr: 'enter a cron expression, such as 0 9 * * *' }],
    ['a one-off without a time', { type: 'once', at: '' }, { at: 'enter a date and time' }],
    [
      'an interval of words',
      { type: 'interval', every: 'often', start: 'soon' },
      { every: 'enter a number', start: 'not a date and time' },
    ],
    [
      'a date list with a bad line',
      { type: 'dates', dates: '2026-12-01T09:00\n\nnext week' },
      { dates: 'line 3: "next week" is not a date and time' },
    ],
    ['an empty date list', { type: 'dates', dates: '\n' }, { dates: 'enter at least one date and time' }],
    ['a header without a colon', { headers: 'X-Team ops' }, { headers: 'line 1: expected "Name: value"' }],
    ['metadata without =', { metadata: 'team=ops\nenv' }, { metadata: 'line 2: expected "key=value"' }],
    ['a status code of words', { codes: '2xx, ok' }, { codes: '"ok" is neither a status code nor a class such as 2xx' }],
    [
      'a fractional timeout and attempts',
      { timeout: '1.5', attempts: '2.5' },
      { timeout: 'enter a whole number', attempts: 'enter a whole number' },
    ],
    [
      'a payload that is not JSON',
      { payload: '{ report: 1 }' },
      { payload: expect.stringMatching(/^not valid JSON: /) as unknown as string },
    ],
  ])('%s', (_, change, errors) => {
    expect(bodyOfForm({ ...base, ...change }, { zone: LA, edit: false }).errors).toEqual(errors);
  });

  it('the preview reads only the schedule', () => {
    const { schedule, errors } = scheduleOfForm({ ...base, type: 'delay', delay: '1.5', payload: 'not json' }, LA);
    expect(errors).toEqual({});
    expect(schedule).toEqual({ type: 'delay', delayMs: 1500 });
  });
});

describe("the API's field errors, beside the fields", () => {
  it.each([
    ['callback.url', { field: 'url', prefix: '' }],
    ['schedule.expression', { field: 'expr', prefix: '' }],
    ['schedule.timezone', { field: 'tz', prefix: '' }],
    ['schedule', { field: 'type', prefix: '' }],
    ['schedule.dates.3', { field: 'dates', prefix: 'entry 4' }],
    ['callback.successStatusCodes.0', { field: 'codes', prefix: 'entry 1' }],
    ['callback.headers.X-Team', { field: 'headers', prefix: 'X-Team' }],
    ['retry.jitter', { field: 'retryJitter', prefix: '' }],
    ['relevancyWindowMs', { field: 'relevancy', prefix: '' }],
    ['metadata.team', { field: 'metadata', prefix: 'team' }],
    ['schedule.schedules', { field: 'members', prefix: '' }],
    ['schedule.schedules.1.expression', { field: 'members.1.expr', prefix: '' }],
    ['schedule.schedules.0.dates.2', { field: 'members.0.dates', prefix: 'entry 3' }],
    ['schedule.schedules.2.type', { field: 'members.2.type', prefix: '' }],
    ['schedule.schedules.2.delayMs', { field: 'members', prefix: 'schedule 3' }],
    ['calendar', { field: 'calendar', prefix: '' }],
    ['calendar.key', { field: 'calendar', prefix: '' }],
    ['calendar.roll', { field: 'roll', prefix: '' }],
    ['maxRuns', { field: 'maxRuns', prefix: '' }],
    ['jitterMode', { field: 'jitterMode', prefix: '' }],
    ['then', { field: 'then', prefix: '' }],
    ['then.1.jobId', { field: 'then.1.jobId', prefix: '' }],
    ['then.1.on', { field: 'then.1.on', prefix: '' }],
    ['then.3', { field: 'then.3.jobId', prefix: '' }],
    ['kind', null],
    ['callback.nope', null],
  ])('%s', (path, field) => {
    expect(fieldOfPath(path)).toEqual(field);
  });

  it('sorts them into the fields shown, and the rest', () => {
    const shown = visibleFields('cron', true);
    const { byField, unmatched } = sortFieldErrors(
      [
        { path: 'callback.url', message: 'must be https' },
        { path: 'callback.url', message: 'too long' },
        { path: 'schedule.at', message: 'hidden for a cron schedule' },
        { path: 'key', message: 'not editable' },
      ],
      shown,
    );
    expect(byField).toEqual({ url: 'must be https; too long' });
    expect(unmatched.map((e) => e.path)).toEqual(['schedule.at', 'key']);
  });

  it("sorts a union's schedules' and the links' errors to the fields shown", () => {
    const members = [blankMember(LA), { ...blankMember(LA), type: 'once' as const }];
    const shown = visibleFields('union', false, { members, then: [{ jobId: '', on: 'failed' }] });
    expect(shown).toEqual(
      expect.arrayContaining(['members', 'members.0.expr', 'members.1.at', 'calendar', 'roll', 'maxRuns', 'then.0.jobId']),
    );
    expect(shown).not.toContain('members.1.expr');
    const { byField, unmatched } = sortFieldErrors(
      [
        { path: 'schedule.schedules.0.expression', message: 'bad field' },
        { path: 'schedule.schedules.1.expression', message: 'not shown for a once' },
        { path: 'then.0.jobId', message: 'no such job' },
        { path: 'then', message: 'cycle: a → b → a' },
        { path: 'calendar.key', message: 'no such calendar' },
      ],
      shown,
    );
    expect(byField).toEqual({
      'members.0.expr': 'bad field',
      'then.0.jobId': 'no such job',
      then: 'cycle: a → b → a',
      calendar: 'no such calendar',
    });
    expect(unmatched.map((e) => e.path)).toEqual(['schedule.schedules.1.expression']);
  });
});
