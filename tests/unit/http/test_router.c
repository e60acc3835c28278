/* The router: path decoding (%2F never separates), literal over {x} over {*}
 * whatever the table order, wildcard tails, the prefix, root routes. */
#include <stdio.h>
#include <string.h>

#include "http/router.h"
#include "testlib.h"

static void h(struct http_request *req) { (void)req; }

static struct http_router *make(const struct http_route *rows, size_t n, const char *prefix)
{
    struct vt_error err = {0};
    struct http_router *r = http_router_create(rows, n, NULL, 0, prefix, &err);
    CHECK(r != NULL);
    return r;
}

/* The pattern of the first route matching `target`, "" when none; the
 * captures in p0/p1. */
static const char *route_of(struct http_router *r, const char *target, const char **p0,
                            const char **p1)
{
    static struct arena a;
    arena_release(&a);
    arena_init(&a, 1 << 20);
    struct http_path path;
    const char *msg;
    if (http_path_parse(&a, target, &path, &msg) != VT_ERR_OK)
        return "(malformed)";
    size_t pos = 0;
    const char *params[HTTP_MAX_PARAMS];
    const struct http_route *m = http_router_next(r, &path, &pos, &a, params);
    if (p0)
        *p0 = m ? params[0] : NULL;
    if (p1)
        *p1 = m ? params[1] : NULL;
    return m ? m->pattern : "";
}

TEST(literal_wins_over_capture_whatever_the_order)
{
    /* Captures first on purpose. */
    static const struct http_route rows[] = {
        {HTTP_POST, "/d/{name}/reload", h, AUTH_PERM_RELOAD, "x", 0},
        {HTTP_POST, "/d/{name}", h, AUTH_PERM_READ, "x", 0},
        {HTTP_POST, "/d/reload-all", h, AUTH_PERM_RELOAD, "x", 0},
        {HTTP_GET, "/d/{name}/{*}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_POST, "/d/persist", h, AUTH_PERM_RELOAD, "x", 0},
    };
    struct http_router *r = make(rows, 5, "");
    const char *p0, *p1;
    CHECK_EQ_STR(route_of(r, "/d/reload-all", &p0, NULL), "/d/reload-all");
    CHECK_EQ_STR(route_of(r, "/d/persist", NULL, NULL), "/d/persist");
    CHECK_EQ_STR(route_of(r, "/d/trips", &p0, NULL), "/d/{name}");
    CHECK_EQ_STR(p0, "trips");
    CHECK_EQ_STR(route_of(r, "/d/trips/reload", &p0, NULL), "/d/{name}/reload");
    CHECK_EQ_STR(route_of(r, "/d/trips/a/b.css", &p0, &p1), "/d/{name}/{*}");
    CHECK_EQ_STR(p0, "trips");
    CHECK_EQ_STR(p1, "a/b.css");
    CHECK_EQ_STR(route_of(r, "/d", NULL, NULL), "");
    CHECK_EQ_STR(route_of(r, "/d/", NULL, NULL), "");
    http_router_destroy(r);
}

TEST(percent_encoded_slash_is_not_a_separator)
{
    static const struct http_route rows[] = {
        {HTTP_GET, "/ds/{name}/status", h, AUTH_PERM_READ, "x", 0},
    };
    struct http_router *r = make(rows, 1, "");
    const char *p0;
    CHECK_EQ_STR(route_of(r, "/ds/a%2Fb/status", &p0, NULL), "/ds/{name}/status");
    CHECK_EQ_STR(p0, "a/b");
    CHECK_EQ_STR(route_of(r, "/ds/a/b/status", NULL, NULL), "");
    CHECK_EQ_STR(route_of(r, "/ds/na%6De/status?x=1", &p0, NULL), "/ds/{name}/status");
    CHECK_EQ_STR(p0, "name");
    CHECK_EQ_STR(route_of(r, "/ds/%zz/status", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "/ds/%2/status", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "/ds/a%00b/status", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "ds/x/status", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "/ds//status", NULL, NULL), "");
    /* escapes at a segment's edges, next to '/', '?' and the end */
    CHECK_EQ_STR(route_of(r, "/ds/%41%2F%42/status", &p0, NULL), "/ds/{name}/status");
    CHECK_EQ_STR(p0, "A/B");
    CHECK_EQ_STR(route_of(r, "/ds/%4/status", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "/ds/x/status%2", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "/ds/x/status%", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "/ds/x/status%4?a=%zz", NULL, NULL), "(malformed)");
    CHECK_EQ_STR(route_of(r, "/ds/x/status?%zz/%", &p0, NULL), "/ds/{name}/status");
    CHECK_EQ_STR(route_of(r, "/ds/x%2/y/status", NULL, NULL), "(malformed)");
    struct arena a;
    arena_init(&a, 1 << 20);
    struct http_path path;
    const char *msg;
    CHECK_EQ_INT(http_path_parse(&a, "/a//%62c/?q", &path, &msg), VT_ERR_OK);
    CHECK_EQ_INT((int)path.n, 4);
    if (path.n == 4) {
        CHECK_EQ_STR(path.seg[0], "a");
        CHECK_EQ_STR(path.seg[1], "");
        CHECK_EQ_STR(path.seg[2], "bc");
        CHECK_EQ_STR(path.seg[3], "");
    }
    CHECK_EQ_INT(http_path_parse(&a, "/", &path, &msg), VT_ERR_OK);
    CHECK(path.n == 1 && !strcmp(path.seg[0], ""));
    arena_release(&a);
    http_router_destroy(r);
}

TEST(wildcard_tail)
{
    static const struct http_route rows[] = {
        {HTTP_GET, "/docs/{*}", h, AUTH_PERM_PUBLIC, "assets", 0},
        {HTTP_GET, "/docs/openapi.json", h, AUTH_PERM_PUBLIC, "spec", 0},
    };
    struct http_router *r = make(rows, 2, "");
    const char *p0;
    CHECK_EQ_STR(route_of(r, "/docs/openapi.json", NULL, NULL), "/docs/openapi.json");
    CHECK_EQ_STR(route_of(r, "/docs/", &p0, NULL), "/docs/{*}");
    CHECK_EQ_STR(p0, "");
    CHECK_EQ_STR(route_of(r, "/docs/css/a.css", &p0, NULL), "/docs/{*}");
    CHECK_EQ_STR(p0, "css/a.css");
    CHECK_EQ_STR(route_of(r, "/docs", NULL, NULL), "");
    CHECK_EQ_STR(route_of(r, "/docs/../etc/passwd", NULL, NULL), "");
    CHECK_EQ_STR(route_of(r, "/docs/a/%2E%2E/b", NULL, NULL), "");
    CHECK_EQ_STR(route_of(r, "/docs/a%2F..%2Fb", NULL, NULL), "");
    http_router_destroy(r);
}

TEST(prefix_and_root_routes)
{
    static const struct http_route rows[] = {
        {HTTP_GET, "/healthz", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/", h, AUTH_PERM_PUBLIC, "root", 0},
    };
    static const struct http_route root[] = {
        {HTTP_GET, "/metrics", h, AUTH_PERM_PUBLIC, "metrics", 0},
    };
    struct vt_error err = {0};
    struct http_router *r = http_router_create(rows, 2, root, 1, "/svc/v", &err);
    CHECK(r != NULL);
    CHECK_EQ_STR(route_of(r, "/svc/v/healthz", NULL, NULL), "/healthz");
    CHECK_EQ_STR(route_of(r, "/healthz", NULL, NULL), "");
    CHECK_EQ_STR(route_of(r, "/metrics", NULL, NULL), "/metrics");
    CHECK_EQ_STR(route_of(r, "/svc/v/metrics", NULL, NULL), "");
    CHECK_EQ_STR(route_of(r, "/svc/v", NULL, NULL), "/");
    CHECK_EQ_STR(route_of(r, "/svc/v/", NULL, NULL), "/");
    CHECK_EQ_STR(route_of(r, "/svc/vx/healthz", NULL, NULL), "");
    const struct http_route *out;
    CHECK_EQ_INT(http_router_rows(r, &out), 3);
    int roots = 0;
    for (int i = 0; i < 3; i++)
        roots += (out[i].flags & HTTP_ROUTE_ROOT) != 0;
    CHECK_EQ_INT(roots, 1);
    http_router_destroy(r);
}

TEST(malformed_patterns_are_refused)
{
    struct vt_error err = {0};
    static const struct http_route a[] = {{HTTP_GET, "/x/{*}/y", h, AUTH_PERM_PUBLIC, "x", 0}};
    CHECK(http_router_create(a, 1, NULL, 0, "", &err) == NULL);
    static const struct http_route b[] = {{HTTP_GET, "x", h, AUTH_PERM_PUBLIC, "x", 0}};
    CHECK(http_router_create(b, 1, NULL, 0, "", &err) == NULL);
    static const struct http_route c[] = {{HTTP_GET, "/{a}/{b}/{c}", h, AUTH_PERM_PUBLIC, "x", 0}};
    CHECK(http_router_create(c, 1, NULL, 0, "", &err) == NULL);
}

/* A reference matcher: the pattern's segments against the path's, as
 * router.h describes them ({x} one non-empty segment, a last {*} the rest). */
static bool ref_match(const char *pattern, char **segs, size_t n)
{
    char pat[128];
    snprintf(pat, sizeof pat, "%s", pattern + 1);
    char *ps[32];
    size_t np = 0;
    for (char *p = pat;; p++) {
        ps[np++] = p;
        p = strchr(p, '/');
        if (!p)
            break;
        *p = '\0';
    }
    for (size_t k = 0; k < np; k++) {
        if (!strcmp(ps[k], "{*}"))
            return n >= k + 1;
        if (k >= n)
            return false;
        if (ps[k][0] == '{' ? !segs[k][0] : strcmp(ps[k], segs[k]) != 0)
            return false;
    }
    return n == np;
}

/* Every match of a path, in order (http_router_next from each position
 * after the last), equals the reference's walk of the rows in match order:
 * the buckets by segment count (and the linear scan past them) skip only
 * entries that cannot match. Paths of 1-4 segments over a small alphabet,
 * and 17-20 segments (past the buckets), with and without the prefix. */
TEST(every_match_in_order_equals_the_reference)
{
    static const struct http_route rows[] = {
        {HTTP_GET, "/", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/a", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/{x}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/a/{x}/b", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/a/b/{x}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/{x}/{y}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/a/{*}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/{*}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/b/a/b/a", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/a/b/{x}/{*}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/b/{x}", h, AUTH_PERM_PUBLIC, "x", 0},
    };
    static const struct http_route root[] = {
        {HTTP_GET, "/a/b", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/{x}", h, AUTH_PERM_PUBLIC, "x", 0},
        {HTTP_GET, "/b/{*}", h, AUTH_PERM_PUBLIC, "x", 0},
    };
    static const char *alphabet[] = {"a", "b", "p", ""};
    for (int pre = 0; pre < 2; pre++) {
        struct vt_error err = {0};
        struct http_router *r = http_router_create(rows, sizeof rows / sizeof *rows, root,
                                                   sizeof root / sizeof *root,
                                                   pre ? "/p" : "", &err);
        CHECK(r != NULL);
        const struct http_route *order;
        size_t nrows = http_router_rows(r, &order);
        int mismatches = 0, matched = 0;
        for (int len = 1; len <= 20; len++) {
            if (len == 5)
                len = 17;
            int combos = 1;
            for (int i = 0; i < len && combos < 4096; i++)
                combos *= 4;
            for (int c = 0; c < combos; c++) {
                char target[256] = "";
                char *segs[32];
                char store[32][4];
                int v = c;
                for (int i = 0; i < len; i++) {
                    snprintf(store[i], sizeof store[i], "%s", alphabet[v % 4]);
                    v = v / 4 ? v / 4 : c + i; /* long paths: vary all the way */
                    segs[i] = store[i];
                    strcat(target, "/");
                    strcat(target, store[i]);
                }
                /* The reference: root rows see the whole path, the others the
                 * part below the prefix ("" when nothing is below it). */
                const char *want[64];
                size_t nwant = 0;
                bool in_prefix = !pre || (len >= 1 && !strcmp(segs[0], "p"));
                char *below[32];
                size_t nbelow = 0;
                static char empty[] = "";
                for (int i = pre; i < len; i++)
                    below[nbelow++] = segs[i];
                if (!nbelow)
                    below[nbelow++] = empty;
                for (size_t i = 0; i < nrows; i++) {
                    bool is_root = (order[i].flags & HTTP_ROUTE_ROOT) != 0;
                    if (is_root ? ref_match(order[i].pattern, segs, (size_t)len)
                                : in_prefix && ref_match(order[i].pattern, below, nbelow))
                        want[nwant++] = order[i].pattern;
                }
                struct arena a;
                arena_init(&a, 1 << 20);
                struct http_path path;
                const char *msg;
                CHECK_EQ_INT(http_path_parse(&a, target, &path, &msg), VT_ERR_OK);
                size_t pos = 0, ngot = 0;
                const char *params[HTTP_MAX_PARAMS];
                const struct http_route *m;
                bool same = true;
                while ((m = http_router_next(r, &path, &pos, &a, params)) != NULL) {
                    if (ngot >= nwant || strcmp(m->pattern, want[ngot]) != 0 ||
                        (m->flags & HTTP_ROUTE_ROOT) != (order[pos - 1].flags & HTTP_ROUTE_ROOT))
                        same = false;
                    ngot++;
                }
                if (ngot != nwant)
                    same = false;
                if (!same && mismatches++ < 5)
                    printf("prefix %d %s: %zu matches, reference %zu\n", pre, target, ngot,
                           nwant);
                matched += nwant > 0;
                arena_release(&a);
            }
        }
        CHECK_EQ_INT(mismatches, 0);
        CHECK(matched > 100);
        http_router_destroy(r);
    }
}

RUN_TESTS(TEST_CASE(literal_wins_over_capture_whatever_the_order),
          TEST_CASE(every_match_in_order_equals_the_reference),
          TEST_CASE(percent_encoded_slash_is_not_a_separator), TEST_CASE(wildcard_tail),
          TEST_CASE(prefix_and_root_routes), TEST_CASE(malformed_patterns_are_refused))
