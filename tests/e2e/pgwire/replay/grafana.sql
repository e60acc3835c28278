-- What Grafana's PostgreSQL data source sends (its query editor's schema,
-- table and column lists, the version and TimescaleDB probes, and panels
-- with its macros $__timeGroup, $__timeFilter, $__time, $__timeEpoch and
-- $__unixEpochFilter as Grafana expands them). Replayed by
-- tests/e2e/test_pgwire_bi.py over psycopg (extended protocol, as Grafana's
-- Go driver); each must succeed.
-- name: version
SELECT current_setting('server_version_num')::int/100 as version
-- name: timescaledb probe
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'
-- name: schemas
SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name
-- name: tables of a schema
SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1
-- name: tables on the search path
SELECT
    CASE WHEN
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          ) THEN 0 ELSE 1 END, 1
-- name: columns of a table
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('trips'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('trips'))[1]
          AND quote_ident(table_name) = (parse_ident('trips'))[2]
        ELSE quote_ident(table_name) = 'trips'
          AND
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
-- name: panel: $__timeGroupAlias(pickup_at, 5m) with $__timeFilter
SELECT
  floor(extract(epoch from pickup_at)/300)*300 AS "time",
  count(*) AS trips
FROM trips
WHERE
  pickup_at BETWEEN '2024-01-01T00:00:00Z' AND '2024-01-01T06:00:00Z'
GROUP BY 1
ORDER BY 1
-- name: panel: $__time and $__timeFilter, by payment
SELECT
  pickup_at AS "time",
  payment AS metric,
  fare
FROM trips
WHERE
  pickup_at BETWEEN '2024-01-01T00:00:00Z' AND '2024-01-01T01:00:00Z'
ORDER BY 1
-- name: panel: $__timeEpoch and $__unixEpochFilter
SELECT
  extract(epoch from pickup_at) AS "time",
  ratio AS value
FROM trips
WHERE
  extract(epoch from pickup_at) >= 1704067200 AND extract(epoch from pickup_at) <= 1704070800
ORDER BY 1
-- name: panel: $__timeGroup(pickup_at, 1h, 0) with a fill
SELECT
  floor(extract(epoch from pickup_at)/3600)*3600 AS "time",
  avg(fare) AS avg_fare,
  sum(CASE WHEN even THEN 1 ELSE 0 END) AS even_trips
FROM trips
WHERE pickup_at >= to_timestamp(1704067200) AND pickup_at < to_timestamp(1704153600)
GROUP BY 1
ORDER BY 1
-- name: variable query
SELECT DISTINCT payment AS __text, payment AS __value FROM trips ORDER BY 1
-- name: table panel with date_trunc
SELECT date_trunc('hour', pickup_at) AS "time", payment, count(*) FROM trips GROUP BY 1, 2 ORDER BY 1, 2
