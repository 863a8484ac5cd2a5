/**
 * A union's schedules in the job form (schedule type `union`): each one of a kind a union may hold (once, interval,
 * dates, cron) with that kind's fields, in its own group ("Schedule 2"); schedules are added and removed in place,
 * between the 2 and 10 the API takes.
 */
import type { ComponentChildren } from 'preact';
import { useMemo } from 'preact/hooks';
import { Field } from '../ui.tsx';
import { viewerZone, zoneChoices } from '../zones.ts';
import { type FormApi, keyAttrs } from './fields.tsx';
import {
  blankMember,
  controlId,
  LABELS,
  MAX_UNION_SCHEDULES,
  MEMBER_TYPES,
  type MemberField,
  type MemberForm,
  type MemberType,
  MIN_UNION_SCHEDULES,
  memberFields,
  memberKey,
} from './form-model.ts';

/** The hints of a schedule's fields (the same as the form's own schedule's). */
export function scheduleHints(): Record<MemberField, string> {
  const yours = `in your time zone (${viewerZone()})`;
  return {
    at: `In your time zone (${viewerZone()})`,
    every: 'At least 1 second',
    expr: 'minute hour day-of-month month day-of-week (6 fields: seconds first), or @daily, @hourly…',
    tz: 'The zone whose clock the expression follows',
    start: `Optional, ${yours}`,
    end: `Optional, ${yours}`,
    dates: `RFC 3339 with an offset, or 2026-12-01T09:00 ${yours}`,
  };
}

/** A union's schedules, and the buttons that add and remove them. */
export function UnionFields({ f }: { f: FormApi }) {
  const members = f.state.members;
  const zones = useMemo(() => zoneChoices(), []);
  const update = (i: number, patch: Partial<MemberForm>) =>
    f.set(
      'members',
      members.map((m, j) => (j === i ? { ...m, ...patch } : m)),
    );
  const error = f.errors.members;
  return (
    <div class={`union${error ? ' invalid' : ''}`}>
      {members.map((m, i) => (
        <MemberFields
          f={f}
          i={i}
          member={m}
          zones={zones}
          update={(patch) => update(i, patch)}
          remove={
            members.length > MIN_UNION_SCHEDULES
              ? () =>
                  f.set(
                    'members',
                    members.filter((_, j) => j !== i),
                  )
              : undefined
          }
        />
      ))}
      <div class="actions">
        <button
          type="button"
          disabled={members.length >= MAX_UNION_SCHEDULES}
          onClick={() => f.set('members', [...members, blankMember(viewerZone())])}
        >
          Add a schedule
        </button>
        <small class="hint">
          {MIN_UNION_SCHEDULES} to {MAX_UNION_SCHEDULES} schedules; a time two of them share fires once
        </small>
      </div>
      {error && (
        <small class="field-error" id={`${controlId('members')}-error`} role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

/** One schedule of the union: its kind, its fields, and (past the fewest a union needs) a button that removes it. */
function MemberFields({
  f,
  i,
  member,
  zones,
  update,
  remove,
}: {
  f: FormApi;
  i: number;
  member: MemberForm;
  zones: string[];
  update: (patch: Partial<MemberForm>) => void;
  remove: (() => void) | undefined;
}) {
  const hints = scheduleHints();
  const shown = memberFields(member.type);
  const bound = (field: MemberField | 'type', label: string, hint: string | undefined, control: ComponentChildren) => (
    <Field id={controlId(memberKey(i, field))} label={label} error={f.errors[memberKey(i, field)]} hint={hint}>
      {control}
    </Field>
  );
  const attrs = (field: MemberField | 'type') => keyAttrs(f.errors, memberKey(i, field));
  const text = (field: MemberField, extra: Record<string, unknown> = {}) =>
    bound(
      field,
      LABELS[field],
      hints[field],
      <input type="text" {...attrs(field)} {...extra} value={member[field]} onInput={(e) => update({ [field]: e.currentTarget.value })} />,
    );
  const local = (field: 'at' | 'start' | 'end') =>
    bound(
      field,
      LABELS[field],
      hints[field],
      <input {...attrs(field)} type="datetime-local" value={member[field]} onInput={(e) => update({ [field]: e.currentTarget.value })} />,
    );
  const tzChoices = zones.includes(member.tz) ? zones : [...zones, member.tz];
  return (
    <fieldset class="member">
      <legend>Schedule {i + 1}</legend>
      <div class="grid">
        {bound(
          'type',
          'Kind',
          undefined,
          <select {...attrs('type')} value={member.type} onChange={(e) => update({ type: e.currentTarget.value as MemberType })}>
            {MEMBER_TYPES.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>,
        )}
        {shown.includes('at') && local('at')}
        {shown.includes('every') && text('every', { inputMode: 'decimal' })}
        {shown.includes('expr') && text('expr', { placeholder: '0 9 * * *', spellcheck: false, autocomplete: 'off' })}
        {shown.includes('tz') &&
          bound(
            'tz',
            LABELS.tz,
            hints.tz,
            <select {...attrs('tz')} value={member.tz} onChange={(e) => update({ tz: e.currentTarget.value })}>
              {tzChoices.map((z) => (
                <option value={z}>{z}</option>
              ))}
            </select>,
          )}
        {shown.includes('start') && local('start')}
        {shown.includes('end') && local('end')}
      </div>
      {shown.includes('dates') &&
        bound(
          'dates',
          LABELS.dates,
          hints.dates,
          <textarea
            {...attrs('dates')}
            value={member.dates}
            placeholder={'2026-12-01T09:00\n2026-12-24T18:30:00Z'}
            spellcheck={false}
            onInput={(e) => update({ dates: e.currentTarget.value })}
          />,
        )}
      {remove && (
        <button type="button" onClick={remove}>
          Remove schedule {i + 1}
        </button>
      )}
    </fieldset>
  );
}
