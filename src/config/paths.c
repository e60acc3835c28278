/*
 * Relative paths in dataset blocks are relative to the config file's
 * directory, not to the server's working directory, so a config file and its
 * data can move together. config_load_text applies this to every [[dataset]];
 * the HTTP registration path applies it to JSON bodies.
 */
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"

int config_dataset_resolve_paths(struct vt_dataset_config *ds, const char *dir)
{
    const char *loc = ds->location;
    if (!loc || !*loc || loc[0] == '/' || strstr(loc, "://") || !dir || !*dir)
        return 0;
    char *abs = cfg_resolve_against(dir, loc);
    if (!abs)
        return -1;
    free(ds->location);
    ds->location = abs;
    return 0;
}
