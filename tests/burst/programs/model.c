/* A C model for the burst tests: every dtype, per-rank and assembled uneven blocks, two
 * assembled files and a per-rank one, several steps. Every value is a function of (variable,
 * step, global index), as tests/burst/expected.py computes it.
 *
 *   model STEPS [KILL_IO_AT MARKER [WRITERS]]
 *
 * At step KILL_IO_AT (-1: never) rank 0 makes the file MARKER, then every step takes 0.2 s:
 * the test kills a server. WRITERS (default: every rank): the first WRITERS ranks of the
 * model's communicator hold the global arrays, when other programs share the job. With
 * MODEL_USES_BUFFER set, the global arrays go through nlb_buffer / nlb_commit. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "nearline_burst.h"

#define NX 11
#define NY 6
#define NZ 5

static const char *NAMES[] = {"v_i1", "v_i2", "v_i4", "v_i8", "v_u1",
                              "v_u2", "v_u4", "v_u8", "v_f4", "v_f8"};
static const size_t ITEM[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8};

static uint32_t crc32_of(const char *text) {
    uint32_t crc = 0xFFFFFFFFu;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        crc ^= *c;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* expected_array(name, step, shape, dtype) at flat global index `at` */
static int64_t value(const char *name, int step, int64_t at) {
    return at % 251 + (int64_t)(crc32_of(name) % 1000) + 7 * step;
}

static void store(void *data, int dtype, size_t i, int64_t v) {
    switch (dtype) {
    case NLB_INT8: ((int8_t *)data)[i] = (int8_t)v; break;
    case NLB_INT16: ((int16_t *)data)[i] = (int16_t)v; break;
    case NLB_INT32: ((int32_t *)data)[i] = (int32_t)v; break;
    case NLB_INT64: ((int64_t *)data)[i] = v; break;
    case NLB_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
    case NLB_UINT16: ((uint16_t *)data)[i] = (uint16_t)v; break;
    case NLB_UINT32: ((uint32_t *)data)[i] = (uint32_t)v; break;
    case NLB_UINT64: ((uint64_t *)data)[i] = (uint64_t)v; break;
    case NLB_FLOAT32: ((float *)data)[i] = (float)v; break;
    default: ((double *)data)[i] = (double)v;
    }
}

/* block_rows(total, ranks, uneven=True): rank r gets about (r + 1) shares */
static void rows_of(int total, int ranks, int rank, size_t *begin, size_t *rows) {
    int weights = ranks * (ranks + 1) / 2, before = 0, mine = 0;
    for (int r = 0; r < ranks; r++) {
        int n = total * (r + 1) / weights;
        if (n < 1) n = 1;
        if (r == ranks - 1) n = total - before;
        if (r == rank) mine = n;
        if (r < rank) before += n;
        else if (r > rank) break;
    }
    *begin = (size_t)before;
    *rows = (size_t)mine;
}

static void check(nlb_t *io, int rc, int rank) {
    if (rc == 0) return;
    fprintf(stderr, "nearline burst: compute rank %d: code %d: %s\n", rank, rc, nlb_error(io));
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int steps = argc > 1 ? atoi(argv[1]) : 2;
    int kill_at = argc > 2 ? atoi(argv[2]) : -1;
    MPI_Comm comm;
    nlb_t *io = NULL;
    check(io, nlb_init(MPI_COMM_WORLD, &comm, &io), -1);
    int rank, size, world_size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int writers = argc > 4 ? atoi(argv[4]) : size;
    int lend = getenv("MODEL_USES_BUFFER") != NULL; /* nlb_buffer / nlb_commit, not nlb_write */
    size_t begin = 0, rows = 0;
    if (rank < writers) rows_of(NX, writers, rank, &begin, &rows);
    size_t count[3] = {rows, NY, NZ}, start[3] = {begin, 0, 0}, global[3] = {NX, NY, NZ};
    void *block = malloc((rows + size) * NY * NZ * 8);
    check(io, nlb_attr(io, "dynamics", "v_f4", "units", "K"), rank);
    for (int step = 0; step < steps; step++) {
        if (step == kill_at) /* every rank has written a step, so each has files at risk */
            MPI_Barrier(comm);
        if (step == kill_at && rank == 0) { /* the test kills an I/O rank once it sees this */
            FILE *marker = fopen(argv[3], "w");
            fclose(marker);
        }
        if (kill_at >= 0 && step >= kill_at) {
            struct timespec pause = {0, 200000000};
            nanosleep(&pause, NULL);
        }
        for (int d = 0; d <= NLB_FLOAT64 && rank < writers; d++) {
            void *into = block;
            if (lend) { /* zero-copy: compute straight into the server's queue memory */
                into = nlb_buffer(io, "dynamics", NAMES[d], step, (nlb_dtype)d, 3, count, start,
                                  global);
                check(io, into ? 0 : 1, rank);
            }
            for (size_t i = 0; i < rows * NY * NZ; i++)
                store(into, d, i, value(NAMES[d], step, (int64_t)(begin * NY * NZ + i)));
            if (lend) {
                check(io, nlb_commit(io, into), rank);
            } else {
                check(io, nlb_write(io, "dynamics", NAMES[d], step, (nlb_dtype)d, 3, count, start,
                                    global, block), rank);
                memset(block, 0xFF, rows * NY * NZ * ITEM[d]); /* reused at once */
            }
        }
        size_t pcount[2] = {rows, 4}, pstart[2] = {begin, 0}, pglobal[2] = {NX, 4};
        for (size_t i = 0; i < rows * 4; i++)
            store(block, NLB_FLOAT32, i, value("p", step, (int64_t)(begin * 4 + i)));
        if (rank < writers)
            check(io, nlb_write(io, "physics", "p", step, NLB_FLOAT32, 2, pcount, pstart,
                                pglobal, block), rank);
        int64_t tag = rank * 100 + step;
        check(io, nlb_write(io, "diag", "rank_step", step, NLB_INT64, 0, NULL, NULL, NULL, &tag),
              rank);
        size_t lcount[2] = {(size_t)rank + 1, 3};
        for (size_t i = 0; i < lcount[0] * 3; i++)
            store(block, NLB_FLOAT64, i, value("local", step, (int64_t)(rank * 1000 + i)));
        check(io, nlb_write(io, "diag", "local", step, NLB_FLOAT64, 2, lcount, NULL, NULL, block),
              rank);
        check(io, nlb_flush(io, NULL), rank);
    }
    check(io, nlb_wait(io, NULL), rank);
    free(block);
    check(io, nlb_finalize(io), rank);
    MPI_Finalize();
    return 0;
}
