/*
 * vt-config-ref: prints the configuration reference (docs/configuration.md)
 * rendered from the schema table in src/config/schema.c. `make docs-config`
 * runs it; a unit test checks the committed file is what it prints.
 * Usage: vt-config-ref [--template]   (--template prints `vitrine init`'s file)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--template") == 0) {
        fputs(config_template_text(), stdout);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: vt-config-ref [--template]\n");
        return 2;
    }
    char *md = config_reference_markdown();
    if (!md) {
        fprintf(stderr, "vt-config-ref: out of memory\n");
        return 1;
    }
    fputs(md, stdout);
    free(md);
    return 0;
}
