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

// tools/list in pages (the test server pages by 3): follow nextCursor.
const tools = [];
let cursor;
let toolPages = 0;
do {
  const page = await next().listTools(cursor ? { cursor } : undefined);
  toolPages++;
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor && toolPages < 10);
out.tools = tools.map((t) => t.name);
out.toolPages = toolPages;
out.annotations = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
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

// Tools over src/explore: the same answers as GET /summary and POST /facets.
out.calls.summary = (await call('summarize_dataset', { name: 'trips', columns: ['payment', 'fare'] })).structuredContent;
out.calls.facets = (await call('facet_counts', {
  name: 'trips', columns: ['payment'], predicates: [{ col: 'fare', op: 'lt', val: 10 }] })).structuredContent;
out.calls.facetsCut = (await call('facet_counts', { name: 'trips', columns: ['fare'], limit: 3 })).structuredContent;
// The query language's newer parts through query_dataset.
out.calls.newAggs = (await call('query_dataset', {
  name: 'trips', group_by: [{ col: 'fare', width: 25, alias: 'band' }],
  aggregations: [{ op: 'count_distinct', col: 'payment' }, { op: 'median', col: 'fare' },
                 { op: 'quantile', col: 'fare', q: 0.9, alias: 'p90' }],
  order_by: [{ col: 'band' }], include_total: true })).structuredContent;
out.calls.listPaged = (await call('list_datasets', {})).structuredContent;

// Prompts, with arguments completed first.
const cl = next();
out.prompts = (await cl.listPrompts()).prompts.map((p) => ({ name: p.name, args: p.arguments.map((a) => a.name) }));
out.complete = {
  dataset: (await cl.complete({ ref: { type: 'ref/prompt', name: 'explore_dataset' }, argument: { name: 'dataset', value: 'TR' } })).completion,
  column: (await cl.complete({ ref: { type: 'ref/prompt', name: 'explore_dataset' }, argument: { name: 'column', value: 'f' },
                               context: { arguments: { dataset: 'trips' } } })).completion,
  value: (await cl.complete({ ref: { type: 'ref/prompt', name: 'explore_dataset' }, argument: { name: 'value', value: 'ca' },
                              context: { arguments: { dataset: 'trips', column: 'payment' } } })).completion,
  resource: (await cl.complete({ ref: { type: 'ref/resource', uri: 'vitrine://datasets/{name}/summary' }, argument: { name: 'name', value: 't' } })).completion,
};
const explore = await next().getPrompt({ name: 'explore_dataset', arguments: { dataset: 'trips' } });
out.explorePrompt = explore.messages[0].content.text;
const focus = await next().getPrompt({ name: 'explore_dataset', arguments: { dataset: 'trips', column: 'payment', value: 'card' } });
out.focusPrompt = focus.messages[0].content.text;
const sqlp = await next().getPrompt({ name: 'answer_with_sql', arguments: { dataset: 'trips', question: 'Which payment has the highest average fare?' } });
out.sqlPrompt = sqlp.messages[0].content.text;
try {
  await next().getPrompt({ name: 'explore_dataset', arguments: {} });
  out.promptMissingArg = 'accepted';
} catch (e) {
  out.promptMissingArg = { code: e.code };
}

// Resource templates and their reads.
out.templates = (await next().listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
out.schemaResource = JSON.parse((await next().readResource({ uri: 'vitrine://datasets/trips/schema' })).contents[0].text);
out.summaryResource = JSON.parse((await next().readResource({ uri: 'vitrine://datasets/trips/summary' })).contents[0].text);

// Logging: the initialize era sets a level (accepted; a stateless server
// cannot keep it), the 2026-07-28 era names it per request and gets the
// notifications in the response stream.
out.logs = [];
if (mode === 'legacy') {
  out.setLevel = await clients[0].setLoggingLevel('info');
} else {
  for (const c of clients)
    c.setNotificationHandler('notifications/message', (n) => { out.logs.push(n.params); });
  const r = await clients[0].callTool({ name: 'query_dataset', arguments: { name: 'trips', page_size: 1000 },
                                        _meta: { 'io.modelcontextprotocol/logLevel': 'info' } });
  out.loggedCall = { truncated: r.structuredContent.truncated };
}
const read = await next().readResource({ uri: 'vitrine://datasets/trips' });
out.resource = JSON.parse(read.contents[0].text);

for (const c of clients) await c.close();
console.log(JSON.stringify(out));
