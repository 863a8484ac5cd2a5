/**
 * The Since and Until fields of a filtered list (the runs feed, the audit log): `datetime-local` inputs in the viewer's
 * time zone, holding UTC ISO instants (`''`: unbounded), Until excluded.
 */
import { Field } from '../ui.tsx';
import { isoOfWallInput, wallInputOf } from '../zones.ts';

/**
 * @param idPrefix the inputs' ids are `<idPrefix>-since` and `<idPrefix>-until`
 * @param zone the viewer's IANA time zone the inputs are in
 * @param onChange called with the changed bound as a UTC ISO instant (`''` when cleared)
 */
export function TimeSpanFields({
  idPrefix,
  since,
  until,
  zone,
  onChange,
}: {
  idPrefix: string;
  since: string;
  until: string;
  zone: string;
  onChange: (patch: { since: string } | { until: string }) => void;
}) {
  return (
    <>
      <Field id={`${idPrefix}-since`} label="Since">
        <input
          id={`${idPrefix}-since`}
          type="datetime-local"
          value={wallInputOf(since, zone)}
          onChange={(e) => onChange({ since: isoOfWallInput(e.currentTarget.value, zone) })}
        />
      </Field>
      <Field id={`${idPrefix}-until`} label="Until">
        <input
          id={`${idPrefix}-until`}
          type="datetime-local"
          value={wallInputOf(until, zone)}
          onChange={(e) => onChange({ until: isoOfWallInput(e.currentTarget.value, zone) })}
        />
      </Field>
    </>
  );
}
