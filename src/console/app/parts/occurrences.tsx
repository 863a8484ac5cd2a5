/** The next occurrences of a schedule, as the job form's preview and a job's page list them. */
import { Time } from '../ui.tsx';

/** A list of upcoming instants, each in the viewer's zone and, for a schedule in another zone, in that one too. */
export function Occurrences({ list, zone }: { list: readonly string[]; zone?: string | undefined }) {
  return (
    <ol class="occurrences" aria-label="Next occurrences">
      {list.map((iso) => (
        <li>
          <Time iso={iso} zone={zone} />
        </li>
      ))}
    </ol>
  );
}
