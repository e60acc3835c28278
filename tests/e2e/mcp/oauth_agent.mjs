// An MCP client that has to sign in by itself (issue 29, item 6): the
// official SDK client (1.x `legacy` or 2.x `modern`) with an OAuth client
// provider, against an endpoint with [auth] on and the local issuer of
// tests/e2e/oidc_issuer.py. The client is told only the MCP URL and its own
// client id: the 401's WWW-Authenticate names the protected resource
// metadata (RFC 9728), which names the issuer; the client reads the issuer's
// metadata, sends the user to its authorization endpoint (PKCE, with the
// resource indicator and the scopes the metadata lists), exchanges the code
// and retries with the token. The "browser" here follows the authorization
// redirect with fetch. Prints one JSON document.
//
//   node oauth_agent.mjs legacy|modern URL
const [mode, url] = process.argv.slice(2);
const out = { mode };

const sdk = mode === 'legacy'
  ? { ...(await import('@modelcontextprotocol/sdk/client/index.js')),
      ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')) }
  : await import('@modelcontextprotocol/client');

const redirectUrl = 'http://127.0.0.1:9/callback';
let saved = { tokens: undefined, verifier: undefined, authorizationUrl: undefined };
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: 'vitrine e2e agent', redirect_uris: [redirectUrl],
             grant_types: ['authorization_code'], response_types: ['code'],
             token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return { client_id: 'vitrine-agent' }; },
  saveClientInformation() {},
  tokens() { return saved.tokens; },
  saveTokens(t) { saved.tokens = t; },
  redirectToAuthorization(u) { saved.authorizationUrl = new URL(u); },
  saveCodeVerifier(v) { saved.verifier = v; },
  codeVerifier() { return saved.verifier; },
};

const connect = async () => {
  const client = new sdk.Client({ name: 'vitrine-oauth-e2e', version: '1.0.0' },
                                mode === 'modern' ? { versionNegotiation: { mode: 'auto' } } : {});
  const transport = new sdk.StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await client.connect(transport);
  return { client, transport };
};

let first;
try {
  await connect();
  out.firstConnect = 'connected without signing in';
} catch (e) {
  out.firstConnect = String(e && e.name) + ': ' + String(e && e.message);
  first = e;
}
try {
  if (!saved.authorizationUrl) throw new Error('no authorization redirect: ' + String(first));
  const a = saved.authorizationUrl;
  out.authorization = { origin: a.origin, pathname: a.pathname,
                        params: Object.fromEntries(a.searchParams.entries()) };
  // The user agent: the issuer approves at once and redirects back.
  const r = await fetch(a, { redirect: 'manual' });
  const back = new URL(r.headers.get('location'));
  // Finish on a transport of the same URL and provider, then connect again.
  const t = new sdk.StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  if (mode === 'legacy') await t.finishAuth(back.searchParams.get('code'));
  else await t.finishAuth(back.searchParams);
  out.tokenScope = saved.tokens?.scope ?? null;
  const { client } = await connect();
  out.tools = (await client.listTools()).tools.map((x) => x.name);
  const c = await client.callTool({ name: 'count_rows', arguments: { name: 't' } });
  out.count = c.structuredContent;
  await client.close();
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
}
console.log(JSON.stringify(out));
