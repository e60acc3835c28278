#!/usr/bin/env bash
# Generates the bundled sample datasets into examples/data/ with DuckDB (via
# build/vt-sql): a taxi-like trips table, a small stations table, and sales
# partitioned in hive key=value directories. Idempotent.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
sql="$top/$build/vt-sql"
out="$top/examples/data"
[ -f "$out/.done" ] && exit 0
mkdir -p "$out"
rm -rf "$out/sales"
# vt-sql prints what COPY returns (["200000"]): `make run` shows only the
# last line, where the data went.

"$sql" "COPY (
    SELECT i AS trip_id,
           TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i * 37) AS pickup_at,
           (i * 7919) % 250 AS pickup_station,
           (i * 104729) % 250 AS dropoff_station,
           ['cash', 'card', 'card', 'app'][1 + (i % 4)] AS payment,
           round(2.5 + ((i * 31) % 4000) / 100.0, 2)::DECIMAL(10,2) AS fare,
           ((i * 13) % 60) / 10.0 AS distance_km,
           CASE WHEN i % 17 = 0 THEN NULL ELSE (i % 5) + 1 END AS passengers
    FROM range(200000) t(i)
) TO '$out/trips.parquet' (FORMAT parquet)" >/dev/null

"$sql" "COPY (
    SELECT i AS station_id,
           'Station ' || i AS name,
           ['north', 'south', 'east', 'west', 'center'][1 + (i % 5)] AS district,
           48.80 + (i % 50) / 100.0 AS lat,
           2.25 + (i / 50) / 20.0 AS lon,
           i % 3 <> 0 AS has_bikes
    FROM range(250) t(i)
) TO '$out/stations.parquet' (FORMAT parquet)" >/dev/null

"$sql" "COPY (
    SELECT i AS sale_id,
           ['eu', 'us', 'apac'][1 + (i % 3)] AS region,
           2022 + (i % 3) AS year,
           'sku-' || (i % 97) AS sku,
           (i % 9) + 1 AS quantity,
           round(((i * 17) % 10000) / 100.0, 2) AS amount
    FROM range(30000) t(i)
) TO '$out/sales' (FORMAT parquet, PARTITION_BY (region, year))" >/dev/null

touch "$out/.done"
echo "sample data in $out"
