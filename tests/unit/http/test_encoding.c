/*
 * Accept-Encoding parsing and the compress-or-not decision (src/http/encoding.c):
 * RFC 9110 §12.5.3 examples, q-value grammar, tie-breaks, malformed input.
 */
#include "http/encoding.h"
#include "testlib.h"

/* The pick for a header value, as a name, so failures print readably. */
static const char *pick(const char *v)
{
    struct http_accept_encoding ae;
    http_accept_encoding_parse(v, &ae);
    return http_encoding_name(http_accept_encoding_pick(&ae));
}

static int q_of(const char *v, enum http_encoding e)
{
    struct http_accept_encoding ae;
    http_accept_encoding_parse(v, &ae);
    return ae.q[e];
}

TEST(absent_and_empty_mean_identity)
{
    CHECK_EQ_STR(pick(NULL), "identity");
    CHECK_EQ_STR(pick(""), "identity");     /* RFC: empty = no coding wanted */
    CHECK_EQ_STR(pick("  \t "), "identity");
    CHECK_EQ_STR(pick(",, ,"), "identity");
    struct http_accept_encoding ae;
    http_accept_encoding_parse(NULL, &ae);
    CHECK(!ae.present);
    http_accept_encoding_parse("", &ae);
    CHECK(ae.present);
}

TEST(rfc9110_examples)
{
    /* the five examples of RFC 9110 §12.5.3 */
    CHECK_EQ_STR(pick("compress, gzip"), "gzip");
    CHECK_EQ_STR(pick(""), "identity");
    CHECK_EQ_STR(pick("*"), "zstd");
    CHECK_EQ_STR(pick("compress;q=0.5, gzip;q=1.0"), "gzip");
    CHECK_EQ_STR(pick("gzip;q=1.0, identity; q=0.5, *;q=0"), "gzip");
}

TEST(real_clients)
{
    CHECK_EQ_STR(pick("gzip, deflate, br, zstd"), "zstd"); /* Chrome >= 123 */
    CHECK_EQ_STR(pick("gzip, deflate, br"), "br");         /* Firefox, Safari */
    CHECK_EQ_STR(pick("gzip, deflate"), "gzip");           /* python-requests */
    CHECK_EQ_STR(pick("deflate"), "identity");             /* we do not produce deflate */
    CHECK_EQ_STR(pick("identity"), "identity");
}

TEST(case_and_whitespace)
{
    CHECK_EQ_STR(pick("GZIP"), "gzip");
    CHECK_EQ_STR(pick("Br"), "br");
    CHECK_EQ_STR(pick("ZsTd"), "zstd");
    CHECK_EQ_STR(pick("x-gzip"), "gzip");
    CHECK_EQ_STR(pick("X-GZip"), "gzip");
    CHECK_EQ_STR(pick("\tgzip\t;\tq=0.5\t,\tbr ; q=0.4 "), "gzip");
    CHECK_EQ_STR(pick("gzip;Q=0, br;q=0"), "identity"); /* parameter name is case-insensitive */
    CHECK_EQ_STR(pick(" , ,gzip,, "), "gzip");
}

TEST(q_values_and_ties)
{
    CHECK_EQ_STR(pick("gzip;q=0.5, br;q=0.4"), "gzip");
    CHECK_EQ_STR(pick("gzip;q=1.0, br;q=1"), "br");           /* tie: br > gzip */
    CHECK_EQ_STR(pick("gzip, br, zstd"), "zstd");
    CHECK_EQ_STR(pick("zstd;q=0.3, br;q=0.3, gzip;q=0.3"), "zstd");
    CHECK_EQ_STR(pick("zstd;q=0.299, br;q=0.3"), "br");
    CHECK_EQ_STR(pick("zstd;q=0.001, identity;q=0"), "zstd");
    CHECK_EQ_STR(pick("identity, gzip"), "gzip");             /* tie: gzip > identity */
    CHECK_EQ_STR(pick("identity;q=1, gzip;q=0.5"), "identity");
    CHECK_EQ_STR(pick("gzip;q=0.5"), "gzip");   /* unlisted identity is the last resort */
    CHECK_EQ_STR(pick("gzip;q=0.001"), "gzip");
    CHECK_EQ_STR(pick("br;q=0"), "identity");
    CHECK_EQ_STR(pick("gzip;q=0, br;q=0, zstd;q=0"), "identity");
}

TEST(star)
{
    CHECK_EQ_STR(pick("*;q=0"), "identity");          /* nothing acceptable: still identity */
    CHECK_EQ_STR(pick("*;q=0, gzip"), "gzip");
    CHECK_EQ_STR(pick("*;q=0, identity"), "identity");
    CHECK_EQ_STR(pick("br;q=0.8, *;q=0.9"), "zstd");  /* zstd gets 0.9 through * */
    CHECK_EQ_STR(pick("*;q=0.5, identity;q=0.6"), "identity");
    CHECK_EQ_STR(pick("*;q=0.5, zstd;q=0, br;q=0"), "gzip");
    CHECK_EQ_STR(pick("*, zstd;q=0"), "br");
    CHECK_EQ_STR(pick("identity;q=0"), "identity");   /* we never answer 406 */
}

TEST(qvalue_grammar)
{
    CHECK_EQ_INT(q_of("gzip", HTTP_ENC_GZIP), 1000);
    CHECK_EQ_INT(q_of("gzip;q=0.123", HTTP_ENC_GZIP), 123);
    CHECK_EQ_INT(q_of("gzip;q=0.5", HTTP_ENC_GZIP), 500);
    CHECK_EQ_INT(q_of("gzip;q=0.05", HTTP_ENC_GZIP), 50);
    CHECK_EQ_INT(q_of("gzip;q=0.", HTTP_ENC_GZIP), 0);
    CHECK_EQ_INT(q_of("gzip;q=0", HTTP_ENC_GZIP), 0);
    CHECK_EQ_INT(q_of("gzip;q=1.", HTTP_ENC_GZIP), 1000);
    CHECK_EQ_INT(q_of("gzip;q=1.000", HTTP_ENC_GZIP), 1000);
    CHECK_EQ_INT(q_of("gzip;q=0.999", HTTP_ENC_GZIP), 999);
    /* not qvalues: the element is dropped */
    static const char *const bad[] = {
        "gzip;q=2",      "gzip;q=1.001", "gzip;q=0.0001", "gzip;q=.5",  "gzip;q=0.5x",
        "gzip;q=",       "gzip;q",       "gzip;q=-0",     "gzip;q=+1",  "gzip;q=1.0000",
        "gzip;q=01",    "gzip;q=\"0.5\"", "gzip;=0.5", "gzip;q = 0.5",
        "gzip;q=0.5;q=", "gzip q=0.5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int q = q_of(bad[i], HTTP_ENC_GZIP);
        if (q != HTTP_Q_UNLISTED)
            fprintf(stderr, "  case \"%s\": q=%d\n", bad[i], q);
        CHECK_EQ_INT(q, HTTP_Q_UNLISTED);
    }
}

TEST(malformed_elements_are_skipped)
{
    CHECK_EQ_STR(pick("gzip;q=2, br"), "br");
    CHECK_EQ_STR(pick("zstd;q=0.5x, gzip"), "gzip");
    CHECK_EQ_STR(pick("gz ip, br"), "br");
    CHECK_EQ_STR(pick("br;foo=bar"), "br");          /* unknown parameter tolerated */
    CHECK_EQ_STR(pick("br;foo=\"a,b\";q=0.5, gzip;q=0.4"), "br");
    CHECK_EQ_STR(pick("br;foo=\"unterminated"), "identity");
    CHECK_EQ_STR(pick(";q=1, gzip"), "gzip");
    CHECK_EQ_STR(pick("\xff\xfe, gzip"), "gzip");
    CHECK_EQ_STR(pick("gzip/1.0, br"), "br");
    CHECK_EQ_STR(pick("{}, zstd"), "zstd");
    CHECK_EQ_STR(pick("zstd;"), "identity");           /* empty parameter */
    CHECK_EQ_STR(pick("zstd;q=1;"), "identity");
}

TEST(duplicates_keep_lowest_q)
{
    CHECK_EQ_STR(pick("gzip, gzip;q=0"), "identity");
    CHECK_EQ_STR(pick("gzip;q=0, gzip"), "identity");
    CHECK_EQ_STR(pick("gzip;q=0, x-gzip"), "identity");
    CHECK_EQ_INT(q_of("br;q=0.9, br;q=0.2, br", HTTP_ENC_BR), 200);
}

TEST(content_types)
{
    CHECK(http_content_type_compressible("application/json"));
    CHECK(http_content_type_compressible("application/json; charset=utf-8"));
    CHECK(http_content_type_compressible("Application/JSON;charset=UTF-8"));
    CHECK(http_content_type_compressible(" application/json"));
    CHECK(http_content_type_compressible("text/plain"));
    CHECK(http_content_type_compressible("text/html; charset=utf-8"));
    CHECK(http_content_type_compressible("text/csv"));
    CHECK(http_content_type_compressible("application/problem+json"));
    CHECK(http_content_type_compressible("application/x-ndjson"));
    CHECK(http_content_type_compressible("application/javascript"));
    CHECK(http_content_type_compressible("image/svg+xml"));
    CHECK(!http_content_type_compressible("application/vnd.apache.arrow.stream"));
    CHECK(!http_content_type_compressible("application/vnd.apache.arrow.file"));
    CHECK(!http_content_type_compressible("application/vnd.apache.parquet"));
    CHECK(!http_content_type_compressible("application/octet-stream"));
    CHECK(!http_content_type_compressible("image/png"));
    CHECK(!http_content_type_compressible(NULL));
    CHECK(!http_content_type_compressible(""));
    CHECK(!http_content_type_compressible("json"));
    CHECK(!http_content_type_compressible("application/"));
    CHECK(!http_content_type_compressible("/json"));
    CHECK(!http_content_type_compressible("application/jsonx"));
    CHECK(!http_content_type_compressible("application/+json")); /* no subtype before + */
}

TEST(choose)
{
    const char *ae = "gzip, deflate, br, zstd";
    const char *json = "application/json";
    CHECK_EQ_INT(http_encoding_choose(ae, true, json, 100000), HTTP_ENC_ZSTD);
    CHECK_EQ_INT(http_encoding_choose(ae, true, json, HTTP_BODY_LEN_UNKNOWN), HTTP_ENC_ZSTD);
    CHECK_EQ_INT(http_encoding_choose(ae, true, json, HTTP_COMPRESS_MIN_BYTES), HTTP_ENC_ZSTD);
    CHECK_EQ_INT(http_encoding_choose(ae, true, json, HTTP_COMPRESS_MIN_BYTES - 1),
                 HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(http_encoding_choose(ae, true, json, 0), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(http_encoding_choose(ae, false, json, 100000), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(http_encoding_choose(ae, true, "application/vnd.apache.arrow.stream", 100000),
                 HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(http_encoding_choose(ae, true, "application/vnd.apache.parquet",
                                      HTTP_BODY_LEN_UNKNOWN),
                 HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(http_encoding_choose(NULL, true, json, 100000), HTTP_ENC_IDENTITY);
    CHECK_EQ_INT(http_encoding_choose("gzip", true, json, 100000), HTTP_ENC_GZIP);
    /* server.compress=false wins even over identity;q=0 */
    CHECK_EQ_INT(http_encoding_choose("identity;q=0, gzip", false, json, 100000),
                 HTTP_ENC_IDENTITY);
}

TEST(vary_and_names)
{
    CHECK(http_encoding_should_vary(true, "application/json"));
    CHECK(!http_encoding_should_vary(false, "application/json"));
    CHECK(!http_encoding_should_vary(true, "application/vnd.apache.parquet"));
    CHECK(http_encoding_header_value(HTTP_ENC_IDENTITY) == NULL);
    CHECK_EQ_STR(http_encoding_header_value(HTTP_ENC_GZIP), "gzip");
    CHECK_EQ_STR(http_encoding_header_value(HTTP_ENC_BR), "br");
    CHECK_EQ_STR(http_encoding_header_value(HTTP_ENC_ZSTD), "zstd");
    CHECK_EQ_STR(http_encoding_name(HTTP_ENC_IDENTITY), "identity");
}

TEST(long_header_is_linear_and_safe)
{
    /* 64 KiB of repeated elements: still parses, keeps the lowest q */
    static char big[65536];
    size_t n = 0;
    while (n + 16 < sizeof big) {
        memcpy(big + n, "br;q=0.7, gzip, ", 16);
        n += 16;
    }
    big[n] = '\0';
    CHECK_EQ_STR(pick(big), "gzip");
}

TEST(accept_media_q)
{
    const char *arrow = "application/vnd.apache.arrow.stream";
    CHECK_EQ_INT(http_accept_media_q(NULL, arrow), HTTP_Q_UNLISTED);
    CHECK_EQ_INT(http_accept_media_q("", arrow), HTTP_Q_UNLISTED);
    CHECK_EQ_INT(http_accept_media_q(arrow, arrow), 1000);
    CHECK_EQ_INT(http_accept_media_q("Application/Vnd.Apache.Arrow.Stream", arrow), 1000);
    CHECK_EQ_INT(http_accept_media_q("application/vnd.apache.arrow.stream;q=0", arrow), 0);
    CHECK_EQ_INT(http_accept_media_q("text/html, application/vnd.apache.arrow.stream ; q=0.25", arrow), 250);
    /* a longer or shorter name is another type; wildcards are not expanded */
    CHECK_EQ_INT(http_accept_media_q("application/vnd.apache.arrow.streamx", arrow), HTTP_Q_UNLISTED);
    CHECK_EQ_INT(http_accept_media_q("application/vnd.apache.arrow", arrow), HTTP_Q_UNLISTED);
    CHECK_EQ_INT(http_accept_media_q("*/*, application/*", arrow), HTTP_Q_UNLISTED);
    /* parameters other than q are skipped; malformed elements are dropped */
    CHECK_EQ_INT(http_accept_media_q("application/json;charset=\"utf-8\";q=0.5", "application/json"), 500);
    CHECK_EQ_INT(http_accept_media_q("application/vnd.apache.arrow.stream;q=2, application/json", arrow),
                 HTTP_Q_UNLISTED);
    CHECK_EQ_INT(http_accept_media_q("application/, /json, application/json", "application/json"), 1000);
    /* duplicates keep the lowest q */
    CHECK_EQ_INT(http_accept_media_q("application/json, application/json;q=0.1", "application/json"), 100);
}

RUN_TESTS(TEST_CASE(absent_and_empty_mean_identity), TEST_CASE(rfc9110_examples),
          TEST_CASE(real_clients), TEST_CASE(case_and_whitespace), TEST_CASE(q_values_and_ties),
          TEST_CASE(star), TEST_CASE(qvalue_grammar), TEST_CASE(malformed_elements_are_skipped),
          TEST_CASE(duplicates_keep_lowest_q), TEST_CASE(content_types), TEST_CASE(choose),
          TEST_CASE(vary_and_names), TEST_CASE(long_header_is_linear_and_safe),
          TEST_CASE(accept_media_q))
