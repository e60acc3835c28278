/*
 * The table of output formats (encode.h): one row per format. A new format
 * is its file (enc_<name>.c, one struct enc_format) and its row here.
 */
#include "encode/encode.h"

#include <strings.h>

/* Negotiation breaks ties in this order (src/api: a route's default last). */
static const struct enc_format *const formats[] = {
    &enc_arrow,
    &enc_csv,
    &enc_ndjson,
    &enc_json,
};

size_t enc_formats(const struct enc_format *const **out)
{
    *out = formats;
    return sizeof formats / sizeof formats[0];
}

const struct enc_format *enc_format_named(const char *name)
{
    for (size_t i = 0; name && i < sizeof formats / sizeof formats[0]; i++)
        if (!strcasecmp(formats[i]->name, name))
            return formats[i];
    return NULL;
}
