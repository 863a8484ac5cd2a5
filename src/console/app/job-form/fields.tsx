/**
 * The job form's controls, one component per kind (text, text area, choice, local time, check box), each tied to its
 * label, hint and error for assistive technology; they read and write the form through `FormApi`.
 */
import { Field } from '../ui.tsx';
import { controlId, type ErrorKey, type Errors, type FieldName, type FormState, LABELS, type TextName } from './form-model.ts';

/** The form as its controls see it: the values, the messages by field, and the setter. */
export type FormApi = {
  state: FormState;
  errors: Errors;
  set: <K extends FieldName>(name: K, value: FormState[K]) => void;
};

/** The attributes every control shares: id, name, and its error for assistive technology. */
export function keyAttrs(errors: Errors, key: ErrorKey) {
  const id = controlId(key);
  return {
    id,
    name: key,
    'aria-invalid': errors[key] ? (true as const) : undefined,
    'aria-describedby': errors[key] ? `${id}-error` : undefined,
  };
}
const controlAttrs = (f: FormApi, name: FieldName) => keyAttrs(f.errors, name);

/** What a text field may set besides its value (the attributes the form uses). */
type InputAttrs = {
  inputMode?: 'decimal' | 'numeric' | 'url';
  placeholder?: string;
  maxLength?: number;
  autocomplete?: string;
  spellcheck?: boolean;
};

/** A one-line text input (`url`: of type url, for a URL). */
export function TextField({
  f,
  name,
  hint,
  attrs = {},
  url,
}: {
  f: FormApi;
  name: TextName;
  hint?: string | undefined;
  attrs?: InputAttrs;
  url?: boolean;
}) {
  const common = {
    ...attrs,
    ...controlAttrs(f, name),
    value: f.state[name],
    onInput: (e: { currentTarget: HTMLInputElement }) => f.set(name, e.currentTarget.value),
  };
  return (
    <Field id={`f-${name}`} label={LABELS[name]} error={f.errors[name]} hint={hint}>
      {url ? <input type="url" {...common} /> : <input type="text" {...common} />}
    </Field>
  );
}

/** A text area (one entry per line). */
export function AreaField({ f, name, placeholder, hint }: { f: FormApi; name: TextName; placeholder: string; hint?: string }) {
  return (
    <Field id={`f-${name}`} label={LABELS[name]} error={f.errors[name]} hint={hint}>
      <textarea
        {...controlAttrs(f, name)}
        value={f.state[name]}
        placeholder={placeholder}
        spellcheck={false}
        onInput={(e) => f.set(name, e.currentTarget.value)}
      />
    </Field>
  );
}

/** A choice among `options`. */
export function SelectField({
  f,
  name,
  options,
  hint,
}: {
  f: FormApi;
  name: TextName | 'type';
  options: readonly string[];
  hint?: string;
}) {
  return (
    <Field id={`f-${name}`} label={LABELS[name]} error={f.errors[name]} hint={hint}>
      <select
        {...controlAttrs(f, name)}
        value={f.state[name]}
        onChange={(e) => f.set(name, e.currentTarget.value as FormState[typeof name])}
      >
        {options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
    </Field>
  );
}

/** A date and time on the viewer's wall clock (`datetime-local`); the hint names the zone. */
export function LocalTimeField({ f, name, hint }: { f: FormApi; name: 'at' | 'start' | 'end'; hint: string }) {
  return (
    <Field id={`f-${name}`} label={LABELS[name]} error={f.errors[name]} hint={hint}>
      <input {...controlAttrs(f, name)} type="datetime-local" value={f.state[name]} onInput={(e) => f.set(name, e.currentTarget.value)} />
    </Field>
  );
}

/** A check box, its label after it. */
export function CheckField({ f, name }: { f: FormApi; name: 'retryJitter' }) {
  const error = f.errors[name];
  return (
    <div class={`field check${error ? ' invalid' : ''}`}>
      <input {...controlAttrs(f, name)} type="checkbox" checked={f.state[name]} onChange={(e) => f.set(name, e.currentTarget.checked)} />
      <label for={`f-${name}`}>{LABELS[name]}</label>
      {error && (
        <small class="field-error" id={`f-${name}-error`} role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

/** The auth token: write-only, so an edit says whether one is set and sends it only when a new one is typed. */
export function TokenField({ f, isSet }: { f: FormApi; isSet: boolean }) {
  return (
    <Field
      id="f-token"
      label={LABELS.token}
      error={f.errors.token}
      hint={isSet ? 'Set: type a new one to replace it' : 'Optional: sent as Authorization: Bearer …'}
    >
      <input
        {...controlAttrs(f, 'token')}
        type="password"
        autocomplete="new-password"
        spellcheck={false}
        placeholder={isSet ? 'unchanged' : ''}
        value={f.state.token}
        onInput={(e) => f.set('token', e.currentTarget.value)}
      />
    </Field>
  );
}
