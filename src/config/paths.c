/*
 * Relative paths in dataset blocks are relative to the config file's
 * directory, not to the server's working directory, so a config file and its
 * data can move together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int config_dataset_resolve_paths(struct vt_dataset_config *ds, const char *dir)
{
    const char *loc = ds->location;
    if (!loc || !*loc || loc[0] == '/' || strstr(loc, "://") || !dir || !*dir)
        return 0;
    size_t n = strlen(dir) + 1 + strlen(loc) + 1;
    char *abs = malloc(n);
    if (!abs)
        return -1;
    snprintf(abs, n, "%s/%s", dir, loc);
    free(ds->location);
    ds->location = abs;
    return 0;
}
