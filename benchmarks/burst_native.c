/* The burst benchmark's C model (benchmarks/burst.py builds and runs it MPMD beside Python I/O
 * servers): the same burst as the Python model, each compute rank handing its arrays to its
 * own per-rank file per step, through nlb_write (a copy into the queue) or nlb_buffer +
 * nlb_commit (no copy: the arrays are filled in the queue memory, untimed, as a model would
 * compute into them).
 *
 *   burst_native RESULT.json write|buffer NX NY NZ COUNT REPEATS OUT
 *
 * Step 0 is the warm-up. Compute rank 0 writes the Result JSON that burst.py reads. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <mpi.h>

#include "nearline_burst.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void check(nlb_t *io, int rc) {
    if (rc == 0) return;
    fprintf(stderr, "burst_native: %s\n", nlb_error(io));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int remove_one(const char *path, const struct stat *s, int flag, struct FTW *f) {
    (void)s, (void)flag, (void)f;
    return remove(path);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 9) {
        fprintf(stderr, "usage: burst_native RESULT write|buffer NX NY NZ COUNT REPEATS OUT\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *result = argv[1], *out = argv[8];
    int lend = strcmp(argv[2], "buffer") == 0;
    size_t shape[3] = {strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
                       strtoul(argv[5], NULL, 10)};
    int count = atoi(argv[6]), repeats = atoi(argv[7]);
    MPI_Comm comm;
    nlb_t *io;
    check(NULL, nlb_init(MPI_COMM_WORLD, &comm, &io));
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t elements = shape[0] * shape[1] * shape[2], nbytes = elements * sizeof(float);
    int mine = 0;
    for (int v = rank; v < count; v += size) mine++;
    float **arrays = malloc(sizeof(float *) * (size_t)(mine ? mine : 1));
    for (int k = 0; k < mine; k++) { /* every page touched before timing, as in burst.py */
        arrays[k] = malloc(nbytes);
        for (size_t i = 0; i < elements; i++) arrays[k][i] = (float)(i % 1000) + k;
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    long base = usage.ru_maxrss * 1024L;
    double *pauses = calloc((size_t)repeats, sizeof(double));
    double *durables = calloc((size_t)repeats, sizeof(double));
    for (int step = 0; step <= repeats; step++) {
        MPI_Barrier(comm);
        double began = now(), untimed = 0;
        for (int k = 0; k < mine; k++) {
            char name[32];
            snprintf(name, sizeof name, "var%d", rank + k * size);
            if (lend) {
                float *into = nlb_buffer(io, "bench", name, step, NLB_FLOAT32, 3, shape, NULL,
                                         NULL);
                check(io, into ? 0 : 1);
                double filling = now(); /* the model's compute, into the queue: not a pause */
                memcpy(into, arrays[k], nbytes);
                untimed += now() - filling;
                check(io, nlb_commit(io, into));
            } else {
                check(io, nlb_write(io, "bench", name, step, NLB_FLOAT32, 3, shape, NULL, NULL,
                                    arrays[k]));
            }
        }
        check(io, nlb_flush(io, "bench"));
        double paused = now() - began - untimed;
        check(io, nlb_wait(io, "bench"));
        double durable = now() - began - untimed, slowest[2], mine_[2] = {paused, durable};
        MPI_Allreduce(mine_, slowest, 2, MPI_DOUBLE, MPI_MAX, comm);
        MPI_Barrier(comm);
        if (rank == 0) { /* clear the step's folder, as burst.py does */
            char folder[4096];
            snprintf(folder, sizeof folder, "%s/%06d", out, step);
            nftw(folder, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        }
        if (step > 0) {
            pauses[step - 1] = slowest[0];
            durables[step - 1] = slowest[1];
        }
    }
    getrusage(RUSAGE_SELF, &usage);
    long peak = usage.ru_maxrss * 1024L, peak_max;
    MPI_Reduce(&peak, &peak_max, 1, MPI_LONG, MPI_MAX, 0, comm);
    check(io, nlb_finalize(io));
    if (rank == 0) {
        FILE *json = fopen(result, "w");
        fprintf(json, "{\"name\": \"burst-c-%s\", \"nbytes\": %zu, \"samples\": [",
                argv[2], nbytes * (size_t)count);
        for (int r = 0; r < repeats; r++)
            fprintf(json, "%s{\"pause\": %.9f, \"durable\": %.9f}", r ? ", " : "", pauses[r],
                    durables[r]);
        fprintf(json, "], \"peak_rss\": %ld, \"base_rss\": %ld, \"error\": null, "
                      "\"extra\": {\"compute_ranks\": %d}}\n", peak_max, base, size);
        fclose(json);
    }
    MPI_Finalize();
    return 0;
}
