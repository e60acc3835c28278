// node `pg` (npm) against vitrine's PostgreSQL listener: the extended
// protocol with parameters, named prepared statements reused, binary
// results, a cursor reading in parts (Execute with a row limit, then
// PortalSuspended), an error with its SQLSTATE, and a pool. Prints one JSON
// object with what it saw; the Python test asserts on it.
import pg from 'pg';
import Cursor from 'pg-cursor';

const port = parseInt(process.argv[2], 10);
const conf = {host: '127.0.0.1', port, user: 'vitrine', database: 'vitrine'};
const out = {};
const c = new pg.Client(conf);
await c.connect();

let r = await c.query('SELECT trip_id, payment, fare, pickup_at, tags, info FROM trips WHERE trip_id = $1', [3]);
out.param = {rows: r.rows, command: r.command, rowCount: r.rowCount,
             types: r.fields.map(f => f.dataTypeID)};

const named = [];
for (const id of [4, 5, 6]) {
  r = await c.query({name: 'by_id', text: 'SELECT trip_id, payment FROM trips WHERE trip_id = $1', values: [id]});
  named.push(r.rows[0]);
}
out.named = named;

// (pg-types reads binary int4, bool and text right; its binary float8,
// timestamp and numeric readers give wrong values against PostgreSQL itself,
// so those are checked with psycopg.)
r = await c.query({text: 'SELECT trip_id, even, payment FROM trips WHERE trip_id < $1 ORDER BY trip_id',
                   values: [3], binary: true});
out.binary = {rows: r.rows, types: r.fields.map(f => f.dataTypeID),
              formats: r.fields.map(f => f.format)};

const cur = c.query(new Cursor('SELECT trip_id FROM trips WHERE trip_id < $1 ORDER BY trip_id', [10]));
const parts = [];
for (;;) {
  const rows = await cur.read(4);
  parts.push(rows.map(x => x.trip_id));
  if (rows.length === 0) break;
}
await cur.close();
out.cursor = parts;

try {
  await c.query('SELECT * FROM nope WHERE x = $1', [1]);
} catch (e) {
  out.error = {code: e.code, message: e.message};
}
try {
  await c.query('DELETE FROM trips WHERE trip_id = $1', [1]);
} catch (e) {
  out.write = {code: e.code};
}
r = await c.query('SELECT count(*) AS n FROM trips');
out.after = r.rows;
await c.end();

const pool = new pg.Pool({...conf, max: 3});
const counts = await Promise.all([1, 2, 3, 4, 5, 6].map(async i => {
  const res = await pool.query('SELECT count(*) AS n FROM trips WHERE station = $1', [i % 5]);
  return Number(res.rows[0].n);
}));
await pool.end();
out.pool = counts;
console.log(JSON.stringify(out));
