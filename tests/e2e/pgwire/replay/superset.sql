-- What Superset sends for a chart over a PostgreSQL database (SQLAlchemy
-- 1.4 with psycopg2): its time grains (DATE_TRUNC), the time range filter
-- with TO_TIMESTAMP and PostgreSQL's format strings, the row limit, and
-- the SQL Lab preview. Replayed by tests/e2e/test_pgwire_bi.py over
-- psycopg2; each must succeed.
-- name: time series, day grain
SELECT DATE_TRUNC('day', pickup_at) AS pickup_at, COUNT(*) AS count
FROM public.trips
WHERE pickup_at >= TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
  AND pickup_at < TO_TIMESTAMP('2024-01-03 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
GROUP BY DATE_TRUNC('day', pickup_at)
ORDER BY count DESC
LIMIT 10000
-- name: time series, hour grain with a series limit
SELECT DATE_TRUNC('hour', pickup_at) AS pickup_at, payment AS payment, sum(fare) AS "SUM(fare)"
FROM public.trips
JOIN (SELECT payment AS payment__, sum(fare) AS mme_inner__
      FROM public.trips
      WHERE pickup_at >= TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
      GROUP BY payment ORDER BY mme_inner__ DESC LIMIT 5) AS series_limit ON payment = payment__
WHERE pickup_at >= TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')
GROUP BY DATE_TRUNC('hour', pickup_at), payment
LIMIT 10000
-- name: week grain (P1W)
SELECT DATE_TRUNC('week', pickup_at) AS __timestamp, AVG(ratio) AS "AVG(ratio)" FROM public.trips GROUP BY DATE_TRUNC('week', pickup_at) LIMIT 50000
-- name: minute grain on a date column
SELECT DATE_TRUNC('minute', day) AS day, count(*) FROM public.trips GROUP BY 1 ORDER BY 1 LIMIT 100
-- name: big number with trendline
SELECT DATE_TRUNC('day', pickup_at) AS __timestamp, COUNT(*) AS count FROM public.trips WHERE pickup_at < TO_TIMESTAMP('2024-02-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') GROUP BY DATE_TRUNC('day', pickup_at) LIMIT 50000
-- name: table chart with a filter and order
SELECT payment AS payment, station AS station, count(*) AS count FROM public.trips WHERE payment IN ('card', 'cash') AND fare > 1.5 GROUP BY payment, station ORDER BY count DESC LIMIT 1000
-- name: SQL Lab preview
SELECT trip_id, payment, fare FROM public.trips LIMIT 100
-- name: SQL Lab latest partition probe
SELECT * FROM public.trips WHERE 1 = 0
-- name: to_char in a filter
SELECT to_char(pickup_at, 'YYYY-MM-DD') AS d, count(*) FROM public.trips GROUP BY 1 ORDER BY 1
