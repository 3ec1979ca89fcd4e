/* modis-cloud-geos5: what its three parts share. The HDF4 reader (granule.c) and the netCDF
 * writer (output.c) are apart because HDF4's mfhdf.h and netCDF's netcdf.h define the same
 * NC_* names differently; cloud.c holds the job, the grid and the reduction. */
#ifndef CLOUD_H
#define CLOUD_H

#include <stddef.h>
#include <stdint.h>

#define WORD 4096

/* what CoreMetadata.0 says of a granule */
typedef struct {
    char path[WORD];
    const char *name; /* the file name, inside path */
    char short_name[64];
    char platform[64];
    char day[64];  /* RANGEBEGINNINGDATE, YYYY-MM-DD */
    char time[64]; /* RANGEBEGINNINGTIME */
} GranuleInfo;

typedef struct Granule Granule; /* an open HDF4 file (SD interface) */

/* Each returns NULL (or nonzero) with a message in error[WORD] when it cannot. */
Granule *granule_open(const char *path, char *error);
void granule_close(Granule *granule);
int granule_info(Granule *granule, GranuleInfo *info, char *error);
/* An SDS's first two dimensions decoded as MODIS defines it, scale_factor * (stored -
 * add_offset), NAN where stored is the _FillValue or outside valid_range. */
double *granule_decoded(Granule *granule, const char *name, size_t *rows, size_t *cols,
                        char *error);
/* Byte `index` of each element of a (rows, cols, bytes) flag SDS, as stored. */
unsigned char *granule_byte(Granule *granule, const char *name, int index, size_t *rows,
                            size_t *cols, char *error);

typedef struct {
    const char *name; /* the grid parameter's value */
    double dlat, dlon;
    int nlat, nlon;
} Grid;

typedef struct {
    const char *name; /* output variables NAME_mean, NAME_count, NAME_std */
    const char *long_name;
    const char *units;
    const char *standard_name;
    const char *source;  /* the SDS */
    const char *quality; /* which pixels are kept, in words */
} Variable;

/* One day's statistics per variable, cells numbered row * nlon + col from the south pole. */
typedef struct {
    double *mean, *std; /* NAN where count is 0 */
    int32_t *count;
} Statistics;

typedef struct {
    const char *title, *source, *history, *granules, *comment;
    const char *day, *next_day; /* YYYY-MM-DD */
    long epoch_day;   /* days since 1970-01-01 */
} DayFile;

int write_day(const char *path, const Grid *grid, const DayFile *file, const Variable *vars,
              const Statistics *stats, int n_vars, char *error);

#endif
