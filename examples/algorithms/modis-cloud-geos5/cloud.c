/* modis-cloud-geos5: MOD06_L2 cloud fraction, cloud-top pressure and cloud-top temperature,
 * one day's mean, count and standard deviation per GEOS-5 cell, in C.
 *
 * Follows nearline's runtime contract through job.txt (NEARLINE_JOB_TEXT names it): "outputs
 * PATH", "input granules PATH", "parameter grid NAME". Granules are grouped by the day
 * CoreMetadata.0 gives them, and each day is reduced on its own: its valid observations are
 * held at once (a cell and a float value each, 8 bytes), summed per cell in double precision
 * for the mean, then their squared deviations from it for the standard deviation (exact, two
 * passes). Kept:
 *   Cloud_Fraction: not its _FillValue, within valid_range (the cloud mask decides it; the
 *     5 km QA flags are the cloud-top retrieval's, "not useful" where there is no cloud);
 *   Cloud_Top_Pressure, Cloud_Top_Temperature: valid, and Quality_Assurance_5km byte 0
 *     useful (bit 0) with confidence (bits 1-3) good (2) or very good (3).
 * All three are on the 5 km geolocation (Latitude, Longitude) itself. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cloud.h"

#define MAX_INPUTS 100000
#define N_VARS 3
#define LEAST_CONFIDENCE 2

static const Variable VARIABLES[N_VARS] = {
    {"cloud_fraction", "cloud fraction", "1", "cloud_area_fraction", "MOD06_L2 Cloud_Fraction",
     "Cloud_Fraction valid (not its _FillValue, within valid_range); not screened by "
     "Quality_Assurance_5km, whose flags are the cloud-top retrieval's"},
    {"cloud_top_pressure", "cloud top pressure", "hPa", "air_pressure_at_cloud_top",
     "MOD06_L2 Cloud_Top_Pressure",
     "Cloud_Top_Pressure valid, and Quality_Assurance_5km byte 0 useful (bit 0) with "
     "confidence (bits 1-3) good or very good"},
    {"cloud_top_temperature", "cloud top temperature", "K", "air_temperature_at_cloud_top",
     "MOD06_L2 Cloud_Top_Temperature",
     "Cloud_Top_Temperature valid, and Quality_Assurance_5km byte 0 useful (bit 0) with "
     "confidence (bits 1-3) good or very good"},
};
static const char *FIELDS[N_VARS] = {"Cloud_Fraction", "Cloud_Top_Pressure",
                                     "Cloud_Top_Temperature"};
static const int SCREENED[N_VARS] = {0, 1, 1}; /* by Quality_Assurance_5km byte 0 */

static char outputs[WORD];
static char grid_name[WORD] = "geos5-0.5x0.625";
static char *inputs[MAX_INPUTS];
static int n_inputs = 0;

static void fail(const char *what, const char *name) {
    fprintf(stderr, "modis-cloud-geos5: %s: %s\n", name, what);
    exit(1);
}

static void *grown(void *data, size_t size) {
    void *bigger = realloc(data, size);
    if (!bigger) fail("out of memory", "observations");
    return bigger;
}

/* Undo job.txt's escapes (\\, \t, \n) in place. */
static void unescape(char *word) {
    char *out = word;
    for (char *in = word; *in; in++) {
        if (*in == '\\' && in[1]) {
            in++;
            *out++ = *in == 't' ? '\t' : *in == 'n' ? '\n' : *in;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
}

static void read_job(const char *path) {
    FILE *job = fopen(path, "r");
    if (!job) fail(strerror(errno), path);
    static char line[3 * WORD];
    while (fgets(line, sizeof line, job)) {
        line[strcspn(line, "\n")] = '\0';
        char *saved = NULL;
        char *kind = strtok_r(line, "\t", &saved), *name = strtok_r(NULL, "\t", &saved);
        char *value = strtok_r(NULL, "\t", &saved);
        if (!kind || !name) continue;
        if (strcmp(kind, "outputs") == 0) {
            unescape(name);
            snprintf(outputs, sizeof outputs, "%s", name);
        } else if (strcmp(kind, "input") == 0 && value) {
            if (n_inputs == MAX_INPUTS) fail("too many granules in one run", "job.txt");
            unescape(value);
            inputs[n_inputs++] = strdup(value);
        } else if (strcmp(kind, "parameter") == 0 && value && strcmp(name, "grid") == 0) {
            unescape(value);
            snprintf(grid_name, sizeof grid_name, "%s", value);
        }
    }
    fclose(job);
}

static Grid grid_named(const char *name) {
    Grid grid = {name, 0.5, 0.625, 361, 576};
    if (strcmp(name, "geos5-1x1.25") == 0) {
        grid.dlat = 1.0;
        grid.dlon = 1.25;
        grid.nlat = 181;
        grid.nlon = 288;
    } else if (strcmp(name, "geos5-0.5x0.625") != 0) {
        fail("expected geos5-0.5x0.625 or geos5-1x1.25", "grid");
    }
    return grid;
}

/* The cell of a point, numbered row * nlon + col from the south pole; -1 if it has no place.
 * As nearline's grid registry: rows half open to the north, counted from the north edge at
 * 90 + dlat / 2; columns from -180 - dlon / 2, wrapping. */
static long cell_of(const Grid *grid, double lon, double lat) {
    if (!(lat >= -90.0 && lat <= 90.0) || !isfinite(lon)) return -1;
    double from_north = floor((90.0 + grid->dlat / 2 - lat) / grid->dlat);
    double col = fmod(floor((lon - (-180.0 - grid->dlon / 2)) / grid->dlon), grid->nlon);
    if (col < 0) col += grid->nlon;
    return (long)(grid->nlat - 1 - from_north) * grid->nlon + (long)col;
}

/* Days since 1970-01-01 of a civil date, and back (H. Hinnant's algorithms). */
static long days_from_civil(long y, long m, long d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + (yoe * 365 + yoe / 4 - yoe / 100 + doy) - 719468;
}

static void civil_from_days(long z, char *out, size_t n) {
    z += 719468;
    long era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    long d = doy - (153 * mp + 2) / 5 + 1, m = mp + (mp < 10 ? 3 : -9), y = yoe + era * 400;
    snprintf(out, n, "%04ld-%02ld-%02ld", y + (m <= 2), m, d);
}

static int by_time(const void *a, const void *b) {
    const GranuleInfo *x = a, *y = b;
    int order = strcmp(x->day, y->day);
    if (!order) order = strcmp(x->time, y->time);
    return order ? order : strcmp(x->name, y->name);
}

static int by_text(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct {
    int32_t *cell;
    float *value;
    size_t n, capacity;
} Observations;

static void keep(Observations *obs, long cell, double value) {
    if (obs->n == obs->capacity) {
        obs->capacity = obs->capacity ? 2 * obs->capacity : 65536;
        obs->cell = grown(obs->cell, obs->capacity * sizeof *obs->cell);
        obs->value = grown(obs->value, obs->capacity * sizeof *obs->value);
    }
    obs->cell[obs->n] = (int32_t)cell;
    obs->value[obs->n++] = (float)value;
}

/* One granule's kept observations, appended in row-major order. */
static void observe(const GranuleInfo *info, const Grid *grid, Observations *obs) {
    char error[WORD];
    Granule *granule = granule_open(info->path, error);
    if (!granule) fail(error, info->name);
    size_t rows, cols, r, c;
    double *lon = granule_decoded(granule, "Longitude", &rows, &cols, error);
    double *lat = lon ? granule_decoded(granule, "Latitude", &r, &c, error) : NULL;
    unsigned char *qa = NULL;
    if (lat) qa = granule_byte(granule, "Quality_Assurance_5km", 0, &r, &c, error);
    if (!qa) fail(error, info->name);
    if (r != rows || c != cols) fail("is not on the 5 km geolocation", "Quality_Assurance_5km");
    double *field[N_VARS];
    for (int v = 0; v < N_VARS; v++) {
        field[v] = granule_decoded(granule, FIELDS[v], &r, &c, error);
        if (!field[v]) fail(error, info->name);
        if (r != rows || c != cols) fail("a field is not on the 5 km geolocation", FIELDS[v]);
    }
    granule_close(granule);
    for (size_t i = 0; i < rows * cols; i++) {
        long cell = cell_of(grid, lon[i], lat[i]);
        if (cell < 0) continue;
        int good = (qa[i] & 1) && ((qa[i] >> 1) & 7) >= LEAST_CONFIDENCE;
        for (int v = 0; v < N_VARS; v++)
            if (!isnan(field[v][i]) && (!SCREENED[v] || good)) keep(&obs[v], cell, field[v][i]);
    }
    for (int v = 0; v < N_VARS; v++) free(field[v]);
    free(lon);
    free(lat);
    free(qa);
}

/* Mean, count and population standard deviation per cell: two passes over the held values,
 * summed in the order they came. */
static Statistics reduce(const Observations *obs, size_t cells) {
    Statistics s = {calloc(cells, sizeof(double)), calloc(cells, sizeof(double)),
                    calloc(cells, sizeof(int32_t))};
    double *sums = s.mean, *squares = s.std;
    if (!sums || !squares || !s.count) fail("out of memory", "statistics");
    for (size_t i = 0; i < obs->n; i++) {
        sums[obs->cell[i]] += (double)obs->value[i];
        s.count[obs->cell[i]]++;
    }
    for (size_t c = 0; c < cells; c++) s.mean[c] = s.count[c] ? sums[c] / s.count[c] : NAN;
    for (size_t i = 0; i < obs->n; i++) {
        double d = (double)obs->value[i] - s.mean[obs->cell[i]];
        squares[obs->cell[i]] += d * d;
    }
    for (size_t c = 0; c < cells; c++)
        s.std[c] = s.count[c] ? sqrt(squares[c] / (double)s.count[c]) : NAN;
    return s;
}

/* Text joined from `count` words with `between`, into a new string. */
static char *joined(char **words, int count, const char *between) {
    size_t size = 1;
    for (int i = 0; i < count; i++) size += strlen(words[i]) + strlen(between);
    char *out = calloc(size, 1);
    for (int i = 0; i < count; i++) {
        if (i) strcat(out, between);
        strcat(out, words[i]);
    }
    return out;
}

static void reduce_day(const GranuleInfo *day, int n, const Grid *grid) {
    Observations obs[N_VARS] = {{0}};
    for (int g = 0; g < n; g++) observe(&day[g], grid, obs);
    size_t cells = (size_t)grid->nlat * (size_t)grid->nlon;
    Statistics stats[N_VARS];
    for (int v = 0; v < N_VARS; v++) {
        stats[v] = reduce(&obs[v], cells);
        free(obs[v].cell);
        free(obs[v].value);
    }

    char **names = malloc((size_t)n * sizeof *names);
    char **products = malloc((size_t)n * sizeof *products);
    int n_products = 0;
    for (int g = 0; g < n; g++) {
        names[g] = (char *)day[g].name;
        char product[200];
        snprintf(product, sizeof product, "%s (%s)", day[g].short_name, day[g].platform);
        int seen = 0;
        for (int p = 0; p < n_products; p++) seen |= strcmp(products[p], product) == 0;
        if (!seen) products[n_products++] = strdup(product);
    }
    qsort(products, (size_t)n_products, sizeof *products, by_text);
    char *granules = joined(names, n, " "), *product_list = joined(products, n_products, ", ");
    char *source = malloc(strlen(granules) + strlen(product_list) + 64);
    sprintf(source, "MODIS Level-2 %s granules: %s", product_list, granules);
    char stamp[64], history[WORD], comment[WORD] = "", next_day[64];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    snprintf(history, sizeof history,
             "%s modis-cloud-geos5: %d granules of %s reduced to %s (mean, count and standard "
             "deviation per cell)", stamp, n, day[0].day, grid->name);
    for (int v = 0; v < N_VARS; v++) {
        size_t used = strlen(comment);
        snprintf(comment + used, sizeof comment - used, "%s%s: %s.", v ? " " : "",
                 VARIABLES[v].name, VARIABLES[v].quality);
    }
    long y, m, d;
    if (sscanf(day[0].day, "%ld-%ld-%ld", &y, &m, &d) != 3) fail("not YYYY-MM-DD", day[0].day);
    long epoch_day = days_from_civil(y, m, d);
    civil_from_days(epoch_day + 1, next_day, sizeof next_day);
    char title[256];
    snprintf(title, sizeof title, "MODIS cloud properties (MOD06_L2) on the %s grid, daily",
             grid->name);
    DayFile file = {title, source, history, granules, comment, day[0].day, next_day, epoch_day};
    char path[2 * WORD], error[WORD];
    snprintf(path, sizeof path, "%s/cloud-%s-%s.nc", outputs, grid->name, day[0].day);
    if (write_day(path, grid, &file, VARIABLES, stats, N_VARS, error)) fail(error, path);
    printf("%s: %d granules, kept %zu cloud_fraction, %zu cloud_top_pressure, %zu "
           "cloud_top_temperature; wrote %s\n", day[0].day, n, obs[0].n, obs[1].n, obs[2].n,
           strrchr(path, '/') + 1);
    fflush(stdout);
    for (int v = 0; v < N_VARS; v++) {
        free(stats[v].mean);
        free(stats[v].std);
        free(stats[v].count);
    }
    for (int p = 0; p < n_products; p++) free(products[p]);
    free(products);
    free(names);
    free(granules);
    free(product_list);
    free(source);
}

int main(void) {
    const char *job = getenv("NEARLINE_JOB_TEXT");
    if (!job) fail("set it to the job.txt to run", "NEARLINE_JOB_TEXT");
    read_job(job);
    Grid grid = grid_named(grid_name);
    GranuleInfo *granules = calloc((size_t)n_inputs, sizeof *granules);
    char error[WORD];
    for (int i = 0; i < n_inputs; i++) {
        Granule *granule = granule_open(inputs[i], error);
        if (!granule || granule_info(granule, &granules[i], error)) fail(error, inputs[i]);
        granule_close(granule);
        const char *product = granules[i].short_name;
        if (strcmp(product, "MOD06_L2") && strcmp(product, "MYD06_L2")) {
            snprintf(error, sizeof error, "is %s; modis-cloud-geos5 reduces MOD06_L2 or MYD06_L2",
                     product);
            fail(error, granules[i].name);
        }
    }
    qsort(granules, (size_t)n_inputs, sizeof *granules, by_time);
    for (int first = 0, last; first < n_inputs; first = last) {
        for (last = first; last < n_inputs && !strcmp(granules[last].day, granules[first].day);)
            last++;
        reduce_day(&granules[first], last - first, &grid);
    }
    free(granules);
    for (int i = 0; i < n_inputs; i++) free(inputs[i]);
    return 0;
}
