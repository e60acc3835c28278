// An agent's session against vitrine's MCP endpoint with the official
// TypeScript SDK clients, printing what it saw as one JSON document for the
// pytest side (tests/e2e/test_mcp.py) to check.
//
//   node agent.mjs legacy URL [URL2]   @modelcontextprotocol/sdk 1.x (initialize handshake)
//   node agent.mjs modern URL [URL2]   @modelcontextprotocol/client 2.x, versionNegotiation auto
//
// With URL2 the calls alternate between two servers (statelessness: any
// replica answers any request, with no session carried over).
import Ajv from 'ajv';

const [mode, url, url2] = process.argv.slice(2);

async function connect(target) {
  if (mode === 'legacy') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client({ name: 'vitrine-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(target)));
    return client;
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const client = new Client({ name: 'vitrine-e2e', version: '2.0.0' },
                            { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(target)));
  return client;
}

const out = { mode, calls: {}, errors: [] };
const clients = [await connect(url)];
if (url2) clients.push(await connect(url2));
let turn = 0;
const next = () => clients[(turn++) % clients.length];

out.protocolVersion = clients[0].getNegotiatedProtocolVersion?.() ?? null;
out.serverVersion = clients[0].getServerVersion();

const { tools } = await next().listTools();
out.tools = tools.map((t) => t.name);
const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.outputSchema)]));
out.schemaErrors = [];

async function call(name, args) {
  const r = await next().callTool({ name, arguments: args });
  if (!r.isError) {
    if (!validators[name](r.structuredContent)) out.schemaErrors.push({ name, errors: validators[name].errors });
    const text = r.content?.[0]?.text;
    if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(r.structuredContent))
      out.schemaErrors.push({ name, problem: 'text item differs from structuredContent' });
  }
  return r;
}

const list = await call('list_datasets', {});
out.calls.list = list.structuredContent;
const described = await call('describe_dataset', { name: 'trips' });
out.calls.describe = described.structuredContent;
const count = await call('count_rows', { name: 'trips', predicates: [{ col: 'payment', op: 'eq', val: 'card' }] });
out.calls.count = count.structuredContent;
const between = await call('count_rows', { name: 'trips', predicates: [{ col: 'fare', op: 'between', val: [10, 20] }] });
out.calls.between = between.structuredContent;
const grouped = await call('query_dataset', {
  name: 'trips', group_by: ['payment'], aggregations: [{ op: 'count' }, { op: 'avg', col: 'fare' }],
  order_by: [{ col: 'payment' }],
});
out.calls.grouped = grouped.structuredContent;

// Page through everything with `next` until it is null.
let args = { name: 'trips', columns: ['trip_id'], order_by: [{ col: 'trip_id' }], page_size: 1000 };
const seen = [];
let pages = 0;
let truncatedPages = 0;
while (args && pages < 100) {
  const r = await call('query_dataset', args);
  if (r.isError) { out.errors.push(r.content[0].text); break; }
  pages++;
  if (r.structuredContent.truncated) truncatedPages++;
  for (const row of r.structuredContent.rows) seen.push(row.trip_id);
  args = r.structuredContent.next;
}
out.paging = { pages, truncatedPages, rows: seen.length, first: seen[0], last: seen[seen.length - 1],
               ordered: seen.every((v, i) => i === 0 || v > seen[i - 1]) };

// Tool errors come back as results with isError.
const bad = [
  await call('query_dataset', { name: 'nope' }),
  await call('query_dataset', { name: 'trips', predicates: [{ col: 'farex', op: 'gt', val: 1 }] }),
  await call('count_rows', { name: 'trips', predicates: [{ col: 'fare', op: 'like', val: 3 }] }),
];
out.toolErrors = bad.map((r) => ({ isError: r.isError, text: r.content?.[0]?.text }));

// An unknown tool is a protocol error.
try {
  await next().callTool({ name: 'drop_everything', arguments: {} });
  out.unknownTool = 'accepted';
} catch (e) {
  out.unknownTool = { code: e.code, message: String(e.message) };
}

// The sql tool, when the server lists it: a join across datasets (a
// self-join here), a capped result, and refusals as tool errors.
if (out.tools.includes('sql')) {
  const joined = await call('sql', { sql: `SELECT a.payment, count(*) AS n FROM trips a
      JOIN trips b ON a.trip_id = b.trip_id GROUP BY a.payment ORDER BY a.payment` });
  out.calls.sql = joined.structuredContent;
  const capped = await call('sql', { sql: 'SELECT trip_id FROM trips ORDER BY trip_id' });
  out.calls.sqlCapped = { row_count: capped.structuredContent.row_count,
                          truncated: capped.structuredContent.truncated };
  const refused = [
    await call('sql', { sql: "SELECT * FROM read_text('/etc/passwd')" }),
    await call('sql', { sql: 'DELETE FROM trips' }),
    await call('sql', { sql: 'SELECT * FROM nowhere' }),
  ];
  out.sqlErrors = refused.map((r) => ({ isError: r.isError, text: r.content?.[0]?.text }));
}

const { resources } = await next().listResources();
out.resources = resources.map((r) => r.uri);
const read = await next().readResource({ uri: 'vitrine://datasets/trips' });
out.resource = JSON.parse(read.contents[0].text);

for (const c of clients) await c.close();
console.log(JSON.stringify(out));
