/**
 * The job form's fieldsets: the job, its schedule (the fields of its type, the time zone picker, the live preview),
 * the callback, retries, delivery and data. Each shows what `FormApi` holds and writes back through it.
 */
import type { ComponentChildren } from 'preact';
import { useMemo } from 'preact/hooks';
import type { Calendar } from '../types.ts';
import { Field } from '../ui.tsx';
import { zoneChoices } from '../zones.ts';
import { AreaField, CheckField, type FormApi, keyAttrs, LocalTimeField, SelectField, TextField, TokenField } from './fields.tsx';
import {
  ADVANCED_FIELDS,
  CALENDAR_ROLLS,
  CATCH_UP_POLICIES,
  DELIVERY_MODES,
  HTTP_METHODS,
  JITTER_MODES,
  LABELS,
  OVERLAP_POLICIES,
  RETRY_STRATEGIES,
  SCHEDULE_TYPES,
  scheduleFields,
} from './form-model.ts';
import { ThenLinks } from './then-links.tsx';
import { scheduleHints, UnionFields } from './union-fields.tsx';

/** A fieldset with its legend. */
function Section({ legend, children }: { legend: string; children: ComponentChildren }) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {children}
    </fieldset>
  );
}

/** Name, and (for a new job) key. */
export function JobSection({ f, edit }: { f: FormApi; edit: boolean }) {
  return (
    <Section legend="Job">
      <div class="grid">
        <TextField f={f} name="name" hint="Optional" attrs={{ maxLength: 200, autocomplete: 'off' }} />
        {!edit && (
          <TextField
            f={f}
            name="key"
            hint="Optional, unique: letters, digits and . _ : ~ -"
            attrs={{ maxLength: 200, autocomplete: 'off', spellcheck: false }}
          />
        )}
      </div>
    </Section>
  );
}

/**
 * The schedule: its type, the fields of that type (a union: its schedules), the calendar and the limit of runs, and
 * `preview` (the next occurrences) under them.
 * @param calendars the tenant's calendars to choose from; undefined while they load, null when this key cannot list
 *   them (the key is typed)
 */
export function ScheduleSection({
  f,
  preview,
  calendars,
}: {
  f: FormApi;
  preview: ComponentChildren;
  calendars: Calendar[] | null | undefined;
}) {
  const zones = useMemo(() => zoneChoices(f.state.tz), [f.state.tz]);
  const shown = scheduleFields(f.state.type);
  const hints = scheduleHints();
  return (
    <Section legend="Schedule">
      <div class="grid">
        <SelectField f={f} name="type" options={SCHEDULE_TYPES} hint={f.state.type === 'union' ? 'Several schedules as one' : undefined} />
        {shown.includes('at') && <LocalTimeField f={f} name="at" hint={hints.at} />}
        {shown.includes('delay') && <TextField f={f} name="delay" hint="After the job is saved" attrs={{ inputMode: 'decimal' }} />}
        {shown.includes('every') && <TextField f={f} name="every" hint={hints.every} attrs={{ inputMode: 'decimal' }} />}
        {shown.includes('expr') && (
          <TextField f={f} name="expr" hint={hints.expr} attrs={{ placeholder: '0 9 * * *', spellcheck: false, autocomplete: 'off' }} />
        )}
        {shown.includes('tz') && <SelectField f={f} name="tz" options={zones} hint={hints.tz} />}
        {shown.includes('start') && <LocalTimeField f={f} name="start" hint={hints.start} />}
        {shown.includes('end') && <LocalTimeField f={f} name="end" hint={hints.end} />}
      </div>
      {shown.includes('dates') && (
        <AreaField f={f} name="dates" placeholder={'2026-12-01T09:00\n2026-12-24T18:30:00Z'} hint={hints.dates} />
      )}
      {shown.includes('members') && <UnionFields f={f} />}
      <div class="grid">
        <CalendarField f={f} calendars={calendars} />
        <SelectField
          f={f}
          name="roll"
          options={CALENDAR_ROLLS}
          hint="With a calendar: on a weekend day or holiday, skip the run, or move it to the next / previous business day"
        />
        <TextField
          f={f}
          name="maxRuns"
          hint="Empty: no limit. After this many scheduled runs the job completes"
          attrs={{ inputMode: 'numeric' }}
        />
      </div>
      {preview}
    </Section>
  );
}

/** The calendar: chosen among the tenant's (its name beside its key), or typed when they cannot be listed. */
function CalendarField({ f, calendars }: { f: FormApi; calendars: Calendar[] | null | undefined }) {
  const value = f.state.calendar;
  if (calendars === null) {
    return (
      <TextField
        f={f}
        name="calendar"
        hint="The key of one of your calendars; empty: none"
        attrs={{ spellcheck: false, autocomplete: 'off', maxLength: 100 }}
      />
    );
  }
  const known = calendars === undefined || calendars.some((c) => c.key === value);
  return (
    <Field id="f-calendar" label={LABELS.calendar} error={f.errors.calendar} hint="Weekend days and holidays (see Calendars)">
      <select {...keyAttrs(f.errors, 'calendar')} value={value} onChange={(e) => f.set('calendar', e.currentTarget.value)}>
        <option value="">none</option>
        {(calendars ?? []).map((c) => (
          <option value={c.key}>{c.name ? `${c.name} (${c.key})` : c.key}</option>
        ))}
        {value && !known && <option value={value}>{value} (not found)</option>}
        {value && calendars === undefined && <option value={value}>{value}</option>}
      </select>
    </Field>
  );
}

/** URL, method, auth token, success codes, timeout, headers. */
export function CallbackSection({ f, tokenSet }: { f: FormApi; tokenSet: boolean }) {
  return (
    <Section legend="Callback">
      <TextField
        f={f}
        name="url"
        url
        attrs={{ inputMode: 'url', placeholder: 'https://example.com/hooks/report', spellcheck: false, autocomplete: 'off' }}
      />
      <div class="grid">
        <SelectField f={f} name="method" options={HTTP_METHODS} />
        <TokenField f={f} isSet={tokenSet} />
        <TextField f={f} name="codes" hint="Codes or classes, comma-separated" attrs={{ placeholder: '2xx, 304', spellcheck: false }} />
        <TextField f={f} name="timeout" hint="1000 to 60000" attrs={{ inputMode: 'numeric' }} />
      </div>
      <AreaField f={f} name="headers" placeholder="X-Team: ops" />
    </Section>
  );
}

/** The retry policy. */
export function RetrySection({ f }: { f: FormApi }) {
  return (
    <Section legend="Retries">
      <div class="grid">
        <SelectField f={f} name="strategy" options={RETRY_STRATEGIES} />
        <TextField f={f} name="attempts" hint="The first attempt included" attrs={{ inputMode: 'numeric' }} />
        <TextField f={f} name="initial" attrs={{ inputMode: 'numeric' }} />
        <TextField f={f} name="maxDelay" attrs={{ inputMode: 'numeric' }} />
        {f.state.strategy === 'schedule' && (
          <TextField
            f={f}
            name="delays"
            hint="Retry n waits the n-th, comma-separated; attempts = delays + 1"
            attrs={{ placeholder: '1000, 10000, 60000', spellcheck: false }}
          />
        )}
      </div>
    </Section>
  );
}

/** Relevancy window, delivery mode, pause after failures, and the advanced options (opened when one is in error). */
export function DeliverySection({ f }: { f: FormApi }) {
  const advancedInvalid = ADVANCED_FIELDS.some((name) => f.errors[name]);
  return (
    <Section legend="Delivery">
      <div class="grid">
        <TextField
          f={f}
          name="relevancy"
          hint="Empty: none. A run not started this long after its time is expired, never sent"
          attrs={{ inputMode: 'decimal' }}
        />
        <SelectField f={f} name="delivery" options={DELIVERY_MODES} hint="at-most-once never re-sends after an ambiguous outcome" />
        <TextField f={f} name="pause" hint="Failed runs in a row before the job pauses; 0 = never" attrs={{ inputMode: 'numeric' }} />
      </div>
      <details class="advanced" open={advancedInvalid || undefined}>
        <summary>More options: backoff multiplier, retry jitter, overlap, catch-up, jitter</summary>
        <div class="grid">
          <TextField f={f} name="multiplier" hint="Exponential backoff: 1 to 10" attrs={{ inputMode: 'decimal' }} />
          <SelectField
            f={f}
            name="overlap"
            options={OVERLAP_POLICIES}
            hint="While a run is in flight: allow another; skip the next; or buffer-one: the next waits for it to end (later ones skipped)"
          />
          <SelectField f={f} name="catchUp" options={CATCH_UP_POLICIES} hint="After downtime: one missed run, all, or none" />
          <TextField f={f} name="jitter" hint="Each run fires up to this much later" attrs={{ inputMode: 'numeric' }} />
          <SelectField
            f={f}
            name="jitterMode"
            options={JITTER_MODES}
            hint="stable: the same offset every time; random: a new one each run; spread: where your runs to this destination are fewest"
          />
        </div>
        <CheckField f={f} name="retryJitter" />
      </details>
    </Section>
  );
}

/** The jobs to trigger when a run of this one ends (`then`). */
export function ThenSection({ f, selfId }: { f: FormApi; selfId: string | null }) {
  return (
    <Section legend="Then">
      <p class="hint">Trigger other jobs of yours when a run of this one ends: each gets a run of its own, told which run came before.</p>
      <ThenLinks f={f} selfId={selfId} />
    </Section>
  );
}

/** Metadata, and the request body: a JSON payload, or a body sent as is with its content type. */
export function DataSection({ f }: { f: FormApi }) {
  return (
    <Section legend="Data">
      <AreaField f={f} name="metadata" placeholder="team=ops" hint="At most 20 pairs" />
      <AreaField f={f} name="payload" placeholder={'{ "report": "daily" }'} hint="The JSON body of each callback (not for GET)" />
      <AreaField
        f={f}
        name="body"
        placeholder={'<report day="daily"/>'}
        hint="Or a body that is not JSON, sent as is (≤ 256 KiB); not with a payload"
      />
      <TextField
        f={f}
        name="contentType"
        hint="Optional: application/json for a payload, text/plain for a body"
        attrs={{ placeholder: 'application/xml', spellcheck: false, autocomplete: 'off' }}
      />
    </Section>
  );
}
