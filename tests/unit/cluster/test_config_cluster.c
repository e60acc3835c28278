/* [cluster] settings (src/config/schema.c rows, checked by check-config). */
#include <stdlib.h>

#include "config/config.h"
#include "testlib.h"

static enum vt_err load(const char *text, struct vt_config *cfg, struct vt_error *err)
{
    return config_load_text(text, strlen(text), "c.toml", "/tmp", cfg, err);
}

TEST(defaults_are_standalone)
{
    struct vt_config cfg;
    struct vt_error err = {0};
    CHECK_EQ_INT(load("", &cfg, &err), VT_ERR_OK);
    CHECK_EQ_INT(cfg.cluster.role, CFG_ROLE_STANDALONE);
    CHECK_EQ_INT(cfg.cluster.poll_interval_ms, 2000);
    CHECK_EQ_INT(cfg.server.drain_delay_secs, 0);
    config_free(&cfg);
}

TEST(reader_and_writer)
{
    struct vt_config cfg;
    struct vt_error err = {0};
    CHECK_EQ_INT(load("[cluster]\nrole = \"reader\"\nstorage = \"s3://b/p\"\n"
                      "writer_url = \"http://w:8080\"\n[cluster.s3]\n"
                      "endpoint = \"http://127.0.0.1:9000\"\nallow_http = true\n",
                      &cfg, &err),
                 VT_ERR_OK);
    CHECK_EQ_INT(cfg.cluster.role, CFG_ROLE_READER);
    CHECK_EQ_STR(cfg.cluster.writer_url, "http://w:8080");
    CHECK(cfg.cluster.s3.allow_http);
    config_free(&cfg);
    CHECK_EQ_INT(config_cluster_role_parse("writer"), CFG_ROLE_WRITER);
    CHECK_EQ_INT(config_cluster_role_parse("leader"), -1);
}

TEST(refusals)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"[cluster]\nrole = \"writer\"\n", "cluster.storage: required"},
        {"[cluster]\nrole = \"primary\"\nstorage = \"s3://b\"\n", "cluster.role"},
        {"[cluster]\nstorage = \"/var/x\"\n", "expected \"s3://bucket\""},
        {"[cluster]\nstorage = \"s3://b/*.parquet\"\n", "no glob"},
        {"[cluster]\nstorage = \"s3://b\"\npin_secs = 600\ngc_grace_secs = 300\n",
         "gc_grace_secs: must be at least"},
        {"[cluster]\nstorage = \"s3://b\"\n[cluster.s3]\nendpoint = \"http://x\"\n",
         "cluster.s3.allow_http"},
        {"[cluster]\npoll_interval_ms = 5\n", "poll_interval_ms"},
        {"[server]\ndrain_delay_secs = -1\n", "drain_delay_secs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct vt_config cfg;
        struct vt_error err = {0};
        CHECK(load(bad[i].text, &cfg, &err) != VT_ERR_OK);
        CHECK_CONTAINS(vt_error_message(&err), bad[i].says);
    }
}

RUN_TESTS(TEST_CASE(defaults_are_standalone), TEST_CASE(reader_and_writer), TEST_CASE(refusals))
