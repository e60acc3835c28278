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

// Whether an admin token opens the admin routes here: the saved-queries
// listing answers 200 to a good one, 401 to a wrong one, and is hidden (404)
// when the server has neither ADMIN_TOKEN nor [auth].
export async function checkAdminToken(token) {
  let r;
  try {
    r = await fetch(apiUrl('/queries'), { headers: { 'X-Admin-Token': token }, cache: 'no-store' });
  } catch (e) {
    return { ok: false, message: `network error: ${e.message}` };
  }
  if (r.ok) return { ok: true };
  if (r.status === 404) return { ok: false, message: 'this server has no admin token (ADMIN_TOKEN is not set)' };
  if (r.status === 401 || r.status === 403) return { ok: false, message: 'wrong admin token' };
  return { ok: false, message: `the server answered ${r.status}` };
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

// A decimal or a wide integer keeps the text the server wrote (42.40 stays
// 42.40, 9007199254740993 stays exact): JSON.parse's source text, where the
// browser gives it, wrapped in a Num that still computes like a number.
export class Num {
  constructor(text) {
    this.text = text;
  }

  valueOf() {
    return Number(this.text);
  }

  toString() {
    return this.text;
  }

  toJSON() {
    return typeof JSON.rawJSON === 'function' ? JSON.rawJSON(this.text) : Number(this.text);
  }
}

export function isNum(v) {
  return typeof v === 'number' || v instanceof Num;
}

export function parseJson(text) {
  return JSON.parse(text, function (k, v, ctx) {
    if (typeof v === 'number' && ctx && typeof ctx.source === 'string' && String(v) !== ctx.source)
      return new Num(ctx.source);
    return v;
  });
}

// A JSON value as a Python literal, indented like json.dumps(v, indent=4).
// Built from the value, not by rewriting JSON text: replacing the words
// true/false/null in the text also rewrote them inside strings (a column
// "all null" became "all None", a predicate value "true" became "True").
function pyLiteral(v, depth = 0) {
  const pad = (d) => ' '.repeat(4 * d);
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'string') return JSON.stringify(v);
  if (isNum(v)) return String(v);
  if (Array.isArray(v))
    return v.length === 0 ? '[]'
      : `[\n${v.map((x) => pad(depth + 1) + pyLiteral(x, depth + 1)).join(',\n')}\n${pad(depth)}]`;
  const keys = Object.keys(v);
  return keys.length === 0 ? '{}'
    : `{\n${keys.map((k) => `${pad(depth + 1)}${JSON.stringify(k)}: ${pyLiteral(v[k], depth + 1)}`).join(',\n')}\n${pad(depth)}}`;
}

// The same request as a command or a program, for "copy as".
export function snippets(method, path, body) {
  const url = new URL(apiUrl(path), location.href).href;
  const json = body === undefined ? null : JSON.stringify(body);
  const auth = adminToken ? ' -H "X-Admin-Token: $ADMIN_TOKEN"' : bearerToken ? ' -H "Authorization: Bearer $TOKEN"' : '';
  const sq = (s) => `'${s.replace(/'/g, "'\\''")}'`;
  const curl = json === null
    ? `curl -s${auth} ${sq(url)}`
    : `curl -s${auth} ${sq(url)} \\\n  -H 'Content-Type: application/json' \\\n  -d ${sq(json)}`;
  const pyHeaders = adminToken ? ', headers={"X-Admin-Token": os.environ["ADMIN_TOKEN"]}' : bearerToken ? ', headers={"Authorization": "Bearer " + os.environ["TOKEN"]}' : '';
  const python = `import os, requests\n\n` + (json === null
    ? `r = requests.get(${JSON.stringify(url)}${pyHeaders})`
    : `body = ${pyLiteral(parseJson(json))}\nr = requests.post(${JSON.stringify(url)}, json=body${pyHeaders})`)
    + `\nr.raise_for_status()\nprint(r.json())`;
  // The credentials as curl's and Python's take them, from the environment
  // (Node): the snippet had only a comment for the admin token and nothing
  // for a bearer token, so it was refused where the others ran.
  const jsHeaders = [
    ...(json === null ? [] : ["'Content-Type': 'application/json'"]),
    ...(adminToken ? ["'X-Admin-Token': process.env.ADMIN_TOKEN"]
      : bearerToken ? ['Authorization: `Bearer ${process.env.TOKEN}`'] : []),
  ];
  const js = `const r = await fetch(${JSON.stringify(url)}, {\n  method: '${method}',\n  headers: { ${jsHeaders.join(', ')} }`
    + (json === null ? '' : `,\n  body: JSON.stringify(${JSON.stringify(body, null, 2).replace(/\n/g, '\n  ')})`)
    + `,\n});\nif (!r.ok) throw new Error((await r.json()).error);\nconsole.log(await r.json());`;
  return { curl, python, js };
}

// One API call. opts: method, json (body), query (object), accept ('json' |
// 'arrow' | 'blob'), signal (an AbortSignal: cancel). Resolves to {status,
// data, headers, timing}; rejects with ApiError for any non-2xx answer (and
// with code 'cancelled' when aborted).
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
      signal: opts.signal,
    });
  } catch (e) {
    if (e.name === 'AbortError') throw new ApiError(0, 'cancelled', 'cancelled');
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
    data = text ? parseJson(text) : null;
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
