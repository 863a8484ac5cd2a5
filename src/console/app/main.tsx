/**
 * The tenant console (API.md "The console"): a Preact single-page app at `/console`, routed by path with preact-iso,
 * signed in with an API key, talking only to `/v1` on the same origin.
 */
import 'uplot/dist/uPlot.min.css';
import './console.css';
import { render } from 'preact';
import { useEffect } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { setIcon } from './icon.ts';
import { AuditPage } from './pages/audit.tsx';
import { CalendarsPage } from './pages/calendars.tsx';
import { DeadLettersPage } from './pages/dead-letters.tsx';
import { FlowControlsPage } from './pages/flow-controls.tsx';
import { JobPage } from './pages/job.tsx';
import { JobFormPage } from './pages/job-form.tsx';
import { JobsPage } from './pages/jobs.tsx';
import { KeysPage } from './pages/keys.tsx';
import { NotFoundPage } from './pages/not-found.tsx';
import { RunPage } from './pages/run.tsx';
import { RunsPage } from './pages/runs.tsx';
import { UsagePage } from './pages/usage.tsx';
import { SessionGate, useSession } from './session.tsx';

/** The pages of the navigation, each shown only to a key with the scope that reads it. */
const NAV = [
  ['/console/jobs', 'Jobs', 'jobs:read'],
  ['/console/runs', 'Runs', 'runs:read'],
  ['/console/dead-letters', 'Dead letters', 'runs:read'],
  ['/console/usage', 'Usage', 'usage:read'],
  ['/console/flow-controls', 'Flow controls', 'flow-controls:manage'],
  ['/console/calendars', 'Calendars', 'calendars:manage'],
  ['/console/keys', 'Keys and secrets', 'keys:manage'],
  ['/console/audit', 'Audit log', 'audit:read'],
] as const;

function Layout() {
  const { tenant, signOut, can } = useSession();
  const { path } = useLocation();
  return (
    <div class="layout">
      <header class="top">
        <a class="brand" href="/console/jobs">
          Chime
        </a>
        <nav aria-label="Main">
          {NAV.filter(([, , scope]) => can(scope)).map(([href, label]) => (
            <a href={href} aria-current={path.startsWith(href) ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <span class="tenant" title={tenant.tenantId}>
          {tenant.name}
        </span>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main>
        <Router>
          <Route path="/console/jobs" component={JobsPage} />
          <Route path="/console/jobs/new" component={JobFormPage} />
          <Route path="/console/jobs/:jobId/edit" component={JobFormPage} />
          <Route path="/console/jobs/:jobId" component={JobPage} />
          <Route path="/console/runs" component={RunsPage} />
          <Route path="/console/runs/:runId" component={RunPage} />
          <Route path="/console/dead-letters" component={DeadLettersPage} />
          <Route path="/console/keys" component={KeysPage} />
          <Route path="/console/usage" component={UsagePage} />
          <Route path="/console/audit" component={AuditPage} />
          <Route path="/console/flow-controls" component={FlowControlsPage} />
          <Route path="/console/calendars" component={CalendarsPage} />
          <Route path="/console" component={ToJobs} />
          <Route default component={NotFoundPage} />
        </Router>
      </main>
    </div>
  );
}

/** `/console`: the job list. */
function ToJobs() {
  const { route } = useLocation();
  useEffect(() => route('/console/jobs', true), [route]);
  return null;
}

function App() {
  return (
    <LocationProvider>
      <SessionGate>
        <Layout />
      </SessionGate>
    </LocationProvider>
  );
}

setIcon();
render(<App />, document.getElementById('app')!);
