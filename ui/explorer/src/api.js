// The one HTTP client of the Explorer. Credentials live in this module's
// memory only: the admin token goes out as the X-Admin-Token header and the
// signed-in bearer token as Authorization, never in a URL, a body or storage.
// Every call reports timing (time to first byte, total), bytes and the API's
// error {message, code} so the page can show them.

let settings = { prefix: '', environment: null, environment_color: 'secondary', sql: false };
let adminToken = '';
let bearerToken = '';
let bearerScopes = null;

export function configure(s) {
  settings = s;
}

export function getSettings() {
  return settings;
}

export function setAdminToken(t) {
  adminToken = t || '';
}

export function hasAdminToken() {
  return adminToken !== '';
}

// scopes: what the issuer granted with the token (its token response), or
// null when unknown.
export function setBearerToken(t, scopes) {
  bearerToken = t || '';
  bearerScopes = bearerToken && Array.isArray(scopes) ? scopes : null;
}

export function hasBearerToken() {
  return bearerToken !== '';
}

// Whether the signed-in token may open the manage routes (/queries): it
// needs the scope datasets:manage, so a token granted without it is not
// sent there (the server would only answer 403).
export function bearerMayManage() {
  return bearerToken !== '' && (bearerScopes === null || bearerScopes.includes('datasets:manage'));
}

export function apiUrl(path) {
  return `${settings.prefix || ''}/api/v1${path}`;
}

function headers(extra) {
  const h = { ...extra };
  if (adminToken) h['X-Admin-Token'] = adminToken;
  if (bearerToken) h.Authorization = `Bearer ${bearerToken}`;
  return h;
}

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function errorOf(resp) {
  let message = resp.statusText || `HTTP ${resp.status}`;
  let code = `http_${resp.status}`;
  try {
    const body = await resp.json();
    if (body && typeof body.error === 'string') message = body.error;
    if (body && typeof body.code === 'string') code = body.code;
  } catch (_) {
    /* not JSON: keep the status line */
  }
  return new ApiError(resp.status, message, code);
}

// One API call. opts: method, json (body), query (object), accept ('json' |
// 'arrow' | 'blob'). Resolves to {status, data, headers, timing}; rejects with
// ApiError for any non-2xx answer.
export async function call(path, opts = {}) {
  const method = opts.method || (opts.json !== undefined ? 'POST' : 'GET');
  let url = apiUrl(path);
  if (opts.query) {
    const q = new URLSearchParams(opts.query).toString();
    if (q) url += `?${q}`;
  }
  const h = {};
  if (opts.json !== undefined) h['Content-Type'] = 'application/json';
  if (opts.accept === 'arrow') h.Accept = 'application/vnd.apache.arrow.stream';
  const t0 = performance.now();
  let resp;
  try {
    resp = await fetch(url, {
      method,
      headers: headers(h),
      body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, `network error: ${e.message}`, 'network_error');
  }
  const ttfb = performance.now() - t0;
  if (!resp.ok) throw await errorOf(resp);
  let data;
  let bytes;
  if (opts.accept === 'arrow' || opts.accept === 'blob') {
    const buf = await resp.arrayBuffer();
    bytes = buf.byteLength;
    data = opts.accept === 'blob' ? new Blob([buf], { type: resp.headers.get('Content-Type') || '' }) : new Uint8Array(buf);
  } else {
    const text = await resp.text();
    bytes = new TextEncoder().encode(text).length;
    data = text ? JSON.parse(text) : null;
  }
  const total = performance.now() - t0;
  return { status: resp.status, data, headers: resp.headers, timing: { ttfb, total, bytes } };
}

// Whether a route exists for this client: the /queries routes answer 404
// when neither an admin token nor OIDC is configured on the server.
export async function routeExists(path) {
  try {
    await call(path);
    return true;
  } catch (e) {
    return e.status !== 404;
  }
}
