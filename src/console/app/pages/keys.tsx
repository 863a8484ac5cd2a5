/**
 * `/console/keys`: the tenant's API keys (create, with the key shown once; list; revoke) and its signing secret
 * (rotate, with the new secret shown once). Secrets are kept in component state only, never stored or put in a URL.
 *
 * `GET /v1/api-keys` lists only keys not revoked: the keys revoked from this tab stay listed, as revoked, for as long
 * as the tab is signed in (kept in sessionStorage without any secret: name, prefix and times only).
 */
import { useMemo, useState } from 'preact/hooks';
import { ALL_SCOPES, SCOPES } from '../../../domain/scopes.ts';
import { ApiProblem, storedKey } from '../api.ts';
import { useSession } from '../session.tsx';
import type { ApiKey, CreatedKey, Rotated } from '../types.ts';
import { ConfirmButton, CopyButton, ErrorNote, Field, SortedHeader, Status, Time, useAction, useAsync } from '../ui.tsx';
import { isoOfWallInput, viewerZone } from '../zones.ts';

/** A key revoked from this tab, as listed. */
type RevokedKey = ApiKey & { revokedAt: string };

const REVOKED_STORAGE = 'chime.console.revokedKeys';

/** The keys revoked from this tab (sessionStorage; cleared when the tab signs out). */
function revokedKeys(): RevokedKey[] {
  try {
    return JSON.parse(sessionStorage.getItem(REVOKED_STORAGE) ?? '[]') as RevokedKey[];
  } catch {
    return [];
  }
}
function rememberRevoked(key: ApiKey): void {
  const kept = revokedKeys().filter((k) => k.keyId !== key.keyId);
  sessionStorage.setItem(REVOKED_STORAGE, JSON.stringify([{ ...key, revokedAt: new Date().toISOString() }, ...kept]));
}

/** The keys and secrets page: API keys, then the signing secret. */
export function KeysPage() {
  return (
    <section>
      <h1>Keys and secrets</h1>
      <ApiKeys />
      <SigningSecret />
    </section>
  );
}

/** A key's scopes in words: `*` is every scope. (A key this tab remembers as revoked from before scopes has none.) */
const scopeWords = (scopes: readonly string[] | undefined) => (!scopes || scopes.includes(ALL_SCOPES) ? 'all' : scopes.join(', '));

function ApiKeys() {
  const { api, signOut, tenant } = useSession();
  // A key grants at most its own scopes (API.md "Access control and audit"): only those are offered.
  const own = tenant.apiKey.scopes;
  const holdsAll = own.includes(ALL_SCOPES);
  const grantable = SCOPES.filter((scope) => holdsAll || own.includes(scope));
  const [everything, setEverything] = useState(holdsAll);
  const [picked, setPicked] = useState<ReadonlySet<string>>(() => new Set(holdsAll ? [] : grantable));
  const keys = useAsync(() => api<{ apiKeys: ApiKey[] }>('GET', '/v1/api-keys'), []);
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  // Creating shows the new key once (the outcome) and reloads the list.
  const { busy, outcome: created, error: createError, setOutcome: setCreated, run } = useAction<CreatedKey>(keys.reload);
  const [revokeError, setRevokeError] = useState<unknown>(null);
  const mine = storedKey();
  const zone = useMemo(viewerZone, []);
  /** Whether `k` is the key this tab is signed in with. */
  const isMine = (k: ApiKey) => Boolean(mine?.startsWith(k.prefix));
  const fieldError = (path: string) => (createError instanceof ApiProblem ? createError.fieldError(path) : undefined);

  const create = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      const expiresAt = isoOfWallInput(expires, zone);
      const scopes = everything ? [ALL_SCOPES] : SCOPES.filter((scope) => picked.has(scope));
      const k = await api<CreatedKey>('POST', '/v1/api-keys', { name: name.trim(), ...(expiresAt ? { expiresAt } : {}), scopes });
      setName('');
      setExpires('');
      return k;
    });
  };

  const revoke = async (k: ApiKey) => {
    setRevokeError(null);
    try {
      await api<void>('DELETE', `/v1/api-keys/${encodeURIComponent(k.keyId)}`);
      if (isMine(k)) return signOut('You revoked the API key this tab was signed in with: sign in with another key.');
      rememberRevoked(k);
      if (created?.keyId === k.keyId) setCreated(null);
    } catch (err) {
      setRevokeError(err);
    }
    keys.reload();
  };

  const nameError = fieldError('name');
  const expiresError = fieldError('expiresAt');
  const scopesError = fieldError('scopes');
  const otherError = createError && !nameError && !expiresError && !scopesError ? createError : null;
  const active = keys.data?.apiKeys ?? [];
  const revoked = revokedKeys().filter((r) => !active.some((k) => k.keyId === r.keyId));
  const list: (ApiKey & { revokedAt?: string })[] = [...active, ...revoked].sort((x, y) => y.createdAt.localeCompare(x.createdAt));

  return (
    <section aria-labelledby="api-keys-title">
      <h2 id="api-keys-title">API keys</h2>
      <p class="hint">Each key acts as this tenant on the API. A key is shown once, when it is created: store it in your secret manager.</p>
      <form class="toolbar key-form" onSubmit={create}>
        <Field id="key-name" label="Key name" error={nameError}>
          <input
            id="key-name"
            type="text"
            required
            maxLength={200}
            autocomplete="off"
            value={name}
            aria-invalid={nameError ? true : undefined}
            aria-describedby={nameError ? 'key-name-error' : undefined}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field id="key-expires" label="Expires at" error={expiresError}>
          <input
            id="key-expires"
            type="datetime-local"
            value={expires}
            aria-invalid={expiresError ? true : undefined}
            aria-describedby={expiresError ? 'key-expires-error' : 'key-expires-hint'}
            onInput={(e) => setExpires(e.currentTarget.value)}
            onChange={(e) => setExpires(e.currentTarget.value)}
          />
          <small class="hint" id="key-expires-hint">
            Optional, in your time zone ({zone}); empty: never expires.
          </small>
        </Field>
        <fieldset class="scopes" aria-describedby={scopesError ? 'key-scopes-error' : undefined}>
          <legend>Scopes</legend>
          {holdsAll && (
            <label class="scope-option">
              <input type="checkbox" checked={everything} onChange={(e) => setEverything(e.currentTarget.checked)} /> Everything (*)
            </label>
          )}
          {!everything &&
            grantable.map((scope) => (
              <label key={scope} class="scope-option">
                <input
                  type="checkbox"
                  checked={picked.has(scope)}
                  onChange={(e) => {
                    const next = new Set(picked);
                    if (e.currentTarget.checked) next.add(scope);
                    else next.delete(scope);
                    setPicked(next);
                  }}
                />{' '}
                <code>{scope}</code>
              </label>
            ))}
          {scopesError && (
            <small class="error" id="key-scopes-error">
              {scopesError}
            </small>
          )}
        </fieldset>
        <button type="submit" class="primary" disabled={busy}>
          Create key
        </button>
      </form>
      <ErrorNote error={otherError} />
      {created && (
        <div class="secret" role="status">
          <strong>New key (shown once):</strong> <code>{created.key}</code> <CopyButton text={created.key} />
        </div>
      )}

      <ErrorNote error={keys.error} />
      <ErrorNote error={revokeError} />
      {keys.data && list.length === 0 ? (
        <p class="muted">No API keys.</p>
      ) : (
        <div class="table-wrap" aria-busy={keys.loading}>
          <table class="keys stack">
            <caption class="order">Newest first, by when each key was created.</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Scopes</th>
                <SortedHeader label="Created" />
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.keyId} class={k.revokedAt ? 'revoked' : undefined}>
                  <td class="wrap" data-label="Name">
                    {k.name}
                    {!k.revokedAt && isMine(k) && <span class="muted"> (this tab)</span>}
                  </td>
                  <td data-label="Prefix">
                    <code>{k.prefix}</code>
                  </td>
                  <td class="wrap" data-label="Scopes">
                    {scopeWords(k.scopes)}
                  </td>
                  <td data-label="Created">
                    <Time iso={k.createdAt} />
                  </td>
                  <td data-label="Expires">{k.expiresAt ? <Time iso={k.expiresAt} /> : <span class="muted">never</span>}</td>
                  <td data-label="Last used">{k.lastUsedAt ? <Time iso={k.lastUsedAt} /> : <span class="muted">never</span>}</td>
                  <td data-label="State">
                    {k.revokedAt ? (
                      <>
                        <Status status="revoked" /> <Time iso={k.revokedAt} />
                      </>
                    ) : (
                      <Status status="active" />
                    )}
                  </td>
                  <td class="row-end">
                    {!k.revokedAt && (
                      <ConfirmButton
                        label="Revoke"
                        question={
                          isMine(k)
                            ? `Revoke key ${k.name}? This tab is signed in with it: revoking it signs you out at once.`
                            : `Revoke key ${k.name}? Requests with it stop at once.`
                        }
                        confirmLabel={isMine(k) ? 'Yes, revoke and sign out' : 'Yes, revoke'}
                        danger
                        onConfirm={() => void revoke(k)}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!keys.data && !keys.error && <p class="muted">Loading…</p>}
    </section>
  );
}

function SigningSecret() {
  const { api } = useSession();
  const { busy, outcome: rotated, error, run } = useAction<Rotated>(() => undefined);
  const rotate = () => run(() => api<Rotated>('POST', '/v1/signing-secrets/rotate'));

  return (
    <section aria-labelledby="signing-secret-title">
      <h2 id="signing-secret-title">Signing secret</h2>
      <p>
        Chime signs every callback it sends with this secret (the <code>webhook-signature</code> header), so your receivers can check that a
        request comes from Chime. The secret is never shown again after it is made. After a rotation the old secret keeps signing alongside
        the new one for 24 h, so receivers have a day to learn the new one.
      </p>
      <div class="actions">
        {busy ? (
          <button type="button" disabled>
            Rotating…
          </button>
        ) : (
          <ConfirmButton
            label="Rotate signing secret"
            question="Rotate? Receivers must learn the new secret within 24 h."
            confirmLabel="Yes, rotate"
            onConfirm={() => void rotate()}
          />
        )}
      </div>
      <ErrorNote error={error} />
      {rotated && (
        <>
          <div class="secret" role="status">
            <strong>New signing secret (shown once):</strong> <code>{rotated.signingSecret}</code>{' '}
            <CopyButton text={rotated.signingSecret} />
          </div>
          <p>
            The previous secret keeps signing until <Time iso={rotated.previousValidUntil} />.
          </p>
        </>
      )}
    </section>
  );
}
