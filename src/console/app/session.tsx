/**
 * The signed-in session: the API key (sessionStorage), the tenant it belongs to, and `api()` bound to the key. Any
 * `401` signs the user out with the reason shown on the sign-in page (a revoked or expired key).
 */
import { type ComponentChildren, createContext } from 'preact';
import { useCallback, useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { holdsScope, type Scope } from '../../domain/scopes.ts';
import { ApiProblem, call, storedKey, storeKey } from './api.ts';
import type { Tenant } from './types.ts';

/** The signed-in tenant and the API bound to its key (`useSession`). */
export type Session = {
  tenant: Tenant;
  /** Whether the signed-in key holds `scope`: the console offers only what the key may do (API.md "Access control"). */
  can(scope: Scope): boolean;
  /** Calls the API as the signed-in tenant. @throws ApiProblem */
  api<T>(method: string, path: string, body?: unknown): Promise<T>;
  signOut(reason?: string): void;
};

const SessionContext = createContext<Session | null>(null);

/** The session of the page (only inside <SessionGate>). */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a session');
  return s;
}

/** Why a key was refused, in words a user can act on. */
function refusal(err: unknown): string {
  if (err instanceof ApiProblem && err.status === 401) return 'This API key was not accepted: it is wrong, revoked or expired.';
  if (err instanceof ApiProblem && err.status === 429) return 'Too many requests: wait a second and try again.';
  if (err instanceof ApiProblem) return `The service answered: ${err.detail || err.title}`;
  return String(err);
}

/** Shows the sign-in form until a key is accepted, then its children within the session. */
export function SessionGate({ children }: { children: ComponentChildren }) {
  const [key, setKey] = useState<string | null>(storedKey());
  const [tenant, setTenant] = useState<Tenant | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [checking, setChecking] = useState(key !== null);

  const signOut = useCallback((reason?: string) => {
    storeKey(null);
    setKey(null);
    setTenant(null);
    setMessage(reason ?? null);
  }, []);

  const signIn = useCallback(async (candidate: string) => {
    setChecking(true);
    try {
      const t = await call<Tenant>(candidate, 'GET', '/v1/tenant');
      storeKey(candidate);
      setKey(candidate);
      setTenant(t);
      setMessage(null);
    } catch (err) {
      // Only a refused key is forgotten: an outage or a rate limit must not sign the tab out for good.
      if (err instanceof ApiProblem && err.status === 401) storeKey(null);
      setKey(null);
      setMessage(refusal(err));
    } finally {
      setChecking(false);
    }
  }, []);

  useEffect(() => {
    const k = storedKey();
    if (k) void signIn(k);
  }, [signIn]);

  const session = useMemo<Session | null>(() => {
    if (!key || !tenant) return null;
    return {
      tenant,
      signOut,
      can: (scope) => holdsScope(tenant.apiKey.scopes, scope),
      async api<T>(method: string, path: string, body?: unknown) {
        try {
          return await call<T>(key, method, path, body);
        } catch (err) {
          if (err instanceof ApiProblem && err.status === 401)
            signOut('Signed out: this API key is no longer accepted (revoked or expired).');
          throw err;
        }
      },
    };
  }, [key, tenant, signOut]);

  if (!session) return <SignIn onSubmit={signIn} message={message} busy={checking} />;
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

function SignIn({ onSubmit, message, busy }: { onSubmit: (key: string) => void; message: string | null; busy: boolean }) {
  const [value, setValue] = useState('');
  return (
    <main class="signin">
      <h1>Chime console</h1>
      <form
        aria-busy={busy ? 'true' : undefined}
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) onSubmit(value.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="chk_…"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
          required
        />
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        {message && (
          <p class="error" role="alert">
            {message}
          </p>
        )}
        <p class="hint">The key stays in this browser tab only, and is forgotten when the tab closes.</p>
      </form>
    </main>
  );
}
