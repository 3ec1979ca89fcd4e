/* gac-quicklook: a PGM image of one channel and every channel's mean count, per AVHRR GAC
 * Level 1b granule (NOAA KLM format).
 *
 * Follows nearline's runtime contract through job.txt (NEARLINE_JOB_TEXT names it), the
 * tab-separated twin of job.json: "outputs PATH", "input NAME PATH", "parameter NAME VALUE".
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD 4608         /* bytes: the header record, then one record per scan line */
#define ARCHIVE_HEADER 512  /* an optional archive (ARS) header before the first record */
#define SENSOR_OFFSET 1264  /* where a scan line's packed counts start */
#define PIXELS 409
#define CHANNELS 5
#define MAX_INPUTS 4096
#define MAX_WORD 4096

static char outputs[MAX_WORD];
static char *inputs[MAX_INPUTS];
static int n_inputs = 0;
static int channel = 2;

static void fail(const char *what, const char *name) {
    fprintf(stderr, "quicklook: %s: %s\n", what, name);
    exit(1);
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
    char line[3 * MAX_WORD];
    while (fgets(line, sizeof line, job)) {
        line[strcspn(line, "\n")] = '\0';
        char *kind = strtok(line, "\t"), *name = strtok(NULL, "\t"), *value = strtok(NULL, "\t");
        if (!kind || !name) continue;
        if (strcmp(kind, "outputs") == 0) {
            unescape(name);
            snprintf(outputs, sizeof outputs, "%s", name);
        } else if (strcmp(kind, "input") == 0 && value && n_inputs < MAX_INPUTS) {
            unescape(value);
            inputs[n_inputs++] = strdup(value);
        } else if (strcmp(kind, "parameter") == 0 && value && strcmp(name, "channel") == 0) {
            channel = atoi(value);
        }
    }
    fclose(job);
    if (channel < 1 || channel > CHANNELS) fail("channel must be 1 to 5", "parameter");
}

static uint32_t big_endian32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One granule: its image into OUTPUTS/<name>.pgm, its means appended to summary. */
static void quicklook(const char *path, FILE *summary) {
    FILE *in = fopen(path, "rb");
    if (!in) fail(strerror(errno), path);
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    long skip = (size % RECORD == ARCHIVE_HEADER) ? ARCHIVE_HEADER : 0;
    long lines = (size - skip) / RECORD - 1;
    if (lines < 1) fail("not a GAC Level 1b file (no scan lines)", path);
    fseek(in, skip + RECORD, SEEK_SET);

    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char name[2 * MAX_WORD];
    snprintf(name, sizeof name, "%s/%s.pgm", outputs, base);
    FILE *image = fopen(name, "wb");
    if (!image) fail(strerror(errno), name);
    fprintf(image, "P5\n%d %ld\n255\n", PIXELS, lines);

    unsigned char record[RECORD], row[PIXELS];
    double sums[CHANNELS] = {0};
    for (long line = 0; line < lines; line++) {
        if (fread(record, 1, RECORD, in) != RECORD) fail("truncated scan line", path);
        for (int sample = 0; sample < PIXELS * CHANNELS; sample++) {
            uint32_t word = big_endian32(record + SENSOR_OFFSET + 4 * (sample / 3));
            unsigned count = (word >> (20 - 10 * (sample % 3))) & 0x3FF;
            int pixel = sample / CHANNELS, band = sample % CHANNELS;
            sums[band] += count;
            if (band == channel - 1) row[pixel] = (unsigned char)(count >> 2);
        }
        fwrite(row, 1, PIXELS, image);
    }
    fclose(image);
    fclose(in);
    fprintf(summary, "%s,%ld", base, lines);
    for (int band = 0; band < CHANNELS; band++)
        fprintf(summary, ",%.3f", sums[band] / ((double)lines * PIXELS));
    fprintf(summary, "\n");
}

int main(void) {
    const char *job = getenv("NEARLINE_JOB_TEXT");
    if (!job) fail("set NEARLINE_JOB_TEXT to the job.txt to run", "environment");
    read_job(job);
    char name[2 * MAX_WORD];
    snprintf(name, sizeof name, "%s/summary.csv", outputs);
    FILE *summary = fopen(name, "w");
    if (!summary) fail(strerror(errno), name);
    fprintf(summary, "granule,lines,mean_ch1,mean_ch2,mean_ch3,mean_ch4,mean_ch5\n");
    for (int i = 0; i < n_inputs; i++) quicklook(inputs[i], summary);
    fclose(summary);
    return 0;
}
