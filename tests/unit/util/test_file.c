/*
 * util_read_file (capped whole-file reads: regular files only, FIFOs refused
 * without blocking, the cap enforced) and strvec.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "util/file.h"
#include "util/strvec.h"

static char dir[] = "/tmp/vt-file-test-XXXXXX";

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

TEST(reads_regular_files)
{
    char path[256];
    snprintf(path, sizeof path, "%s/a.toml", dir);
    write_text(path, "port = 1\n");
    char *buf = NULL;
    size_t len = 0;
    struct vt_error err = {0};
    CHECK(util_read_file(path, 100, VT_ERR_INVALID_CONFIG, &buf, &len, &err) == VT_ERR_OK);
    CHECK_EQ_INT(len, 9);
    CHECK_EQ_STR(buf, "port = 1\n");
    free(buf);

    /* Exactly at the cap passes, one byte over fails with the size named. */
    CHECK(util_read_file(path, 9, VT_ERR_INVALID_CONFIG, &buf, &len, &err) == VT_ERR_OK);
    free(buf);
    char want[400];
    snprintf(want, sizeof want, "%s: larger than the 8-byte limit", path);
    CHECK(util_read_file(path, 8, VT_ERR_INVALID_CONFIG, &buf, &len, &err) ==
          VT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.msg, want);
    CHECK(buf == NULL && len == 0);

    /* Empty file: an empty, NUL-terminated buffer. */
    snprintf(path, sizeof path, "%s/empty", dir);
    write_text(path, "");
    vt_error_clear(&err);
    CHECK(util_read_file(path, 8, VT_ERR_INTERNAL, &buf, &len, &err) == VT_ERR_OK);
    CHECK(buf != NULL && len == 0 && buf[0] == '\0');
    free(buf);
    unlink(path);
    snprintf(path, sizeof path, "%s/a.toml", dir);
    unlink(path);
}

TEST(refuses_what_is_not_a_regular_file)
{
    char *buf = NULL;
    size_t len = 0;
    struct vt_error err = {0};
    CHECK(util_read_file("/nonexistent/x", 8, VT_ERR_INTERNAL, &buf, &len, &err) ==
          VT_ERR_INTERNAL);
    CHECK_EQ_STR(err.msg, "/nonexistent/x: cannot open: No such file or directory");
    vt_error_clear(&err);
    CHECK(util_read_file(dir, 8, VT_ERR_INTERNAL, &buf, &len, &err) == VT_ERR_INTERNAL);
    CHECK_CONTAINS(err.msg, ": not a regular file");
    /* A FIFO with no writer: open() would block without O_NONBLOCK. */
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/cfg.toml", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    vt_error_clear(&err);
    CHECK(util_read_file(fifo, 8, VT_ERR_INTERNAL, &buf, &len, &err) == VT_ERR_INTERNAL);
    CHECK_CONTAINS(err.msg, ": not a regular file");
    unlink(fifo);
    vt_error_clear(&err);
    CHECK(util_read_file("/dev/zero", 8, VT_ERR_INTERNAL, &buf, &len, &err) == VT_ERR_INTERNAL);
    CHECK_CONTAINS(err.msg, ": not a regular file");
}

TEST(strvec_basics)
{
    struct strvec a = {0}, b = {0};
    CHECK_EQ_INT(strvec_push(&a, "x"), 0);
    CHECK_EQ_INT(strvec_push(&a, "y"), 0);
    CHECK_EQ_INT(strvec_find(&a, "y"), 1);
    CHECK_EQ_INT(strvec_find(&a, "z"), -1);
    CHECK_EQ_INT(strvec_copy(&b, &a), 0);
    CHECK(strvec_equal(&a, &b) && a.items[0] != b.items[0]);
    strvec_push(&b, "z");
    CHECK(!strvec_equal(&a, &b));
    strvec_free(&a);
    strvec_free(&a); /* safe twice */
    strvec_free(&b);
    CHECK(a.items == NULL && a.len == 0);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    struct tl_case cases[] = {TEST_CASE(reads_regular_files),
                              TEST_CASE(refuses_what_is_not_a_regular_file),
                              TEST_CASE(strvec_basics)};
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    rmdir(dir);
    return rc;
}
