/*
 * Whole-file reads with a size cap, for the small files the service reads in
 * one piece (the config file, the file persist rewrites). Only regular files
 * are read, opened non-blocking so a FIFO or device named like a config file
 * cannot hang the caller, and never more than `max_bytes`.
 *
 * And the durable writes beside them: a whole file replaced atomically (temp
 * file, fsync, rename, fsync of the directory: after a crash the path holds
 * either the old or the new bytes, never a mix), a directory's fsync, and the
 * removal of a directory tree the service made (runtime directory, pinned
 * links).
 */
#ifndef VT_UTIL_FILE_H
#define VT_UTIL_FILE_H

#include <stddef.h>

#include "util/errors.h"

/* Reads `path` into a malloc'd, NUL-terminated buffer (*out_buf, caller
 * frees; *out_len excludes the NUL). On failure returns `code` with a message
 * naming the path and the reason:
 *   "<path>: cannot open: <strerror>"   "<path>: not a regular file"
 *   "<path>: larger than the <max>-byte limit"   "<path>: read error: <strerror>" */
enum vt_err util_read_file(const char *path, size_t max_bytes, enum vt_err code, char **out_buf,
                           size_t *out_len, struct vt_error *err);

/* Writes `data` to `path` atomically: a temp file beside it (mode `mode`, or
 * the mode of the file it replaces), fsync, rename over `path`, fsync of the
 * directory. On failure the temp file is gone and `path` is untouched;
 * returns `code` with a message naming the path. */
enum vt_err util_write_file_atomic(const char *path, const char *data, size_t len,
                                   unsigned mode, enum vt_err code, struct vt_error *err);
/* fsync of a file or directory by path (a rename or unlink inside a directory
 * is durable once the directory is synced). 0, or -1 with errno. */
int util_fsync_path(const char *path);
/* Removes `path` and everything below it, never following symbolic links
 * (a link is removed, not what it points to). Best effort: what cannot be
 * removed stays. */
void util_remove_tree(const char *path);
/* mkdir -p with mode 0755 for what it creates; directories that exist are
 * fine. 0, or -1 with errno. */
int util_make_dirs(const char *dir);

#endif
