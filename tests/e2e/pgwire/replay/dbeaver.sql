-- The catalog statements DBeaver's PostgreSQL driver (over pgJDBC) sends
-- when it connects and opens the navigator down to a table's columns,
-- constraints, indexes, triggers and statistics, and the session manager;
-- for schema "public" and the dataset "trips" (DBeaver binds the OIDs as
-- parameters; they are subqueries here). Replayed through pgJDBC by
-- tests/e2e/test_pgwire_bi.py; each must succeed.
-- name: connect: identity
SELECT current_schema(),session_user
-- name: connect: version
SELECT version()
-- name: connect: search path
SHOW search_path
-- name: connect: database
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='vitrine'
-- name: databases
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datallowconn AND NOT datistemplate OR db.datname ='vitrine' ORDER BY db.datname
-- name: roles
SELECT a.oid,a.* FROM pg_catalog.pg_roles a ORDER BY a.oid
-- name: role members
SELECT am.*, r.rolname AS member_name FROM pg_catalog.pg_auth_members am JOIN pg_catalog.pg_roles r ON r.oid = am.member ORDER BY am.roleid
-- name: tablespaces
SELECT t.oid,t.* FROM pg_catalog.pg_tablespace t ORDER BY t.oid
-- name: schemas
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass
 ORDER BY nspname
-- name: extensions
SELECT e.oid,e.*,n.nspname AS schema_name FROM pg_catalog.pg_extension e LEFT OUTER JOIN pg_catalog.pg_namespace n ON n.oid=e.extnamespace ORDER BY e.extname
-- name: available extensions
SELECT name,default_version,installed_version,comment FROM pg_catalog.pg_available_extensions ORDER BY name
-- name: data types
SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description
FROM pg_catalog.pg_type t
LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem
LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid
LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid
WHERE t.typname IS NOT NULL
AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')
-- name: tables
SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr,  pg_catalog.pg_get_partkeydef(c.oid) as partition_key
FROM pg_catalog.pg_class c
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass
WHERE c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname='public') AND c.relkind not in ('i','I','c')
-- name: columns
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description,dep.objid
FROM pg_catalog.pg_attribute a
INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)
LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)
LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)
LEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid
WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.oid='public.trips'::regclass
ORDER BY a.attnum
-- name: constraints
SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description, case when c.contype='c' then "substring"(pg_get_constraintdef(c.oid), 7) else null end consrc_copy
FROM pg_catalog.pg_constraint c
INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid
LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_constraint'::regclass
WHERE c.conrelid='public.trips'::regclass
ORDER BY c.oid
-- name: indexes
SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,tc.relname as tabrelname,dsc.description,pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr,pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr,pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size,pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans
FROM pg_catalog.pg_index i
INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid
INNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid
LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid
WHERE  i.indrelid='public.trips'::regclass ORDER BY c.relname
-- name: inheritance
SELECT i.*,c.relnamespace FROM pg_catalog.pg_inherits i,pg_catalog.pg_class c WHERE i.inhrelid='public.trips'::regclass AND c.oid=i.inhparent ORDER BY i.inhseqno
-- name: triggers
SELECT t.oid,t.*,c.relkind FROM pg_catalog.pg_trigger t, pg_catalog.pg_class c WHERE t.tgrelid='public.trips'::regclass AND c.oid=t.tgrelid AND NOT t.tgisinternal ORDER BY t.tgname
-- name: rules
SELECT r.oid,r.* FROM pg_catalog.pg_rewrite r WHERE r.ev_class='public.trips'::regclass ORDER BY r.rulename
-- name: policies
SELECT * FROM pg_catalog.pg_policy WHERE polrelid='public.trips'::regclass
-- name: table statistics
select c.oid,pg_catalog.pg_total_relation_size(c.oid) as total_rel_size,pg_catalog.pg_relation_size(c.oid) as rel_size
FROM pg_class c
WHERE c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname='public')
-- name: table row count
SELECT n_live_tup FROM pg_catalog.pg_stat_user_tables WHERE relid='public.trips'::regclass
-- name: procedures
SELECT p.oid,p.*,d.description
FROM pg_catalog.pg_proc p
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=p.oid
WHERE p.pronamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname='public')
ORDER BY p.proname
-- name: sequences
SELECT c.oid,c.*,d.description FROM pg_catalog.pg_class c
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0
WHERE c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname='public') AND c.relkind='S'
-- name: sequence details
SELECT last_value, min_value, max_value, increment_by, cycle, cache_size FROM pg_catalog.pg_sequences WHERE schemaname='public'
-- name: foreign data wrappers
SELECT l.oid,l.*,p.pronamespace as handler_schema_id FROM pg_catalog.pg_foreign_data_wrapper l LEFT OUTER JOIN pg_catalog.pg_proc p ON p.oid=l.fdwhandler ORDER BY l.fdwname
-- name: foreign servers
SELECT l.oid,l.* FROM pg_catalog.pg_foreign_server l ORDER BY l.srvname
-- name: event triggers
SELECT t.oid,t.* FROM pg_catalog.pg_event_trigger t ORDER BY t.evtname
-- name: languages
SELECT l.oid,l.* FROM pg_catalog.pg_language l ORDER BY l.oid
-- name: collations
SELECT c.oid,c.* FROM pg_catalog.pg_collation c ORDER BY c.oid
-- name: casts
SELECT c.oid,c.* FROM pg_catalog.pg_cast c ORDER BY c.oid
-- name: access methods
SELECT am.oid,am.* FROM pg_catalog.pg_am am ORDER BY am.oid
-- name: operator classes
SELECT oc.oid,oc.* FROM pg_catalog.pg_opclass oc ORDER BY oc.oid
-- name: publications
SELECT p.oid,p.* FROM pg_catalog.pg_publication p ORDER BY p.pubname
-- name: session manager
SELECT sa.* FROM pg_catalog.pg_stat_activity sa
-- name: locks
SELECT * FROM pg_catalog.pg_locks
-- name: settings
SELECT name, setting, unit, category, short_desc FROM pg_catalog.pg_settings ORDER BY name
-- name: database statistics
SELECT * FROM pg_catalog.pg_stat_database WHERE datname = current_database()
-- name: index usage
SELECT relname, indexrelname, idx_scan FROM pg_catalog.pg_stat_user_indexes ORDER BY idx_scan DESC
-- name: keywords
select string_agg(word, ',') from pg_catalog.pg_get_keywords()
-- name: data: first page
SELECT * FROM public.trips LIMIT 200
-- name: data: row count
SELECT COUNT(*) FROM public.trips
-- name: data: filter
SELECT * FROM public.trips x WHERE x.payment = 'card' AND x.fare > 10 ORDER BY x.trip_id DESC LIMIT 200
