/* modis-cloud-geos5: reading MODIS Level-2 granules through HDF4's SD interface, as the real
 * products are read: ECS CoreMetadata.0 for the product, platform and day; each SDS with its
 * own scale_factor, add_offset, _FillValue and valid_range attributes. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mfhdf.h>

#include "cloud.h"

struct Granule {
    int32 sd;
    char path[WORD];
};

Granule *granule_open(const char *path, char *error) {
    int32 sd = SDstart(path, DFACC_READ);
    if (sd == FAIL) {
        snprintf(error, WORD, "HDF4 cannot open it (not an HDF4 file, or truncated)");
        return NULL;
    }
    Granule *granule = calloc(1, sizeof *granule);
    granule->sd = sd;
    snprintf(granule->path, sizeof granule->path, "%s", path);
    return granule;
}

void granule_close(Granule *granule) {
    if (granule) SDend(granule->sd);
    free(granule);
}

/* The VALUE of ODL object NAME in ECS metadata text, unquoted, into out[n]; 0 if found. */
static int ecs_value(const char *text, const char *name, char *out, size_t n) {
    int inside = 0;
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        char key[64], value[WORD];
        char copy[WORD];
        snprintf(copy, sizeof copy, "%.*s", (int)(length < WORD - 1 ? length : WORD - 1), line);
        if (sscanf(copy, " %63[A-Z_] = %4095[^\r\n]", key, value) == 2) {
            char *last = value + strlen(value);
            while (last > value && (last[-1] == ' ' || last[-1] == '\t')) *--last = '\0';
            if (strcmp(key, "OBJECT") == 0 && strcmp(value, name) == 0) {
                inside = 1;
            } else if (strcmp(key, "END_OBJECT") == 0 && strcmp(value, name) == 0) {
                inside = 0;
            } else if (inside && strcmp(key, "VALUE") == 0) {
                char *start = value;
                while (*start == '"' || *start == '(' || *start == ' ') start++;
                char *stop = start + strlen(start);
                while (stop > start && (stop[-1] == '"' || stop[-1] == ')' || stop[-1] == ' '))
                    *--stop = '\0';
                snprintf(out, n, "%s", start);
                return 0;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return 1;
}

int granule_info(Granule *granule, GranuleInfo *info, char *error) {
    int32 index = SDfindattr(granule->sd, "CoreMetadata.0");
    char name[H4_MAX_NC_NAME];
    int32 type, count;
    if (index == FAIL || SDattrinfo(granule->sd, index, name, &type, &count) == FAIL ||
        type != DFNT_CHAR8) {
        snprintf(error, WORD, "no CoreMetadata.0 attribute (not a MODIS product file)");
        return 1;
    }
    char *text = calloc((size_t)count + 1, 1);
    SDreadattr(granule->sd, index, text);
    int missing = ecs_value(text, "SHORTNAME", info->short_name, sizeof info->short_name) |
                  ecs_value(text, "RANGEBEGINNINGDATE", info->day, sizeof info->day) |
                  ecs_value(text, "RANGEBEGINNINGTIME", info->time, sizeof info->time);
    if (ecs_value(text, "ASSOCIATEDPLATFORMSHORTNAME", info->platform, sizeof info->platform))
        snprintf(info->platform, sizeof info->platform, "?");
    free(text);
    if (missing) {
        snprintf(error, WORD, "CoreMetadata.0 lacks SHORTNAME or RANGEBEGINNINGDATE/TIME");
        return 1;
    }
    snprintf(info->path, sizeof info->path, "%s", granule->path);
    const char *slash = strrchr(info->path, '/');
    info->name = slash ? slash + 1 : info->path;
    return 0;
}

/* Element i of a buffer of HDF type `type`, as a double; 0 if the type is not numeric. */
static double element(const void *data, int32 type, size_t i) {
    switch (type) {
    case DFNT_INT8: return ((const int8 *)data)[i];
    case DFNT_CHAR8:
    case DFNT_UINT8: return ((const uint8 *)data)[i];
    case DFNT_INT16: return ((const int16 *)data)[i];
    case DFNT_UINT16: return ((const uint16 *)data)[i];
    case DFNT_INT32: return ((const int32 *)data)[i];
    case DFNT_UINT32: return ((const uint32 *)data)[i];
    case DFNT_FLOAT32: return ((const float32 *)data)[i];
    case DFNT_FLOAT64: return ((const float64 *)data)[i];
    default: return 0.0;
    }
}

/* Values of attribute NAME of an SDS as doubles into out[max]; how many (0: none). */
static int attribute(int32 sds, const char *name, double *out, int max) {
    int32 index = SDfindattr(sds, name);
    char found[H4_MAX_NC_NAME];
    int32 type, count;
    if (index == FAIL || SDattrinfo(sds, index, found, &type, &count) == FAIL || count < 1)
        return 0;
    double buffer[64];
    if (DFKNTsize(type) * count > (int32)sizeof buffer) return 0;
    if (SDreadattr(sds, index, buffer) == FAIL) return 0;
    int n = count < max ? count : max;
    for (int i = 0; i < n; i++) out[i] = element(buffer, type, (size_t)i);
    return n;
}

/* Select SDS NAME and read it whole: its data (malloc'd), type and dimensions. */
static void *read_sds(Granule *granule, const char *name, int32 *type, int32 *rank,
                      int32 *dims, int32 *sds_out, char *error) {
    int32 index = SDnametoindex(granule->sd, name);
    int32 sds = index == FAIL ? FAIL : SDselect(granule->sd, index);
    char found[H4_MAX_NC_NAME];
    int32 n_attrs;
    if (sds == FAIL || SDgetinfo(sds, found, rank, dims, type, &n_attrs) == FAIL) {
        snprintf(error, WORD, "has no SDS %s", name);
        return NULL;
    }
    size_t elements = 1;
    int32 start[H4_MAX_VAR_DIMS] = {0};
    for (int i = 0; i < *rank; i++) elements *= (size_t)dims[i];
    void *data = malloc(elements * (size_t)DFKNTsize(*type));
    if (*rank < 2 || !data || SDreaddata(sds, start, NULL, dims, data) == FAIL) {
        snprintf(error, WORD, "SDS %s cannot be read (rank %d)", name, (int)*rank);
        free(data);
        SDendaccess(sds);
        return NULL;
    }
    *sds_out = sds;
    return data;
}

double *granule_decoded(Granule *granule, const char *name, size_t *rows, size_t *cols,
                        char *error) {
    int32 type, rank, dims[H4_MAX_VAR_DIMS], sds;
    void *data = read_sds(granule, name, &type, &rank, dims, &sds, error);
    if (!data) return NULL;
    double scale = 1.0, offset = 0.0, fill = 0.0, range[2];
    attribute(sds, "scale_factor", &scale, 1);
    attribute(sds, "add_offset", &offset, 1);
    int has_fill = attribute(sds, "_FillValue", &fill, 1);
    int has_range = attribute(sds, "valid_range", range, 2) == 2;
    SDendaccess(sds);
    *rows = (size_t)dims[0];
    *cols = (size_t)dims[1];
    size_t n = *rows * *cols;
    double *values = malloc(n * sizeof *values);
    for (size_t i = 0; i < n; i++) {
        double stored = element(data, type, i);
        int bad = (has_fill && stored == fill) ||
                  (has_range && (stored < range[0] || stored > range[1]));
        values[i] = bad ? NAN : scale * (stored - offset);
    }
    free(data);
    return values;
}

unsigned char *granule_byte(Granule *granule, const char *name, int index, size_t *rows,
                            size_t *cols, char *error) {
    int32 type, rank, dims[H4_MAX_VAR_DIMS], sds;
    void *data = read_sds(granule, name, &type, &rank, dims, &sds, error);
    if (!data) return NULL;
    SDendaccess(sds);
    size_t bytes = rank >= 3 ? (size_t)dims[2] : 1;
    if (DFKNTsize(type) != 1 || (size_t)index >= bytes) {
        snprintf(error, WORD, "SDS %s is not a byte array with a byte %d", name, index);
        free(data);
        return NULL;
    }
    *rows = (size_t)dims[0];
    *cols = (size_t)dims[1];
    size_t n = *rows * *cols;
    unsigned char *out = malloc(n);
    for (size_t i = 0; i < n; i++) out[i] = ((const unsigned char *)data)[i * bytes + index];
    free(data);
    return out;
}
