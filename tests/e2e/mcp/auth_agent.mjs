// The official MCP SDK client (@modelcontextprotocol/sdk 1.x) against an
// MCP endpoint that needs a bearer token ([auth] enabled), for
// tests/e2e/test_auth_bearer.py. Prints one JSON document.
//
//   node auth_agent.mjs URL TOKEN    connect with Authorization: Bearer TOKEN,
//                                    list tools, count rows
//   node auth_agent.mjs URL          connect without a token: reports the error
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token] = process.argv.slice(2);
const out = {};
const opts = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {};
const client = new Client({ name: 'vitrine-auth-e2e', version: '1.0.0' });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), opts));
  const { tools } = await client.listTools();
  out.tools = tools.map((t) => t.name);
  const r = await client.callTool({ name: 'count_rows', arguments: { name: 't' } });
  out.count = r.structuredContent;
  await client.close();
} catch (e) {
  out.error = String(e && e.message ? e.message : e);
}
console.log(JSON.stringify(out));
