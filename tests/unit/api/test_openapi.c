/* The OpenAPI document against the route table it is generated from: every
 * route (routes.def and every config mount, all features on) has a
 * description and a documentation row, appears under its path and method,
 * every $ref resolves, operation ids are unique, servers honour the prefix
 * (and the metrics route's own servers entry says "/"), permissions map to
 * security requirements, and no legacy (unversioned /api/...) path exists. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "testlib.h"

static void everything_on(struct vt_config *cfg)
{
    config_init_defaults(cfg);
    cfg->metrics.enabled = true;
    cfg->sql.enabled = true;
    cfg->mcp.enabled = true;
    cfg->swagger.enabled = true;
    cfg->docs.enabled = true;
    cfg->explorer.enabled = true;
    free(cfg->server.prefix);
    cfg->server.prefix = strdup("/svc");
}

/* Every "$ref" under v resolves inside doc. */
static int check_refs(json_t *doc, json_t *v)
{
    int bad = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if (!strcmp(k, "$ref")) {
                const char *s = json_string_value(x);
                json_t *at = doc;
                char buf[256];
                snprintf(buf, sizeof buf, "%s", s ? s : "");
                char *save = NULL;
                for (char *part = strtok_r(buf + 2, "/", &save); part && at;
                     part = strtok_r(NULL, "/", &save))
                    at = json_object_get(at, part);
                if (!s || strncmp(s, "#/", 2) != 0 || !at) {
                    fprintf(stderr, "  dangling $ref %s\n", s ? s : "(null)");
                    bad++;
                }
            } else {
                bad += check_refs(doc, x);
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            bad += check_refs(doc, x);
    }
    return bad;
}

static json_t *build(struct vt_config *cfg, struct api_route_set *set, bool admin)
{
    api_route_set_init(set);
    CHECK_EQ_INT(api_route_set_build(set, cfg), 0);
    struct vt_error err = {0};
    json_t *doc = api_openapi_build(set->rows, set->n, cfg, admin, &err);
    if (!doc)
        fprintf(stderr, "  %s\n", vt_error_message(&err));
    return doc;
}

TEST(every_route_documented_and_present)
{
    struct vt_config cfg;
    everything_on(&cfg);
    struct api_route_set set;
    json_t *doc = build(&cfg, &set, true);
    CHECK(doc != NULL);
    if (!doc)
        return;
    CHECK_EQ_STR(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    json_t *paths = json_object_get(doc, "paths");
    size_t ops = 0;
    for (size_t i = 0; i < set.n; i++) {
        const struct http_route *r = &set.rows[i];
        if (!api_openapi_documented(r))
            fprintf(stderr, "  route %s has no description or documentation row\n", r->pattern);
        CHECK(api_openapi_documented(r));
        char key[256];
        snprintf(key, sizeof key, "%s", r->pattern);
        char *star = strstr(key, "{*}");
        if (star)
            memcpy(star, "{path}", 7);
        json_t *item = json_object_get(paths, key);
        if (!item)
            fprintf(stderr, "  route %s missing from paths\n", key);
        CHECK(item != NULL);
        static const struct {
            unsigned bit;
            const char *name;
        } m[] = {{HTTP_GET, "get"}, {HTTP_POST, "post"}, {HTTP_PUT, "put"},
                 {HTTP_DELETE, "delete"}, {HTTP_PATCH, "patch"}};
        for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
            if (!(r->methods & m[k].bit))
                continue;
            json_t *op = json_object_get(item, m[k].name);
            CHECK(op != NULL);
            ops++;
            CHECK_EQ_STR(json_string_value(json_object_get(op, "summary")), r->description);
            CHECK(json_object_size(json_object_get(op, "responses")) >= 1);
            CHECK_EQ_STR(json_string_value(json_object_get(op, "x-vitrine-permission")),
                         auth_perm_name(r->perm));
            json_t *sec = json_object_get(op, "security");
            CHECK(json_is_array(sec));
            if (r->perm == AUTH_PERM_RELOAD || r->perm == AUTH_PERM_MANAGE) {
                CHECK(json_array_size(sec) >= 1);
                CHECK(json_object_get(json_array_get(sec, 0), "adminToken") != NULL);
                CHECK(json_object_get(json_object_get(op, "responses"), "401") != NULL);
            } else {
                CHECK_EQ_INT(json_array_size(sec), 0);
            }
            /* a request body only where the handler takes one */
            if (r->methods & HTTP_POST && strstr(r->pattern, "/query"))
                CHECK(json_object_get(op, "requestBody") != NULL);
        }
        /* the metrics route is served outside the prefix */
        if (r->flags & HTTP_ROUTE_ROOT)
            CHECK_EQ_STR(json_string_value(json_object_get(
                             json_array_get(json_object_get(item, "servers"), 0), "url")),
                         "/");
    }
    CHECK(ops >= 27);
    CHECK(json_object_get(paths, "/metrics") != NULL);
    CHECK(json_object_get(paths, "/docs/openapi.json") != NULL);
    CHECK(json_object_get(paths, "/api/v1/sql") != NULL);
    CHECK(json_object_get(paths, "/mcp") != NULL);
    CHECK(json_object_get(json_object_get(paths, "/api/v1/datasets/{name}/parquet"), "head"));
    /* no legacy paths, and no path the route table lacks */
    const char *p;
    json_t *item;
    json_object_foreach(paths, p, item) {
        CHECK(strncmp(p, "/api/", 5) != 0 || strncmp(p, "/api/v1/", 8) == 0);
        bool found = false;
        for (size_t i = 0; i < set.n && !found; i++) {
            char key[256];
            snprintf(key, sizeof key, "%s", set.rows[i].pattern);
            char *star = strstr(key, "{*}");
            if (star)
                memcpy(star, "{path}", 7);
            found = !strcmp(key, p);
        }
        CHECK(found);
    }
    /* servers honour server.prefix */
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(json_object_get(doc, "servers"), 0), "url")),
                 "/svc");
    CHECK_EQ_INT(check_refs(doc, doc), 0);
    /* unique operation ids */
    json_t *ids = json_object();
    json_object_foreach(paths, p, item) {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op) {
            if (!strcmp(method, "servers"))
                continue;
            const char *id = json_string_value(json_object_get(op, "operationId"));
            CHECK(id && !json_object_get(ids, id));
            if (id)
                json_object_set_new(ids, id, json_true());
        }
    }
    json_decref(ids);
    /* the query request's operator enum */
    json_t *ops_enum = json_object_get(
        json_object_get(json_object_get(json_object_get(json_object_get(
                                            json_object_get(doc, "components"), "schemas"),
                                                        "Predicate"),
                                        "properties"),
                        "op"),
        "enum");
    CHECK_EQ_INT(json_array_size(ops_enum), 12);
    json_decref(doc);
    api_route_set_release(&set);
    config_free(&cfg);
}

TEST(auth_config_shapes_security)
{
    struct vt_config cfg;
    everything_on(&cfg);
    cfg.auth.enabled = true;
    strvec_free(&cfg.auth.read_scopes);
    strvec_push(&cfg.auth.read_scopes, "ds:read");
    struct api_route_set set;
    json_t *doc = build(&cfg, &set, false);
    CHECK(doc != NULL);
    if (!doc)
        return;
    json_t *schemes = json_object_get(json_object_get(doc, "components"), "securitySchemes");
    CHECK(json_object_get(schemes, "bearer") != NULL);
    CHECK(json_object_get(schemes, "adminToken") != NULL);
    json_t *list = json_object_get(json_object_get(json_object_get(doc, "paths"),
                                                   "/api/v1/datasets"),
                                   "get");
    json_t *req = json_array_get(json_object_get(list, "security"), 0);
    CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(req, "bearer"), 0)),
                 "ds:read");
    CHECK(json_object_get(json_object_get(list, "responses"), "401") != NULL);
    CHECK(json_object_get(json_object_get(list, "responses"), "403") != NULL);
    /* probes stay public */
    json_t *hz = json_object_get(json_object_get(json_object_get(doc, "paths"), "/healthz"), "get");
    CHECK_EQ_INT(json_array_size(json_object_get(hz, "security")), 0);
    json_decref(doc);
    api_route_set_release(&set);
    config_free(&cfg);
}

TEST(features_off_means_absent)
{
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.swagger.enabled = true;
    struct api_route_set set;
    json_t *doc = build(&cfg, &set, false);
    CHECK(doc != NULL);
    if (!doc)
        return;
    json_t *paths = json_object_get(doc, "paths");
    CHECK(json_object_get(paths, "/metrics") == NULL);
    CHECK(json_object_get(paths, "/api/v1/sql") == NULL);
    CHECK(json_object_get(paths, "/mcp") == NULL);
    json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
    CHECK(json_object_get(schemas, "JsonRpcRequest") == NULL); /* unused: pruned */
    CHECK(json_object_get(schemas, "QueryRequest") != NULL);
    CHECK(json_object_get(json_object_get(json_object_get(doc, "components"), "securitySchemes"),
                          "bearer") == NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(json_object_get(doc, "servers"), 0), "url")),
                 "/");
    /* without ADMIN_TOKEN an admin route answers 403 admin_disabled, not 401 */
    json_t *reload = json_object_get(
        json_object_get(paths, "/api/v1/datasets/{name}/reload"), "post");
    CHECK(json_object_get(json_object_get(reload, "responses"), "403") != NULL);
    CHECK(json_object_get(json_object_get(reload, "responses"), "401") == NULL);
    CHECK_EQ_INT(check_refs(doc, doc), 0);
    json_decref(doc);
    api_route_set_release(&set);
    config_free(&cfg);
}

RUN_TESTS(TEST_CASE(every_route_documented_and_present), TEST_CASE(auth_config_shapes_security),
          TEST_CASE(features_off_means_absent))
