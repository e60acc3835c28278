// The pgJDBC checks of tests/e2e/test_pgwire_bi.py, in one JVM run: every
// DatabaseMetaData method DBeaver and Metabase call at connect and sync time,
// the connection settings they make, Metabase-style generated queries,
// array parameters (setArray, binary type 1009/1016), fetch-size cursors and
// statements clients send. Compiled and run by the test (java File.java).
//
// Usage: java -cp postgresql.jar JdbcCheck.java <jdbc url> <user> <password>
//            [replay.sql ...]
// Output: one line per check, "OK <name> <summary>" or "FAIL <name> <error>";
// the test reads them all and fails with every FAIL line.
import java.nio.file.*;
import java.sql.*;
import java.util.*;

public class JdbcCheck {
    interface Check {
        String run(Connection c) throws Exception;
    }

    /* "label:typename/sqltype " per column, as the checks print them. */
    static StringBuilder columnTypes(ResultSetMetaData md) throws SQLException {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= md.getColumnCount(); i++)
            b.append(md.getColumnLabel(i)).append(':').append(md.getColumnTypeName(i))
                .append('/').append(md.getColumnType(i)).append(' ');
        return b;
    }

    static final List<String> lines = new ArrayList<>();

    static void check(Connection c, String name, Check body) {
        try {
            String summary = body.run(c);
            lines.add("OK " + name + " " + (summary == null ? "" : summary.replace('\n', ' ')));
        } catch (Throwable e) {
            String m = String.valueOf(e.getMessage()).replace('\n', ' ');
            lines.add("FAIL " + name + " " + e.getClass().getSimpleName() + ": " + m);
            try {
                if (!c.getAutoCommit())
                    c.rollback();
            } catch (SQLException ignored) {
            }
        }
    }

    /* Every row of a result set as "a|b|c" lines; the column labels first. */
    static String rows(ResultSet rs, int max) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        StringBuilder b = new StringBuilder();
        int n = md.getColumnCount();
        for (int i = 1; i <= n; i++)
            b.append(i > 1 ? "," : "[").append(md.getColumnLabel(i));
        b.append("]");
        int k = 0;
        while (rs.next()) {
            k++;
            if (k > max)
                continue;
            b.append(" {");
            for (int i = 1; i <= n; i++)
                b.append(i > 1 ? "|" : "").append(rs.getString(i));
            b.append("}");
        }
        rs.close();
        return "rows=" + k + " " + b;
    }

    static String query(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement()) {
            return rows(st.executeQuery(sql), 3);
        }
    }

    static void expect(boolean cond, String what) {
        if (!cond)
            throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", args[1]);
        p.setProperty("password", args[2]);
        p.setProperty("ApplicationName", "JdbcCheck");
        try (Connection c = DriverManager.getConnection(args[0], p)) {
            metadata(c);
            metabase(c, Arrays.copyOfRange(args, 3, args.length));
            arrays(c);
            statements(c);
        }
        for (String l : lines)
            System.out.println(l);
    }

    /* ---------------------------------------------------- DatabaseMetaData */

    static void metadata(Connection c) throws Exception {
        DatabaseMetaData md = c.getMetaData();
        check(c, "product", x -> md.getDatabaseProductName() + " " + md.getDatabaseProductVersion()
                + " " + md.getDatabaseMajorVersion() + "." + md.getDatabaseMinorVersion()
                + " driver " + md.getDriverVersion());
        check(c, "identity", x -> md.getUserName() + " " + md.getURL() + " " + c.getCatalog()
                + " " + c.getSchema());
        check(c, "capabilities", x -> md.getIdentifierQuoteString() + " "
                + md.getSearchStringEscape() + " " + md.getExtraNameCharacters() + " "
                + md.supportsSchemasInDataManipulation() + " " + md.getMaxColumnNameLength()
                + " " + md.supportsTransactions() + " " + md.isReadOnly());
        check(c, "getSQLKeywords", x -> {
            String k = md.getSQLKeywords();
            expect(k != null && k.length() > 10, "keywords: " + k);
            return k.substring(0, 40);
        });
        check(c, "functions lists", x -> md.getNumericFunctions() + " / " + md.getStringFunctions()
                + " / " + md.getTimeDateFunctions() + " / " + md.getSystemFunctions());
        check(c, "getCatalogs", x -> rows(md.getCatalogs(), 5));
        check(c, "getSchemas", x -> {
            String r = rows(md.getSchemas(), 10);
            expect(r.contains("public"), "public is a schema: " + r);
            return r;
        });
        check(c, "getSchemas(pattern)", x -> rows(md.getSchemas(null, "pub%"), 5));
        check(c, "getTableTypes", x -> rows(md.getTableTypes(), 20));
        check(c, "getTables", x -> {
            String r = rows(md.getTables(null, "public", "%", new String[] {"TABLE",
                    "PARTITIONED TABLE", "VIEW", "FOREIGN TABLE", "MATERIALIZED VIEW"}), 10);
            expect(r.contains("trips"), "trips is a table: " + r);
            return r;
        });
        check(c, "getTables(null types)", x -> rows(md.getTables(null, null, "trip%", null), 5));
        check(c, "getColumns", x -> {
            ResultSet rs = md.getColumns(null, "public", "trips", null);
            StringBuilder b = new StringBuilder();
            int n = 0;
            while (rs.next()) {
                n++;
                b.append(rs.getString("COLUMN_NAME")).append(':').append(rs.getString("TYPE_NAME"))
                        .append('/').append(rs.getInt("DATA_TYPE")).append('/')
                        .append(rs.getInt("COLUMN_SIZE")).append('/')
                        .append(rs.getString("IS_NULLABLE")).append('/')
                        .append(rs.getString("IS_AUTOINCREMENT")).append(' ');
            }
            expect(n == 11, "11 columns, got " + n + ": " + b);
            return b.toString();
        });
        check(c, "getColumns(pattern)", x -> rows(md.getColumns(null, null, "trips", "pay%"), 5));
        check(c, "getPrimaryKeys", x -> rows(md.getPrimaryKeys(null, "public", "trips"), 5));
        check(c, "getIndexInfo", x -> rows(md.getIndexInfo(null, "public", "trips", false, true), 5));
        check(c, "getIndexInfo(unique)", x -> rows(md.getIndexInfo(null, "public", "trips", true, false), 5));
        check(c, "getImportedKeys", x -> rows(md.getImportedKeys(null, "public", "trips"), 5));
        check(c, "getExportedKeys", x -> rows(md.getExportedKeys(null, "public", "trips"), 5));
        check(c, "getCrossReference", x -> rows(md.getCrossReference(null, "public", "trips", null,
                "public", "stations"), 5));
        check(c, "getBestRowIdentifier", x -> rows(md.getBestRowIdentifier(null, "public", "trips",
                DatabaseMetaData.bestRowSession, true), 5));
        check(c, "getVersionColumns", x -> rows(md.getVersionColumns(null, "public", "trips"), 5));
        check(c, "getTablePrivileges", x -> rows(md.getTablePrivileges(null, "public", "trips"), 5));
        check(c, "getColumnPrivileges", x -> rows(md.getColumnPrivileges(null, "public", "trips", "%"), 5));
        check(c, "getTypeInfo", x -> {
            String r = rows(md.getTypeInfo(), 3);
            expect(!r.startsWith("rows=0"), "types: " + r);
            return r;
        });
        check(c, "getUDTs", x -> rows(md.getUDTs(null, "public", "%", null), 5));
        check(c, "getFunctions", x -> rows(md.getFunctions(null, "public", "%"), 5));
        check(c, "getFunctions(pg_catalog)", x -> rows(md.getFunctions(null, "pg_catalog", "now"), 5));
        check(c, "getFunctionColumns", x -> rows(md.getFunctionColumns(null, "public", "%", "%"), 5));
        check(c, "getProcedures", x -> rows(md.getProcedures(null, "public", "%"), 5));
        check(c, "getProcedureColumns", x -> rows(md.getProcedureColumns(null, "public", "%", "%"), 5));
        check(c, "getClientInfoProperties", x -> rows(md.getClientInfoProperties(), 5));
        check(c, "ResultSetMetaData", x -> {
            try (Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("SELECT * FROM public.trips LIMIT 1")) {
                ResultSetMetaData m = rs.getMetaData();
                StringBuilder b = new StringBuilder();
                for (int i = 1; i <= m.getColumnCount(); i++)
                    b.append(m.getColumnName(i)).append(':').append(m.getColumnTypeName(i))
                            .append(':').append(m.getTableName(i)).append(':')
                            .append(m.getSchemaName(i)).append(':').append(m.isNullable(i))
                            .append(':').append(m.isAutoIncrement(i)).append(' ');
                return b.toString();
            }
        });
    }

    /* ------------------------------------------------------------ Metabase */

    /* A replay file: "-- name: x" starts a statement, other "--" lines
     * before the first name are comments. */
    static List<String[]> replay(String path) throws Exception {
        List<String[]> out = new ArrayList<>();
        String name = null;
        StringBuilder sql = new StringBuilder();
        for (String line : Files.readAllLines(Paths.get(path))) {
            if (line.startsWith("-- name: ")) {
                if (name != null)
                    out.add(new String[] {name, sql.toString().trim()});
                name = line.substring(9).trim();
                sql.setLength(0);
            } else if (name != null) {
                sql.append(line).append('\n');
            }
        }
        if (name != null)
            out.add(new String[] {name, sql.toString().trim()});
        return out;
    }

    static void metabase(Connection c, String[] files) throws Exception {
        // What Metabase's connection pool sets on a connection, then a sync.
        check(c, "setReadOnly", x -> {
            c.setReadOnly(true);
            return "" + c.isReadOnly();
        });
        check(c, "isolation", x -> {
            c.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
            return "" + c.getTransactionIsolation();
        });
        check(c, "holdability", x -> {
            c.setHoldability(ResultSet.CLOSE_CURSORS_AT_COMMIT);
            return "" + c.getHoldability();
        });
        check(c, "autocommit off + fetch size", x -> {
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                st.setFetchSize(500);
                ResultSet rs = st.executeQuery("SELECT \"public\".\"trips\".\"trip_id\" AS \"trip_id\" FROM \"public\".\"trips\"");
                int n = 0;
                while (rs.next())
                    n++;
                expect(n == 5000, "5000 rows in batches, got " + n);
                c.commit();
                return "rows=" + n;
            } finally {
                c.setAutoCommit(true);
            }
        });
        check(c, "show timezone", x -> query(c, "show timezone;"));
        check(c, "probe", x -> query(c, "SELECT TRUE AS \"_\" FROM \"public\".\"trips\" WHERE 1 <> 1 LIMIT 0"));
        for (String f : files)
            for (String[] q : replay(f))
                check(c, "replay " + q[0], x -> query(c, q[1]));
        check(c, "metabase prepared filter", x -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT \"public\".\"trips\".\"payment\" AS \"payment\", COUNT(*) AS \"count\" "
                    + "FROM \"public\".\"trips\" WHERE (\"public\".\"trips\".\"pickup_at\" >= ?) "
                    + "AND (\"public\".\"trips\".\"pickup_at\" < ?) GROUP BY \"public\".\"trips\".\"payment\" "
                    + "ORDER BY \"public\".\"trips\".\"payment\" ASC")) {
                ps.setObject(1, java.time.LocalDateTime.parse("2024-01-01T00:00:00"));
                ps.setObject(2, java.time.LocalDateTime.parse("2024-01-02T00:00:00"));
                String r = rows(ps.executeQuery(), 5);
                expect(r.contains("card|480") && r.contains("cash|960"), r);
                return r;
            }
        });
    }

    /* -------------------------------------------------------------- arrays */

    static void arrays(Connection c) throws Exception {
        check(c, "setArray text[]", x -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT count(*) FROM trips WHERE payment = ANY(?)")) {
                ps.setArray(1, c.createArrayOf("text", new String[] {"card", "nope"}));
                String r = rows(ps.executeQuery(), 1);
                expect(r.contains("{1667}"), r);
                return r;
            }
        });
        check(c, "setArray int8[]", x -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT count(*) FROM trips WHERE trip_id = ANY(?)")) {
                ps.setArray(1, c.createArrayOf("int8", new Long[] {1L, 2L, 3L, 999999L}));
                String r = rows(ps.executeQuery(), 1);
                expect(r.contains("{3}"), r);
                return r;
            }
        });
        check(c, "setArray int4[] with null", x -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT count(*) FROM trips WHERE trip_id = ANY(?)")) {
                ps.setArray(1, c.createArrayOf("int4", new Integer[] {1, null, 2}));
                String r = rows(ps.executeQuery(), 1);
                expect(r.contains("{2}"), r);
                return r;
            }
        });
        check(c, "setObject String[]", x -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT count(*) FROM trips WHERE payment = ANY(?)")) {
                ps.setObject(1, new String[] {"cash"});
                return rows(ps.executeQuery(), 1);
            }
        });
        check(c, "array result", x -> {
            try (Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("SELECT tags FROM trips WHERE trip_id = 7")) {
                rs.next();
                Array a = rs.getArray(1);
                Object[] v = (Object[]) a.getArray();
                expect(v.length == 2 && ((Number) v[0]).longValue() == 7, Arrays.toString(v));
                return a.getBaseTypeName() + " " + Arrays.toString(v);
            }
        });
    }

    /* ---------------------------------------------------------- statements */

    static void statements(Connection c) throws Exception {
        String[] small = {"SELECT now()", "SELECT txid_current()", "SELECT inet_server_addr()",
            "SELECT pg_backend_pid()", "SELECT current_database(), current_schema(), current_user",
            "SELECT version()", "SELECT string_to_array('a,b,c', ',')",
            "SELECT * FROM pg_get_keywords() LIMIT 3", "SHOW search_path",
            "SELECT pg_catalog.pg_is_in_recovery()"};
        for (String q : small)
            check(c, q, x -> query(c, q));
        check(c, "execute LISTEN", x -> {
            try (Statement st = c.createStatement()) {
                st.execute("LISTEN vitrine_events");
                st.execute("UNLISTEN *");
                return "ok";
            }
        });
        check(c, "EXPLAIN", x -> query(c, "EXPLAIN SELECT * FROM trips WHERE fare > 10"));
        check(c, "set-returning json/string functions", x -> {
            String r = query(c, "SELECT json_array_elements_text('[\"a\", 2, null]') AS v")
                + " " + query(c, "SELECT value FROM json_array_elements('[1, {\"k\": 2}]')")
                + " " + query(c, "SELECT * FROM string_to_table('x,y', ',') AS s");
            return r;
        });
        check(c, "SELECT NULL type", x -> {
            try (Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT NULL, NULL AS n, NULL::int AS i")) {
                StringBuilder b = columnTypes(rs.getMetaData());
                rs.next();
                return b.append(rs.getString(1)).toString();
            }
        });
        check(c, "json types", x -> {
            try (PreparedStatement ps = c.prepareStatement(
                     "SELECT jsonb_build_object('a', ?::int) AS o, '[1, 2]'::jsonb AS l, "
                     + "jsonb_extract_path_text('{\"k\": \"v\"}', 'k') AS t, "
                     + "jsonb_array_length('[1, 2, 3]') AS n")) {
                ps.setInt(1, 7);
                try (ResultSet rs = ps.executeQuery()) {
                    StringBuilder b = columnTypes(rs.getMetaData());
                    rs.next();
                    Object o = rs.getObject(1);
                    return b.append(o.getClass().getSimpleName()).append(' ')
                        .append(rs.getString(1)).append(' ').append(rs.getString(2)).append(' ')
                        .append(rs.getString(3)).append(' ').append(rs.getInt(4)).toString();
                }
            }
        });
        check(c, "jsonb operators", x -> {
            // pgJDBC turns `??` into the `?` operator (a lone `?` is a
            // parameter); the path operators and containment as written
            try (PreparedStatement ps = c.prepareStatement(
                     "SELECT ?::jsonb ?? 'a' AS e, ?::jsonb ??| array['x', 'b'] AS y, "
                     + "?::jsonb #>> '{b,1}' AS p, ?::jsonb @> '{\"a\": 1}' AS c, "
                     + "count(*) AS n FROM jsonb_each(?::jsonb)")) {
                String doc = "{\"a\": 1, \"b\": [5, \"six\"]}";
                for (int i = 1; i <= 5; i++)
                    ps.setString(i, doc);
                try (ResultSet rs = ps.executeQuery()) {
                    StringBuilder b = columnTypes(rs.getMetaData());
                    rs.next();
                    return b.append(rs.getBoolean(1)).append(' ').append(rs.getBoolean(2))
                        .append(' ').append(rs.getString(3)).append(' ').append(rs.getBoolean(4))
                        .append(' ').append(rs.getLong(5)).toString();
                }
            }
        });
        check(c, "~* error names no internal function", x -> {
            String r = query(c, "SELECT count(*) FROM trips WHERE payment ~* 'CA'");
            expect(r.contains("{5000}"), r);
            return r;
        });
    }
}
