/*
 * Request bodies: the Content-Type check, JSON parsing with jansson, and the
 * nesting bound (VT_MAX_JSON_DEPTH). The body size itself was bounded by the
 * HTTP layer (server.max_body_bytes) before any handler ran.
 *
 * A key given twice in one object is refused (jansson would keep the last,
 * so {"limit":1,"limit":null} would quietly mean "unlimited"). Depth counts
 * containers: {} is 1, {"a":[1]} is 2; scalars add nothing.
 *
 * Small plain bodies take json_small_load first (util/json_small.h: the
 * tree jansson would build, several times cheaper); it declines anything
 * else, which jansson then loads or refuses. A query body in the lookup
 * shape is not loaded at all (api_small_query: the driver validates its
 * text, query_small_parse).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "util/json_small.h"
#include "util/limits.h"

/* The deepest container nesting below and including v (v at `depth`). */
static int json_depth(const json_t *v, int depth)
{
    if (!json_is_object(v) && !json_is_array(v))
        return depth - 1;
    if (depth > VT_MAX_JSON_DEPTH)
        return depth;
    int max = depth;
    if (json_is_object(v)) {
        const char *k;
        json_t *child;
        json_object_foreach((json_t *)v, k, child) {
            int d = json_depth(child, depth + 1);
            if (d > max)
                max = d;
            if (max > VT_MAX_JSON_DEPTH)
                break;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *child;
        json_array_foreach(v, i, child) {
            int d = json_depth(child, depth + 1);
            if (d > max)
                max = d;
            if (max > VT_MAX_JSON_DEPTH)
                break;
        }
    }
    return max;
}

/* text[0..len) as one JSON object; `what` names it in messages. */
static json_t *parse_object(const char *text, size_t len, const char *what, struct vt_error *err)
{
    /* The small plain bodies of the hot paths (a point lookup) without
     * jansson's lexer: the same tree, and every other text (errors
     * included) goes to jansson below. */
    json_t *small = json_small_load(text, len);
    if (small)
        return small;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        vt_error_set(err, json_error_code(&jerr) == json_error_duplicate_key
                              ? VT_ERR_DUPLICATE_KEY : VT_ERR_INVALID_JSON,
                     "invalid JSON%s at line %d, column %d: %s", what, jerr.line, jerr.column,
                     jerr.text);
        return NULL;
    }
    if (json_depth(root, 1) > VT_MAX_JSON_DEPTH) {
        json_decref(root);
        vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "JSON nesting deeper than %d levels",
                     VT_MAX_JSON_DEPTH);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        vt_error_set(err, VT_ERR_INVALID_JSON, "%s must be a JSON object",
                     what[0] ? what + 4 : "request body");
        return NULL;
    }
    return root;
}

json_t *api_json_body(struct http_request *req, bool empty_is_object, struct vt_error *err)
{
    size_t len;
    const char *body = http_req_body(req, &len);
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
        i++;
    if (i == len && empty_is_object)
        return json_object();
    if (!http_req_is_json(req)) {
        vt_error_set(err, VT_ERR_UNSUPPORTED_MEDIA_TYPE,
                     "request body must be sent with Content-Type: application/json");
        return NULL;
    }
    return parse_object(body, len, "", err);
}

bool api_small_query(struct http_request *req, struct query_small *out)
{
    size_t len;
    const char *body = http_req_body(req, &len);
    return len && http_req_is_json(req) && query_small_scan(body, len, out);
}

json_t *api_json_query_param(struct http_request *req, const char *key, struct vt_error *err)
{
    size_t len;
    const char *text = http_req_query_n(req, key, &len);
    if (!text || len == 0)
        return json_object();
    char what[48];
    snprintf(what, sizeof what, " in ?%s", key);
    if (memchr(text, '\0', len)) {
        vt_error_set(err, VT_ERR_INVALID_JSON, "invalid JSON%s: it holds a NUL byte", what);
        return NULL;
    }
    return parse_object(text, len, what, err);
}
