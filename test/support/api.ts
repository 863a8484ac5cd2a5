/** A small HTTP client for tests, speaking to a Chime API over real HTTP (or to `app.fetch` in process). */
import { ADMIN_TOKEN } from './chime-process.ts';

export type ApiResponse<T = any> = { status: number; body: T; headers: Headers };
type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

export type Api = {
  request<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  get<T = any>(path: string): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
};

/** A client for `baseUrl` authenticated with `key` (null: no Authorization header). */
export function apiClient(baseUrl: string, key: string | null, fetchFn: Fetch = fetch): Api {
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetchFn(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed as any, headers: res.headers };
  };
  return {
    request,
    get: (path) => request('GET', path),
    post: (path, body, headers) => request('POST', path, body ?? {}, headers),
  };
}

export type TestTenant = { tenantId: string; apiKey: string; signingSecret: string; api: Api };

/** Creates a tenant through `POST /v1/tenants` with the test admin token. */
export async function createTestTenant(baseUrl: string, name = 'tenant', fetchFn: Fetch = fetch): Promise<TestTenant> {
  const res = await apiClient(baseUrl, ADMIN_TOKEN, fetchFn).post('/v1/tenants', { name });
  if (res.status !== 201) throw new Error(`tenant creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    tenantId: res.body.tenant.tenantId,
    apiKey: res.body.apiKey,
    signingSecret: res.body.signingSecret,
    api: apiClient(baseUrl, res.body.apiKey, fetchFn),
  };
}
