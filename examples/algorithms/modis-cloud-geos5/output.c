/* modis-cloud-geos5: one day's statistics as CF-1.8 netCDF-4 (deflated: most cells are
 * empty), through the netCDF C library. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>

#include "cloud.h"

#define CHECK(call)                                                                          \
    do {                                                                                     \
        int status_ = (call);                                                                \
        if (status_ != NC_NOERR) {                                                           \
            snprintf(error, WORD, "netCDF: %s", nc_strerror(status_));                       \
            if (ncid >= 0) nc_close(ncid);                                                   \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

static int text(int ncid, int var, const char *name, const char *value) {
    return nc_put_att_text(ncid, var, name, strlen(value), value);
}

/* A coordinate variable NAME(NAME) with NAME_bnds(NAME, bnds) and its attributes (pairs). */
static int coordinate(int ncid, const char *name, int dim, int bnds, const char **attrs,
                      int *var, int *bounds_var) {
    int dims[2] = {dim, bnds};
    char bounds[64];
    snprintf(bounds, sizeof bounds, "%s_bnds", name);
    int status = nc_def_var(ncid, name, NC_DOUBLE, 1, &dim, var);
    for (int i = 0; status == NC_NOERR && attrs[i]; i += 2)
        status = text(ncid, *var, attrs[i], attrs[i + 1]);
    if (status == NC_NOERR) status = text(ncid, *var, "bounds", bounds);
    if (status == NC_NOERR) status = nc_def_var(ncid, bounds, NC_DOUBLE, 2, dims, bounds_var);
    return status;
}

static int packed(int ncid, const char *name, nc_type type, const int *dims, int *var) {
    int status = nc_def_var(ncid, name, type, 3, dims, var);
    if (status == NC_NOERR) status = nc_def_var_deflate(ncid, *var, 1, 1, 4);
    return status;
}

int write_day(const char *path, const Grid *grid, const DayFile *file, const Variable *vars,
              const Statistics *stats, int n_vars, char *error) {
    int ncid = -1, time_dim, lat_dim, lon_dim, bnds_dim;
    int time_var, time_bnds, lat_var, lat_bnds, lon_var, lon_bnds;
    int mean_var[8], count_var[8], std_var[8];
    const float fill = NC_FILL_FLOAT;
    char start[64], end[64], name[256];
    CHECK(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    snprintf(start, sizeof start, "%sT00:00:00Z", file->day);
    snprintf(end, sizeof end, "%sT00:00:00Z", file->next_day);
    const char *globals[] = {"Conventions", "CF-1.8", "title", file->title,
                             "source", file->source, "history", file->history,
                             "input_granules", file->granules, "grid", grid->name,
                             "comment", file->comment, "time_coverage_start", start,
                             "time_coverage_end", end, NULL};
    for (int i = 0; globals[i]; i += 2) CHECK(text(ncid, NC_GLOBAL, globals[i], globals[i + 1]));
    CHECK(nc_def_dim(ncid, "time", 1, &time_dim));
    CHECK(nc_def_dim(ncid, "lat", (size_t)grid->nlat, &lat_dim));
    CHECK(nc_def_dim(ncid, "lon", (size_t)grid->nlon, &lon_dim));
    CHECK(nc_def_dim(ncid, "bnds", 2, &bnds_dim));
    const char *time_attrs[] = {"standard_name", "time", "long_name", "time", "axis", "T",
                                "units", "days since 1970-01-01 00:00:00",
                                "calendar", "standard", NULL};
    const char *lat_attrs[] = {"standard_name", "latitude", "long_name", "latitude",
                               "units", "degrees_north", "axis", "Y", NULL};
    const char *lon_attrs[] = {"standard_name", "longitude", "long_name", "longitude",
                               "units", "degrees_east", "axis", "X", NULL};
    CHECK(coordinate(ncid, "time", time_dim, bnds_dim, time_attrs, &time_var, &time_bnds));
    CHECK(coordinate(ncid, "lat", lat_dim, bnds_dim, lat_attrs, &lat_var, &lat_bnds));
    CHECK(coordinate(ncid, "lon", lon_dim, bnds_dim, lon_attrs, &lon_var, &lon_bnds));
    int dims[3] = {time_dim, lat_dim, lon_dim};
    for (int v = 0; v < n_vars && v < 8; v++) {
        const Variable *var = &vars[v];
        char words[2 * WORD], kept[2 * WORD];
        snprintf(kept, sizeof kept, "kept: %s", var->quality);

        snprintf(name, sizeof name, "%s_mean", var->name);
        CHECK(packed(ncid, name, NC_FLOAT, dims, &mean_var[v]));
        CHECK(nc_def_var_fill(ncid, mean_var[v], NC_FILL, &fill));
        CHECK(text(ncid, mean_var[v], "standard_name", var->standard_name));
        snprintf(words, sizeof words, "daily mean %s", var->long_name);
        CHECK(text(ncid, mean_var[v], "long_name", words));
        CHECK(text(ncid, mean_var[v], "units", var->units));
        CHECK(text(ncid, mean_var[v], "cell_methods", "area: time: mean"));
        snprintf(words, sizeof words, "%s_count %s_std", var->name, var->name);
        CHECK(text(ncid, mean_var[v], "ancillary_variables", words));
        CHECK(text(ncid, mean_var[v], "source", var->source));
        CHECK(text(ncid, mean_var[v], "comment", kept));

        snprintf(name, sizeof name, "%s_count", var->name);
        CHECK(packed(ncid, name, NC_INT, dims, &count_var[v]));
        snprintf(words, sizeof words, "%s number_of_observations", var->standard_name);
        CHECK(text(ncid, count_var[v], "standard_name", words));
        snprintf(words, sizeof words, "number of %s observations kept", var->long_name);
        CHECK(text(ncid, count_var[v], "long_name", words));
        CHECK(text(ncid, count_var[v], "units", "1"));
        CHECK(text(ncid, count_var[v], "source", var->source));
        CHECK(text(ncid, count_var[v], "comment", kept));

        snprintf(name, sizeof name, "%s_std", var->name);
        CHECK(packed(ncid, name, NC_FLOAT, dims, &std_var[v]));
        CHECK(nc_def_var_fill(ncid, std_var[v], NC_FILL, &fill));
        CHECK(text(ncid, std_var[v], "standard_name", var->standard_name));
        snprintf(words, sizeof words, "daily standard deviation of %s", var->long_name);
        CHECK(text(ncid, std_var[v], "long_name", words));
        CHECK(text(ncid, std_var[v], "units", var->units));
        CHECK(text(ncid, std_var[v], "cell_methods", "area: time: standard_deviation"));
        CHECK(text(ncid, std_var[v], "source", var->source));
        CHECK(text(ncid, std_var[v], "comment",
                   "population standard deviation: the root of the mean squared deviation"));
    }
    CHECK(nc_enddef(ncid));

    double day = (double)file->epoch_day;
    double time_value = day + 0.5, time_bounds[2] = {day, day + 1};
    CHECK(nc_put_var_double(ncid, time_var, &time_value));
    CHECK(nc_put_var_double(ncid, time_bnds, time_bounds));
    size_t cells = (size_t)grid->nlat * (size_t)grid->nlon;
    double *centres = malloc(sizeof(double) * (size_t)(grid->nlon > grid->nlat ? grid->nlon
                                                                               : grid->nlat));
    double *bounds = malloc(sizeof(double) * 2 * (size_t)(grid->nlon > grid->nlat ? grid->nlon
                                                                                  : grid->nlat));
    for (int j = 0; j < grid->nlat; j++) {
        centres[j] = -90.0 + grid->dlat * j;
        bounds[2 * j] = fmax(-90.0, centres[j] - grid->dlat / 2);
        bounds[2 * j + 1] = fmin(90.0, centres[j] + grid->dlat / 2);
    }
    CHECK(nc_put_var_double(ncid, lat_var, centres));
    CHECK(nc_put_var_double(ncid, lat_bnds, bounds));
    for (int i = 0; i < grid->nlon; i++) {
        centres[i] = -180.0 + grid->dlon * i;
        bounds[2 * i] = centres[i] - grid->dlon / 2;
        bounds[2 * i + 1] = centres[i] + grid->dlon / 2;
    }
    CHECK(nc_put_var_double(ncid, lon_var, centres));
    CHECK(nc_put_var_double(ncid, lon_bnds, bounds));
    free(centres);
    free(bounds);
    float *buffer = malloc(cells * sizeof *buffer);
    for (int v = 0; v < n_vars && v < 8; v++) {
        for (size_t c = 0; c < cells; c++)
            buffer[c] = isnan(stats[v].mean[c]) ? fill : (float)stats[v].mean[c];
        CHECK(nc_put_var_float(ncid, mean_var[v], buffer));
        CHECK(nc_put_var_int(ncid, count_var[v], stats[v].count));
        for (size_t c = 0; c < cells; c++)
            buffer[c] = isnan(stats[v].std[c]) ? fill : (float)stats[v].std[c];
        CHECK(nc_put_var_float(ncid, std_var[v], buffer));
    }
    free(buffer);
    CHECK(nc_close(ncid));
    return 0;
}
