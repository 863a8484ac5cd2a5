/** Any path of the console that is no page: says so, with the way back (rather than showing another page). */
import { useLocation } from 'preact-iso';

/** The not-found page. */
export function NotFoundPage() {
  const { path } = useLocation();
  return (
    <section>
      <h1>Page not found</h1>
      <p class="notice">
        There is no console page at <code>{path}</code>.
      </p>
      <p>
        <a href="/console/jobs">Go to the jobs</a>
      </p>
    </section>
  );
}
