// Sign-in with the OAuth 2.0 Authorization Code flow and PKCE (RFC 7636)
// against [explorer.oauth2]'s issuer. The verifier and state survive the
// redirect in sessionStorage (one tab, cleared as soon as they are used); the
// access token is kept in memory only and forwarded by api.js.

const KEY = 'vitrine.pkce';

function b64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomString(n) {
  const a = new Uint8Array(n);
  crypto.getRandomValues(a);
  return b64url(a);
}

async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return b64url(new Uint8Array(digest));
}

async function discover(issuer) {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const resp = await fetch(url, { cache: 'no-store' });
  if (!resp.ok) throw new Error(`issuer discovery failed (${resp.status})`);
  const doc = await resp.json();
  if (!doc.authorization_endpoint || !doc.token_endpoint)
    throw new Error('issuer discovery document lacks authorization_endpoint/token_endpoint');
  return doc;
}

function redirectUri() {
  return `${location.origin}${location.pathname}`;
}

// Sends the browser to the issuer's authorization endpoint.
export async function signIn(oauth2) {
  const doc = await discover(oauth2.issuer);
  const verifier = randomString(48);
  const state = randomString(16);
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: oauth2.client_id,
    redirect_uri: redirectUri(),
    scope: (oauth2.scopes || []).join(' '),
    state,
  });
  if (oauth2.pkce !== false) {
    params.set('code_challenge', await challengeOf(verifier));
    params.set('code_challenge_method', 'S256');
  }
  sessionStorage.setItem(KEY, JSON.stringify({ verifier, state, hash: location.hash }));
  location.assign(`${doc.authorization_endpoint}?${params}`);
}

// On load: when the issuer sent the browser back with ?code&state, exchanges
// the code for tokens and cleans the URL. Resolves to {token, scopes} (the
// scopes granted: the response's `scope`, else those requested, RFC 6749
// §5.1), or null when this load is not a sign-in callback.
export async function completeSignIn(oauth2) {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return null;
  const saved = JSON.parse(sessionStorage.getItem(KEY) || 'null');
  sessionStorage.removeItem(KEY);
  history.replaceState(null, '', `${location.pathname}${saved?.hash || ''}`);
  if (q.has('error')) throw new Error(`sign-in refused: ${q.get('error_description') || q.get('error')}`);
  if (!saved || saved.state !== q.get('state')) throw new Error('sign-in state mismatch');
  const doc = await discover(oauth2.issuer);
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code: q.get('code'),
    redirect_uri: redirectUri(),
    client_id: oauth2.client_id,
  });
  if (oauth2.pkce !== false) form.set('code_verifier', saved.verifier);
  const resp = await fetch(doc.token_endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok || !body.access_token)
    throw new Error(`token exchange failed: ${body.error_description || body.error || resp.status}`);
  const granted = typeof body.scope === 'string' ? body.scope : (oauth2.scopes || []).join(' ');
  return { token: body.access_token, scopes: granted.split(' ').filter(Boolean) };
}
