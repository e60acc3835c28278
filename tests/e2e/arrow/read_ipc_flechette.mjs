// A second, independent Arrow reader (@uwdata/flechette) over the same
// streams as read_ipc.mjs. It decodes the types apache-arrow does not read
// (list views), and checking every stream with two readers catches metadata
// one of them would tolerate. Prints one JSON line per file:
//   {"rows": n, "names": [...], "typeIds": [...], "values": [{column: value}]}
// with flechette's own value conventions (64-bit integers as strings,
// binary as arrays of bytes), or {"error": message}.
//
// usage: node read_ipc_flechette.mjs FILE...
import { readFileSync } from 'node:fs';
import { tableFromIPC } from '@uwdata/flechette';

const plain = (_, v) => {
  if (typeof v === 'bigint') return v.toString();
  if (ArrayBuffer.isView(v)) return Array.from(v, (x) => (typeof x === 'bigint' ? x.toString() : x));
  if (v && v.type === 'Buffer' && Array.isArray(v.data)) return v.data;
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return v;
};

for (const f of process.argv.slice(2)) {
  let line;
  try {
    const t = tableFromIPC(readFileSync(f), { useBigInt: true });
    line = JSON.stringify({
      rows: t.numRows,
      names: t.schema.fields.map((x) => x.name),
      typeIds: t.schema.fields.map((x) => x.type.typeId),
      values: t.toArray(),
    }, plain);
  } catch (e) {
    line = JSON.stringify({ error: String(e && e.message ? e.message : e) });
  }
  process.stdout.write(line + '\n');
}
