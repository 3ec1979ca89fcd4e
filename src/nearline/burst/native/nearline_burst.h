/* nearline burst: hand a model's output to Python I/O servers started in the same MPI job.
 *
 *   mpiexec -n 32 ./model : -n 4 python -m nearline.burst.server --root OUT
 *
 * Build with the flags `nearline burst-config --cflags --libs` prints. docs/burst.md shows a
 * complete model; docs/burst-protocol.md is the wire protocol this library speaks. */
#ifndef NEARLINE_BURST_H
#define NEARLINE_BURST_H

#include <stddef.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nlb nlb_t;

typedef enum {
    NLB_INT8 = 0,
    NLB_INT16,
    NLB_INT32,
    NLB_INT64,
    NLB_UINT8,
    NLB_UINT16,
    NLB_UINT32,
    NLB_UINT64,
    NLB_FLOAT32,
    NLB_FLOAT64
} nlb_dtype;

/* Return codes: 0 is success; nlb_error() gives the text of any other. */
enum {
    NLB_OK = 0,
    NLB_EINPUT = 1, /* a call's arguments were refused (by the library or by the server) */
    NLB_EIO = 2,    /* an I/O server failed to write (a sink error, a hole, a full disk) */
    NLB_EDEAD = 3,  /* an I/O server died */
    NLB_EMPI = 4,   /* an MPI call failed, or the job is not a burst job */
    NLB_ECLOSED = 5 /* the handle is finalized, or was never initialized */
};

/* Collective over `world` (MPI_COMM_WORLD): meet the I/O servers. `model_comm` receives the
 * compute ranks only; the model uses it instead of MPI_COMM_WORLD. */
int nlb_init(MPI_Comm world, MPI_Comm *model_comm, nlb_t **io);

/* Hand over one block and return once it is queued; `data` may be reused at once.
 * start == global == NULL: a per-rank variable in this rank's own file. Otherwise the block
 * of `count` elements sits at `start` of a global array of shape `global`, assembled from every
 * rank's blocks. Shapes are C order (last index fastest). */
int nlb_write(nlb_t *io, const char *file, const char *name, int step, nlb_dtype dtype, int ndim,
              const size_t *count, const size_t *start, const size_t *global, const void *data);

/* Zero-copy: a block of the I/O server's queue memory to compute into (NULL on error; see
 * nlb_error). The arguments are nlb_write's without the data. nlb_commit hands it over with no
 * copy; the pointer is the server's from then on. Where the server's memory is not shared
 * (another node, a full queue under spill or sync) the buffer is ordinary memory and
 * nlb_commit sends it, so the model's code is the same everywhere. */
void *nlb_buffer(nlb_t *io, const char *file, const char *name, int step, nlb_dtype dtype,
                 int ndim, const size_t *count, const size_t *start, const size_t *global);
int nlb_commit(nlb_t *io, void *buffer);

/* A string attribute of a variable, sent with each of its writes from now on (the same key
 * again replaces the value). */
int nlb_attr(nlb_t *io, const char *file, const char *name, const char *key, const char *value);

/* Ask the servers to write what is queued for `file` (NULL: every file). Returns at once.
 * Collective: every compute rank calls it, in the same order. */
int nlb_flush(nlb_t *io, const char *file);

/* Block until every flush made so far is durable (fsync'd and renamed into place). */
int nlb_wait(nlb_t *io, const char *file);

/* Flush everything, wait until durable, let the servers stop, and free `io`. Collective. */
int nlb_finalize(nlb_t *io);

/* The text of the error behind the last non-zero return ("" if none). */
const char *nlb_error(const nlb_t *io);

/* For the Fortran module nearline_burst: nlb_init with Fortran handles, refusing a call with
 * the module's own words (returns NLB_EINPUT), and nlb_buffer returning its code. */
int nlb_init_f(MPI_Fint world, MPI_Fint *model_comm, nlb_t **io);
int nlb_refuse(nlb_t *io, const char *text);
int nlb_buffer_f(nlb_t *io, const char *file, const char *name, int step, nlb_dtype dtype,
                 int ndim, const size_t *count, const size_t *start, const size_t *global,
                 void **buffer);

#ifdef __cplusplus
}
#endif

#endif
