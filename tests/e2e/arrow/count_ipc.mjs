// Reads an Arrow IPC stream from stdin incrementally with the apache-arrow
// reader (batch by batch, never the whole table) and prints one JSON line:
//   {"rows": N, "batches": N, "fields": [[name, type]...], "sums": {col: "S"}}
// `sums` holds, for every Int32/Int64 column, the exact sum of its non-null
// values (a decimal string), so a test can check every value arrived without
// materialising millions of rows anywhere.
//
// usage: curl ... | node count_ipc.mjs
import { RecordBatchReader, Type } from 'apache-arrow';

const reader = await RecordBatchReader.from(process.stdin);
await reader.open();
const fields = reader.schema.fields;
let rows = 0;
let batches = 0;
const sums = {};

for await (const batch of reader) {
  batches++;
  rows += batch.numRows;
  fields.forEach((f, c) => {
    if (f.type.typeId !== Type.Int || (f.type.bitWidth !== 32 && f.type.bitWidth !== 64)) return;
    const data = batch.data.children[c];
    const v = data.values;
    // Sum in Numbers per batch (exact: |value| < 2^31 per word), carry in BigInt.
    let hi = 0;
    let lo = 0;
    const all = data.nullCount === 0;
    if (f.type.bitWidth === 32) {
      for (let i = 0; i < data.length; i++) if (all || data.getValid(i)) lo += v[data.offset + i];
    } else {
      const w = new Int32Array(v.buffer, v.byteOffset, v.length * 2);
      for (let i = 0; i < data.length; i++) {
        if (!all && !data.getValid(i)) continue;
        const j = 2 * (data.offset + i);
        lo += w[j] >>> 0;
        hi += w[j + 1];
      }
    }
    sums[f.name] = (sums[f.name] ?? 0n) + BigInt(lo) + (BigInt(hi) << 32n);
  });
}

process.stdout.write(JSON.stringify({
  rows,
  batches,
  fields: fields.map((f) => [f.name, String(f.type)]),
  sums: Object.fromEntries(Object.entries(sums).map(([k, s]) => [k, s.toString()])),
}) + '\n');
