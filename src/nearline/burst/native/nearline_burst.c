/* nearline burst's C client: the same protocol as the Python client (docs/burst-protocol.md).
 *
 * Control messages are a 12-byte header and a small JSON object; this file writes the JSON it
 * sends and reads the few flat fields of the replies itself, so that a model needs nothing but
 * MPI and libc. */
#define _GNU_SOURCE
#include "nearline_burst.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define TAG_CONTROL 7301
#define TAG_DATA 7302
#define TAG_REPLY 7303

enum { K_WRITE = 1, K_READY = 2, K_FLUSH = 3, K_WAIT = 4, K_STATS = 5, K_CLOSE = 6,
       K_ABANDON = 7, K_LEASE = 8, K_RETURN = 9,
       K_GRANT = 16, K_DONE = 17, K_STATS_REPLY = 18, K_ERROR = 19 };

#define HELLO_SIZE 96
#define HOST_SIZE 64
#define ERROR_SIZE 2048
#define LIVENESS_SECONDS 0.25
#define SPIN_SECONDS 0.002 /* as the Python client: spin this long for a reply, then back off */

typedef struct {
    int role, pid, node, node_rank;
    uint64_t memory;
    char host[HOST_SIZE];
} peer_t;

typedef struct reply {
    int server;
    long id;
    int kind;
    char *body; /* the JSON object, NUL-terminated */
    struct reply *next;
} reply_t;

typedef struct attr {
    char *file, *name, *key, *value;
    struct attr *next;
} attr_t;

struct nlb {
    MPI_Comm world, node, wire, compute;
    MPI_Win window;
    int world_size, world_rank, compute_size, servers, rank, closed;
    peer_t *peers;
    char **segments; /* per server: its queue memory if shared with this rank, else NULL */
    long next_id, flush_seq, epoch;
    reply_t *replies;
    char *pending_error; /* an error a server broadcast, raised at the next call */
    int pending_code;
    attr_t *attrs;
    struct lent *lent; /* blocks lent by nlb_buffer, not yet committed */
    size_t *lease_next, *lease_end; /* per server: this client's lease of its queue memory */
    long *lease_asked;              /* per server: a LEASE not yet answered (0: none) */
    int finalizing;
    int copy_threads; /* the cores of this node over its compute ranks, as in Python */
    char **undurable; /* files written since the last wait */
    int n_undurable;
    double last_check;
    char error[ERROR_SIZE];
};

static char last_error[ERROR_SIZE];

static const char *DTYPES[] = {"|i1", "<i2", "<i4", "<i8", "|u1",
                               "<u2", "<u4", "<u8", "<f4", "<f8"};
static const size_t ITEMSIZE[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8};

/* -- errors --------------------------------------------------------------------------------- */
static int fail(nlb_t *io, int code, const char *format, ...) {
    char *target = io ? io->error : last_error;
    va_list args;
    va_start(args, format);
    vsnprintf(target, ERROR_SIZE, format, args);
    va_end(args);
    if (io) memcpy(last_error, io->error, ERROR_SIZE);
    return code;
}

const char *nlb_error(const nlb_t *io) { return io ? io->error : last_error; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* -- a growing string, for the JSON we send ---------------------------------------------- */
typedef struct {
    char *data;
    size_t len, cap;
} text_t;

static void put(text_t *t, const char *format, ...) {
    va_list args;
    for (;;) {
        size_t room = t->cap - t->len;
        va_start(args, format);
        int n = vsnprintf(t->data ? t->data + t->len : NULL, t->data ? room : 0, format, args);
        va_end(args);
        if (n >= 0 && (size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        t->cap = (t->cap + (size_t)n + 64) * 2;
        t->data = realloc(t->data, t->cap);
    }
}

static void put_string(text_t *t, const char *s) {
    put(t, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') put(t, "\\%c", *c);
        else if (*c < 0x20) put(t, "\\u%04x", *c);
        else put(t, "%c", *c);
    }
    put(t, "\"");
}

static void put_sizes(text_t *t, int ndim, const size_t *values) {
    put(t, "[");
    for (int i = 0; i < ndim; i++) put(t, i ? ",%zu" : "%zu", values[i]);
    put(t, "]");
}

/* -- reading the flat JSON objects the servers send --------------------------------------- */
static const char *field(const char *body, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(body, pattern); /* replies are flat objects of known keys */
    return at ? at + strlen(pattern) : NULL;
}

static long long field_int(const char *body, const char *key, long long otherwise) {
    const char *at = field(body, key);
    return at && (*at == '-' || (*at >= '0' && *at <= '9')) ? strtoll(at, NULL, 10) : otherwise;
}

static void put_utf8(char **out, unsigned code) {
    unsigned char *o = (unsigned char *)*out;
    if (code < 0x80) *o++ = (unsigned char)code;
    else if (code < 0x800) { *o++ = 0xC0 | (code >> 6); *o++ = 0x80 | (code & 0x3F); }
    else if (code < 0x10000) {
        *o++ = 0xE0 | (code >> 12); *o++ = 0x80 | ((code >> 6) & 0x3F); *o++ = 0x80 | (code & 0x3F);
    } else {
        *o++ = 0xF0 | (code >> 18); *o++ = 0x80 | ((code >> 12) & 0x3F);
        *o++ = 0x80 | ((code >> 6) & 0x3F); *o++ = 0x80 | (code & 0x3F);
    }
    *out = (char *)o;
}

/* The string value of `key`, unescaped, in a new buffer (NULL if absent or not a string). */
static char *field_string(const char *body, const char *key) {
    const char *at = field(body, key);
    if (!at || *at != '"') return NULL;
    char *value = malloc(strlen(at) + 1), *out = value;
    for (const char *c = at + 1; *c && *c != '"'; c++) {
        if (*c != '\\') { *out++ = *c; continue; }
        c++;
        switch (*c) {
        case 'n': *out++ = '\n'; break;
        case 't': *out++ = '\t'; break;
        case 'r': *out++ = '\r'; break;
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'u': {
            unsigned code = (unsigned)strtoul((char[5]){c[1], c[2], c[3], c[4], 0}, NULL, 16);
            c += 4;
            if (code >= 0xD800 && code < 0xDC00 && c[1] == '\\' && c[2] == 'u') {
                unsigned low = (unsigned)strtoul((char[5]){c[3], c[4], c[5], c[6], 0}, NULL, 16);
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                c += 6;
            }
            put_utf8(&out, code);
            break;
        }
        default: *out++ = *c; /* \" \\ \/ */
        }
    }
    *out = 0;
    return value;
}

/* -- messages ------------------------------------------------------------------------------ */
static int send_message(nlb_t *io, int server, int kind, const text_t *json) {
    size_t length = json->len;
    unsigned char *data = malloc(12 + length);
    memcpy(data, "NLB1", 4);
    data[4] = (unsigned char)kind;
    data[5] = data[6] = data[7] = 0;
    for (int i = 0; i < 4; i++) data[8 + i] = (unsigned char)(length >> (8 * i));
    memcpy(data + 12, json->data, length);
    int rc = MPI_Send(data, (int)(12 + length), MPI_BYTE, io->compute_size + server, TAG_CONTROL,
                      io->wire);
    free(data);
    return rc == MPI_SUCCESS ? NLB_OK : fail(io, NLB_EMPI, "MPI_Send to I/O server %d failed", server);
}

/* A message of only an id and this client: READY, WAIT, STATS, CLOSE. */
static int send_simple(nlb_t *io, int server, int kind, long id) {
    text_t json = {0};
    put(&json, "{\"id\":%ld,\"client\":%d}", id, io->rank);
    int rc = send_message(io, server, kind, &json);
    free(json.data);
    return rc;
}

static int send_data(nlb_t *io, int server, const void *data, size_t nbytes) {
    /* one message, as the server receives it in place; MPI counts are int */
    if (nbytes > (size_t)INT32_MAX)
        return fail(io, NLB_EINPUT, "a block of %zu bytes is larger than one MPI message "
                    "(2 GiB); write it as several blocks of a global variable", nbytes);
    int rc = MPI_Send(data, (int)nbytes, MPI_BYTE, io->compute_size + server, TAG_DATA, io->wire);
    return rc == MPI_SUCCESS ? NLB_OK : fail(io, NLB_EMPI, "MPI_Send of data failed");
}

static int process_alive(int pid) {
    char path[64], buffer[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *stat = fopen(path, "r");
    if (!stat) return 0;
    size_t n = fread(buffer, 1, sizeof buffer - 1, stat);
    fclose(stat);
    buffer[n] = 0;
    char *state = strrchr(buffer, ')');
    return state && state[1] == ' ' && state[2] != 'Z' && state[2] != 'X';
}

static int undurable_text(nlb_t *io, char *out, size_t room) {
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < io->n_undurable && used < room; i++)
        used += (size_t)snprintf(out + used, room - used, "%s'%s'", i ? ", " : "", io->undurable[i]);
    if (!io->n_undurable) snprintf(out, room, "none");
    return 0;
}

static int check_servers(nlb_t *io) {
    double t = now();
    if (t - io->last_check < LIVENESS_SECONDS) return NLB_OK;
    io->last_check = t;
    peer_t *me = &io->peers[io->world_rank];
    for (int s = 0; s < io->servers; s++) {
        peer_t *peer = &io->peers[io->compute_size + s];
        if (strcmp(peer->host, me->host) == 0 && !process_alive(peer->pid)) {
            char files[1024];
            undurable_text(io, files, sizeof files);
            return fail(io, NLB_EDEAD,
                        "I/O rank %d (pid %d on %s) died; data it had not made durable is lost; "
                        "files written since the last wait: %s",
                        io->compute_size + s, peer->pid, peer->host, files);
        }
    }
    return NLB_OK;
}

/* Take every reply that has arrived; keep ERRORs to raise, the rest by (server, id). */
static int receive(nlb_t *io, int block) {
    double delay = 20e-6, waiting_since = now();
    long spins = 0;
    for (;;) {
        int arrived = 0;
        MPI_Status status;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_REPLY, io->wire, &arrived, &status) != MPI_SUCCESS)
            return fail(io, NLB_EMPI, "MPI_Iprobe failed");
        if (arrived) {
            int count;
            MPI_Get_count(&status, MPI_BYTE, &count);
            unsigned char *data = malloc((size_t)count + 1);
            MPI_Recv(data, count, MPI_BYTE, status.MPI_SOURCE, TAG_REPLY, io->wire,
                     MPI_STATUS_IGNORE);
            if (count < 12 || memcmp(data, "NLB1", 4) != 0) {
                free(data);
                return fail(io, NLB_EMPI, "a malformed reply came from rank %d", status.MPI_SOURCE);
            }
            data[count] = 0;
            reply_t *reply = calloc(1, sizeof *reply);
            reply->server = status.MPI_SOURCE - io->compute_size;
            reply->kind = data[4];
            reply->body = strdup((char *)data + 12);
            reply->id = (long)field_int(reply->body, "id", 0);
            free(data);
            if (reply->kind == K_ERROR) {
                if (!io->pending_error) {
                    io->pending_error = field_string(reply->body, "message");
                    char *type = field_string(reply->body, "type");
                    io->pending_code = type && strcmp(type, "input") == 0 ? NLB_EINPUT : NLB_EIO;
                    free(type);
                }
                free(reply->body);
                free(reply);
            } else {
                reply->next = io->replies;
                io->replies = reply;
            }
            block = 0;
            delay = 20e-6;
            continue;
        }
        if (!block) return NLB_OK;
        int rc = check_servers(io);
        if (rc) return rc;
        if (now() - waiting_since < SPIN_SECONDS) { /* a reply comes soon: even a 0 s sleep */
            if (++spins % 64 == 0) sched_yield();   /* costs 50-80 us a call on a VM */
            continue;
        }
        struct timespec pause = {0, (long)(delay * 1e9)};
        nanosleep(&pause, NULL);
        delay = delay * 2 < 1e-3 ? delay * 2 : 1e-3;
    }
}

static int raise_pending(nlb_t *io) {
    if (!io->pending_error) return NLB_OK;
    int code = fail(io, io->pending_code, "%s", io->pending_error);
    free(io->pending_error);
    io->pending_error = NULL;
    return code;
}

/* Block until `server` answers request `id`; the reply's body is returned (caller frees). */
static int await_reply(nlb_t *io, int server, long id, char **body) {
    for (;;) {
        int rc = raise_pending(io);
        if (rc) return rc;
        for (reply_t **r = &io->replies; *r; r = &(*r)->next) {
            if ((*r)->server == server && (*r)->id == id) {
                reply_t *found = *r;
                *r = found->next;
                if (body) *body = found->body;
                else free(found->body);
                free(found);
                return raise_pending(io);
            }
        }
        rc = receive(io, 1);
        if (rc) return rc;
    }
}

static int usable(nlb_t *io) {
    if (!io) return fail(NULL, NLB_ECLOSED, "nearline burst is not initialized; call nlb_init");
    if (io->closed) return fail(io, NLB_ECLOSED, "this burst handle is finalized");
    int rc = receive(io, 0);
    return rc ? rc : raise_pending(io);
}

/* -- set-up -------------------------------------------------------------------------------- */
static void pack_hello(unsigned char *out, const peer_t *p) {
    memset(out, 0, HELLO_SIZE);
    memcpy(out, "NLBH", 4);
    uint32_t version = 1;
    int32_t ints[4] = {p->role, p->pid, p->node, p->node_rank};
    memcpy(out + 4, &version, 4); /* little-endian hosts only, as the servers' numpy is */
    memcpy(out + 8, ints, 16);
    memcpy(out + 24, &p->memory, 8);
    memcpy(out + 32, p->host, HOST_SIZE - 1);
}

static int unpack_hello(const unsigned char *in, peer_t *p) {
    uint32_t version;
    int32_t ints[4];
    memcpy(&version, in + 4, 4);
    memcpy(ints, in + 8, 16);
    if (memcmp(in, "NLBH", 4) != 0 || version != 1 || (ints[0] != 0 && ints[0] != 1)) return -1;
    p->role = ints[0];
    p->pid = ints[1];
    p->node = ints[2];
    p->node_rank = ints[3];
    memcpy(&p->memory, in + 24, 8);
    memcpy(p->host, in + 32, HOST_SIZE);
    p->host[HOST_SIZE - 1] = 0;
    return 0;
}

static int roles(nlb_t *io) {
    int compute = 0;
    for (int r = 0; r < io->world_size; r++) compute += io->peers[r].role == 0;
    const char *launch = "mpiexec -n M ./model : -n N python -m nearline.burst.server --root OUT";
    if (compute == io->world_size)
        return fail(io, NLB_EMPI, "burst found no I/O rank among %d ranks; start the model and "
                    "the servers in one job: %s", io->world_size, launch);
    for (int r = 0; r < compute; r++)
        if (io->peers[r].role != 0)
            return fail(io, NLB_EMPI, "burst's I/O ranks must be the last ranks of the job: put "
                        "the servers last, %s", launch);
    io->compute_size = compute;
    io->servers = io->world_size - compute;
    return NLB_OK;
}

int nlb_init(MPI_Comm world, MPI_Comm *model_comm, nlb_t **out) {
    int initialized;
    MPI_Initialized(&initialized);
    if (!initialized) return fail(NULL, NLB_EMPI, "call MPI_Init before nlb_init");
    if (!model_comm || !out) return fail(NULL, NLB_EINPUT, "nlb_init needs model_comm and io");
    nlb_t *io = calloc(1, sizeof *io);
    io->world = world;
    MPI_Comm_size(world, &io->world_size);
    MPI_Comm_rank(world, &io->world_rank);
    /* the collective order of docs/burst-protocol.md, as the Python servers follow it */
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, io->world_rank, MPI_INFO_NULL, &io->node);
    int leader, node_rank;
    MPI_Allreduce(&io->world_rank, &leader, 1, MPI_INT, MPI_MIN, io->node);
    MPI_Comm_rank(io->node, &node_rank);
    peer_t me = {.role = 0, .pid = (int)getpid(), .node = leader, .node_rank = node_rank};
    gethostname(me.host, HOST_SIZE - 1);
    unsigned char hello[HELLO_SIZE];
    unsigned char *hellos = malloc((size_t)HELLO_SIZE * io->world_size);
    pack_hello(hello, &me);
    MPI_Allgather(hello, HELLO_SIZE, MPI_BYTE, hellos, HELLO_SIZE, MPI_BYTE, world);
    io->peers = calloc((size_t)io->world_size, sizeof *io->peers);
    int rc = NLB_OK;
    for (int r = 0; r < io->world_size && !rc; r++)
        if (unpack_hello(hellos + (size_t)r * HELLO_SIZE, &io->peers[r]))
            rc = fail(io, NLB_EMPI, "rank %d did not speak burst's start-up exchange; every "
                      "rank must call nlb_init / burst.run, and all from the same nearline "
                      "version", r);
    free(hellos);
    if (!rc) rc = roles(io);
    if (rc) { /* the servers fail the same way and end the job; leave MPI to the model */
        memcpy(last_error, io->error, ERROR_SIZE);
        return rc;
    }
    MPI_Comm_split(world, 0, io->world_rank, &io->compute);
    MPI_Comm_dup(world, &io->wire);
    char *base;
    MPI_Win_allocate_shared(0, 1, MPI_INFO_NULL, io->node, &base, &io->window);
    MPI_Comm_rank(io->compute, &io->rank);
    io->segments = calloc((size_t)io->servers, sizeof *io->segments);
    io->lease_next = calloc((size_t)io->servers, sizeof *io->lease_next);
    io->lease_end = calloc((size_t)io->servers, sizeof *io->lease_end);
    io->lease_asked = calloc((size_t)io->servers, sizeof *io->lease_asked);
    const char *transport = getenv("NEARLINE_BURST_TRANSPORT");
    int shared = !(transport && strcmp(transport, "message") == 0);
    for (int s = 0; s < io->servers; s++) {
        peer_t *server = &io->peers[io->compute_size + s];
        if (!shared || server->node != leader) continue;
        MPI_Aint size;
        int unit;
        MPI_Win_shared_query(io->window, server->node_rank, &size, &unit, &io->segments[s]);
        volatile char sum = 0; /* map every page now, not in the model's first burst */
        for (MPI_Aint at = 0; at < size; at += 4096) sum += io->segments[s][at];
        (void)sum;
    }
    int compute_here = 0;
    for (int r = 0; r < io->world_size; r++)
        compute_here += io->peers[r].role == 0 && io->peers[r].node == leader;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    io->copy_threads = cores > compute_here && compute_here ? (int)(cores / compute_here) : 1;
    io->last_check = now();
    *model_comm = io->compute;
    *out = io;
    return NLB_OK;
}

int nlb_init_f(MPI_Fint world, MPI_Fint *model_comm, nlb_t **out) {
    MPI_Comm comm;
    int rc = nlb_init(MPI_Comm_f2c(world), &comm, out);
    if (!rc) *model_comm = MPI_Comm_c2f(comm);
    return rc;
}

int nlb_refuse(nlb_t *io, const char *text) { return fail(io, NLB_EINPUT, "%s", text); }

/* -- writing ------------------------------------------------------------------------------- */
/* The Python client's checks (nearline/burst/_blocks.py), with its words. */
static int check_names(nlb_t *io, const char *file, const char *name) {
    int good = file[0] != 0 && file[0] != '-';
    for (const char *c = file; *c && good; c++)
        good = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
               *c == '_' || *c == '-';
    if (!good)
        return fail(io, NLB_EINPUT, "file group name '%s' is not usable in a path: use letters, "
                    "digits, '_' or '-' (for example 'dynamics')", file);
    good = name[0] != 0 && !(name[0] >= '0' && name[0] <= '9') && strcmp(name, "step") != 0;
    for (const char *c = name; *c && good; c++)
        good = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
               *c == '_';
    if (!good)
        return fail(io, NLB_EINPUT, "variable name '%s' is not usable: start with a letter or "
                    "'_', then letters, digits or '_' ('step' is taken by the step coordinate)",
                    name);
    return NLB_OK;
}

static uint32_t crc32_of(const char *text) {
    uint32_t crc = 0xFFFFFFFFu;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        crc ^= *c;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void put_attrs(nlb_t *io, text_t *json, const char *file, const char *name) {
    put(json, "{");
    int first = 1;
    for (attr_t *attr = io->attrs; attr; attr = attr->next) {
        if (strcmp(attr->file, file) || strcmp(attr->name, name)) continue;
        put(json, first ? "" : ",");
        put_string(json, attr->key);
        put(json, ":");
        put_string(json, attr->value);
        first = 0;
    }
    put(json, "}");
}

static void note_undurable(nlb_t *io, const char *file) {
    for (int i = 0; i < io->n_undurable; i++)
        if (strcmp(io->undurable[i], file) == 0) return;
    io->undurable = realloc(io->undurable, sizeof(char *) * (size_t)(io->n_undurable + 1));
    io->undurable[io->n_undurable++] = strdup(file);
}

static void forget_undurable(nlb_t *io) {
    for (int i = 0; i < io->n_undurable; i++) free(io->undurable[i]);
    free(io->undurable);
    io->undurable = NULL;
    io->n_undurable = 0;
}

/* -- copying a block into queue memory with the model's idle cores (Python: _copier.py) ----- */
#define PARALLEL_FROM (16u << 20)
#define MOST_COPY_THREADS 16

typedef struct {
    char *to;
    const char *from;
    size_t nbytes;
} part_t;

static void *copy_part(void *arg) {
    part_t *part = arg;
    memcpy(part->to, part->from, part->nbytes);
    return NULL;
}

/* One core copies at about half the memory bandwidth; during a burst the model's other cores
 * are idle, so a large block is split over `threads` threads (the caller copies one part). */
static void copy_block(char *to, const char *from, size_t nbytes, int threads) {
    if (threads > MOST_COPY_THREADS) threads = MOST_COPY_THREADS;
    if (threads < 2 || nbytes < PARALLEL_FROM) {
        memcpy(to, from, nbytes);
        return;
    }
    part_t parts[MOST_COPY_THREADS];
    pthread_t helpers[MOST_COPY_THREADS];
    int started[MOST_COPY_THREADS] = {0};
    size_t step = nbytes / (size_t)threads / 64 * 64;
    for (int i = 0; i < threads; i++) {
        size_t begin = step * (size_t)i, end = i == threads - 1 ? nbytes : begin + step;
        parts[i] = (part_t){to + begin, from + begin, end - begin};
        if (i > 0) started[i] = pthread_create(&helpers[i], NULL, copy_part, &parts[i]) == 0;
        if (i > 0 && !started[i]) copy_part(&parts[i]); /* no thread to be had: copy it here */
    }
    copy_part(&parts[0]);
    for (int i = 1; i < threads; i++)
        if (started[i]) pthread_join(helpers[i], NULL);
}

static int deliver(nlb_t *io, int server, long id, const char *grant, const void *data,
                   size_t nbytes) {
    char *mode = field_string(grant, "mode");
    int rc = NLB_OK;
    if (mode && strcmp(mode, "memory") == 0 && io->segments[server]) {
        copy_block(io->segments[server] + field_int(grant, "offset", 0), data, nbytes,
                   io->copy_threads);
        rc = send_simple(io, server, K_READY, id);
    } else if (mode && strcmp(mode, "spill") == 0) {
        char *path = field_string(grant, "path");
        FILE *spill = path ? fopen(path, "wb") : NULL;
        if (!spill || fwrite(data, 1, nbytes, spill) != nbytes || fclose(spill) != 0)
            rc = fail(io, NLB_EIO, "spilling a block to %s failed: %s", path ? path : "?",
                      strerror(errno));
        free(path);
        if (!rc) rc = send_simple(io, server, K_READY, id);
    } else if (mode && strcmp(mode, "message") == 0) {
        rc = send_data(io, server, data, nbytes);
    } else if (mode && strcmp(mode, "sync") == 0) {
        rc = send_data(io, server, data, nbytes);
        if (!rc) rc = await_reply(io, server, id, NULL);
    } else {
        rc = fail(io, NLB_EMPI, "I/O server %d granted an unknown mode %s", server,
                  mode ? mode : "(none)");
    }
    free(mode);
    return rc;
}

/* A block asked for: its server, request id, size, and the server's grant (caller frees). */
typedef struct {
    int server;
    long id;
    size_t nbytes;
    char *grant;   /* the server's answer (none for a block carved from a lease) */
    text_t json;   /* a leased block's WRITE, sent at commit */
    int leased;
    size_t offset; /* a leased block's place in the server's queue memory */
} ask_t;

/* -- leases: a slab of a server's queue memory that lent blocks are carved from, so that a
 * block costs no round trip (docs/burst-protocol.md) --------------------------------------- */
static size_t rounded(size_t n) { return n < 64 ? 64 : (n + 63) / 64 * 64; }

static int ask_lease(nlb_t *io, int server, size_t least) {
    long id = ++io->next_id;
    size_t capacity = (size_t)io->peers[io->compute_size + server].memory;
    text_t json = {0};
    put(&json, "{\"id\":%ld,\"client\":%d,\"nbytes\":%zu,\"least\":%zu}", id, io->rank,
        rounded(capacity) - 64, least);
    int rc = send_message(io, server, K_LEASE, &json);
    free(json.data);
    io->lease_asked[server] = rc ? 0 : id;
    return rc;
}

static int take_lease(nlb_t *io, int server) {
    long id = io->lease_asked[server];
    if (!id) return NLB_OK;
    io->lease_asked[server] = 0;
    char *body = NULL;
    int rc = await_reply(io, server, id, &body);
    char *mode = rc ? NULL : field_string(body, "mode");
    if (mode && strcmp(mode, "lease") == 0) {
        io->lease_next[server] = (size_t)field_int(body, "offset", 0);
        io->lease_end[server] = io->lease_next[server] + (size_t)field_int(body, "nbytes", 0);
    }
    free(mode);
    free(body);
    return rc;
}

static int return_lease(nlb_t *io, int server) {
    size_t left = io->lease_end[server] - io->lease_next[server];
    int rc = NLB_OK;
    if (left) {
        text_t json = {0};
        put(&json, "{\"id\":0,\"client\":%d,\"offset\":%zu,\"nbytes\":%zu}", io->rank,
            io->lease_next[server], left);
        rc = send_message(io, server, K_RETURN, &json);
        free(json.data);
    }
    io->lease_next[server] = io->lease_end[server] = 0;
    return rc;
}

/* Hold no lease of `server`: take the one asked for, if any, and give it back. */
static int settle_lease(nlb_t *io, int server) {
    int rc = take_lease(io, server);
    return rc ? rc : return_lease(io, server);
}

/* Carve a block of `nbytes` from this client's lease of `server`: *leased is 1 and *offset
 * its place, or 0 when the server has none to lend. Returns 0 or the error that stopped it
 * (an error a server had sent, raised while waiting for its lease, included). */
static int carve(nlb_t *io, int server, size_t nbytes, size_t *offset, int *leased) {
    size_t size = rounded(nbytes);
    *leased = 0;
    for (int attempt = 0; io->lease_end[server] - io->lease_next[server] < size; attempt++) {
        if (attempt == 2) return NLB_OK;
        int rc = return_lease(io, server);
        if (!rc && attempt == 1) rc = ask_lease(io, server, size);
        if (!rc) rc = take_lease(io, server); /* the one asked for ahead, then a fresh one */
        if (rc) return rc;
    }
    *offset = io->lease_next[server];
    io->lease_next[server] += size;
    *leased = 1;
    return NLB_OK;
}

static int ask(nlb_t *io, const char *file, const char *name, int step, nlb_dtype dtype, int ndim,
               const size_t *count, const size_t *start, const size_t *global, int lend,
               ask_t *out) {
    int rc = usable(io);
    if (rc) return rc;
    if (!file || !name)
        return fail(io, NLB_EINPUT, "a block needs a file and a variable name");
    if ((rc = check_names(io, file, name))) return rc;
    if ((unsigned)dtype > NLB_FLOAT64)
        return fail(io, NLB_EINPUT, "variable '%s': dtype %d is not an nlb_dtype", name, dtype);
    if (ndim < 0 || ndim > 32 || (ndim > 0 && !count))
        return fail(io, NLB_EINPUT, "variable '%s': ndim %d needs a count of %d sizes", name,
                    ndim, ndim);
    if ((start == NULL) != (global == NULL))
        return fail(io, NLB_EINPUT, "variable '%s': give both start and global for a block of "
                    "a global variable, or neither for a per-rank variable", name);
    if (step < 0) return fail(io, NLB_EINPUT, "variable '%s': step must be >= 0, got %d", name, step);
    out->nbytes = ITEMSIZE[dtype];
    for (int i = 0; i < ndim; i++) out->nbytes *= count[i];
    out->server = start ? (int)(crc32_of(file) % (uint32_t)io->servers) : io->rank % io->servers;
    if (lend && io->segments[out->server] &&
        (rc = carve(io, out->server, out->nbytes, &out->offset, &out->leased)))
        return rc;
    out->id = ++io->next_id;
    text_t json = {0};
    put(&json, "{\"id\":%ld,\"client\":%d,\"file\":", out->id, io->rank);
    put_string(&json, file);
    put(&json, ",\"name\":");
    put_string(&json, name);
    put(&json, ",\"step\":%d,\"dtype\":\"%s\",\"shape\":", step, DTYPES[dtype]);
    put_sizes(&json, ndim, count);
    put(&json, ",\"global_shape\":");
    put_sizes(&json, ndim, global ? global : count);
    put(&json, ",\"start\":");
    if (start) put_sizes(&json, ndim, start);
    else put(&json, "null");
    put(&json, ",\"dims\":[");
    for (int i = 0; i < ndim; i++) {
        put(&json, i ? "," : "");
        put(&json, "\"%s_dim%d\"", name, i); /* the name is checked by the server */
    }
    put(&json, "],\"attrs\":");
    put_attrs(io, &json, file, name);
    put(&json, ",\"epoch\":%ld,\"lent\":%s", io->epoch, lend ? "true" : "false");
    if (out->leased) { /* in place already: the WRITE goes at commit, and needs no answer */
        put(&json, ",\"lease_offset\":%zu}", out->offset);
        out->json = json;
        return NLB_OK;
    }
    put(&json, "}");
    rc = settle_lease(io, out->server); /* held while waiting, it may be the room waited for */
    if (!rc) rc = send_message(io, out->server, K_WRITE, &json);
    free(json.data);
    out->grant = NULL;
    if (!rc) rc = await_reply(io, out->server, out->id, &out->grant);
    return rc;
}

int nlb_write(nlb_t *io, const char *file, const char *name, int step, nlb_dtype dtype, int ndim,
              const size_t *count, const size_t *start, const size_t *global, const void *data) {
    ask_t block = {0};
    int rc = ask(io, file, name, step, dtype, ndim, count, start, global, 0, &block);
    if (!rc && block.nbytes && !data)
        rc = fail(io, NLB_EINPUT, "variable '%s': data is NULL", name);
    if (!rc) rc = deliver(io, block.server, block.id, block.grant, data, block.nbytes);
    if (!rc) note_undurable(io, file);
    free(block.grant);
    return rc;
}

/* -- zero-copy: a block lent by the server ------------------------------------------------ */
struct lent {
    void *ptr;
    ask_t block;
    int owned; /* malloc'd here: the server's memory is not shared with this rank */
    char *file;
    struct lent *next;
};

int nlb_buffer_f(nlb_t *io, const char *file, const char *name, int step, nlb_dtype dtype,
                 int ndim, const size_t *count, const size_t *start, const size_t *global,
                 void **out) {
    ask_t block = {0};
    *out = NULL;
    int rc = ask(io, file, name, step, dtype, ndim, count, start, global, 1, &block);
    if (rc) {
        free(block.grant);
        return rc;
    }
    struct lent *lent = calloc(1, sizeof *lent);
    lent->block = block;
    lent->file = strdup(file);
    char *mode = block.leased ? NULL : field_string(block.grant, "mode");
    if (block.leased) {
        lent->ptr = io->segments[block.server] + block.offset;
    } else if (mode && strcmp(mode, "memory") == 0 && io->segments[block.server]) {
        lent->ptr = io->segments[block.server] + field_int(block.grant, "offset", 0);
    } else { /* another node, or a full queue (spill, write-through): ordinary memory */
        lent->ptr = malloc(block.nbytes ? block.nbytes : 1);
        lent->owned = 1;
    }
    free(mode);
    lent->next = io->lent;
    io->lent = lent;
    *out = lent->ptr;
    return NLB_OK;
}

void *nlb_buffer(nlb_t *io, const char *file, const char *name, int step, nlb_dtype dtype,
                 int ndim, const size_t *count, const size_t *start, const size_t *global) {
    void *buffer;
    nlb_buffer_f(io, file, name, step, dtype, ndim, count, start, global, &buffer);
    return buffer;
}

int nlb_commit(nlb_t *io, void *ptr) {
    if (!io) return fail(NULL, NLB_ECLOSED, "nearline burst is not initialized; call nlb_init");
    struct lent **at = &io->lent;
    while (*at && (*at)->ptr != ptr) at = &(*at)->next;
    if (!*at)
        return fail(io, NLB_EINPUT, "nlb_commit: %p is not a buffer nlb_buffer lent and not "
                    "yet committed", ptr);
    struct lent *lent = *at;
    *at = lent->next;
    ask_t *block = &lent->block;
    int rc = block->leased  ? send_message(io, block->server, K_WRITE, &block->json)
             : lent->owned ? deliver(io, block->server, block->id, block->grant, ptr, block->nbytes)
                           : send_simple(io, block->server, K_READY, block->id);
    free(block->json.data);
    if (!rc) note_undurable(io, lent->file);
    if (lent->owned) free(ptr);
    free(block->grant);
    free(lent->file);
    free(lent);
    return rc;
}

int nlb_attr(nlb_t *io, const char *file, const char *name, const char *key, const char *value) {
    int rc = usable(io);
    if (rc) return rc;
    if (!file || !name || !key || !value)
        return fail(io, NLB_EINPUT, "nlb_attr needs a file, a variable, a key and a value");
    for (attr_t *attr = io->attrs; attr; attr = attr->next)
        if (!strcmp(attr->file, file) && !strcmp(attr->name, name) && !strcmp(attr->key, key)) {
            free(attr->value);
            attr->value = strdup(value);
            return NLB_OK;
        }
    attr_t *attr = calloc(1, sizeof *attr);
    attr->file = strdup(file);
    attr->name = strdup(name);
    attr->key = strdup(key);
    attr->value = strdup(value);
    attr->next = io->attrs;
    io->attrs = attr;
    return NLB_OK;
}

/* -- flush, wait, finalize ------------------------------------------------------------------- */
static int nothing_lent(nlb_t *io, const char *call) {
    int n = 0;
    for (struct lent *l = io->lent; l; l = l->next) n++;
    if (n == 0) return NLB_OK;
    return fail(io, NLB_EINPUT, "%s with %d buffer%s from nlb_buffer not committed (first: "
                "file '%s'); nlb_commit each block before flushing", call, n, n > 1 ? "s" : "",
                io->lent->file);
}

int nlb_flush(nlb_t *io, const char *file) {
    int rc = usable(io);
    if (!rc) rc = nothing_lent(io, "nlb_flush");
    if (rc) return rc;
    long seq = ++io->flush_seq;
    text_t json = {0};
    put(&json, "{\"id\":%ld,\"client\":%d,\"file\":", seq, io->rank);
    if (file) put_string(&json, file);
    else put(&json, "null");
    put(&json, ",\"scope\":\"all\",\"epoch\":%ld}", io->epoch);
    for (int s = 0; s < io->servers && !rc; s++) rc = send_message(io, s, K_FLUSH, &json);
    free(json.data);
    io->epoch++;
    return rc;
}

static int tell_everyone(nlb_t *io, int kind, long *id) {
    *id = ++io->next_id;
    int rc = NLB_OK;
    for (int s = 0; s < io->servers && !rc; s++) rc = send_simple(io, s, kind, *id);
    return rc;
}

static int await_everyone(nlb_t *io, long id) {
    int rc = NLB_OK;
    for (int s = 0; s < io->servers && !rc; s++) rc = await_reply(io, s, id, NULL);
    return rc;
}

int nlb_wait(nlb_t *io, const char *file) {
    (void)file; /* waits for every flush so far, as the Python client does */
    int rc = usable(io);
    int *leased = calloc((size_t)(io ? io->servers : 1), sizeof *leased);
    for (int s = 0; !rc && s < io->servers; s++) { /* the rest of a lease is free again */
        leased[s] = io->lease_asked[s] || io->lease_end[s];
        if (leased[s]) rc = settle_lease(io, s);
    }
    long id = 0;
    if (!rc) rc = tell_everyone(io, K_WAIT, &id);
    for (int s = 0; !rc && !io->finalizing && s < io->servers; s++)
        if (leased[s]) rc = ask_lease(io, s, 0); /* the next burst's: answered with the wait */
    if (!rc) rc = await_everyone(io, id);
    if (!rc) forget_undurable(io);
    free(leased);
    return rc;
}

int nlb_finalize(nlb_t *io) {
    int rc = usable(io);
    if (rc) return rc;
    io->finalizing = 1;
    rc = nlb_flush(io, NULL);
    if (!rc) rc = nlb_wait(io, NULL);
    io->closed = 1;
    for (int s = 0; s < io->servers; s++) send_simple(io, s, K_CLOSE, 0);
    if (rc) return rc; /* the handle stays, so that nlb_error(io) can still say why */
    MPI_Barrier(io->wire);
    MPI_Win_free(&io->window);
    MPI_Comm_free(&io->node);
    MPI_Comm_free(&io->wire);
    /* io->compute is the model's communicator: the model frees it if it wants to */
    for (reply_t *r = io->replies, *next; r; r = next) { next = r->next; free(r->body); free(r); }
    for (attr_t *a = io->attrs, *next; a; a = next) {
        next = a->next;
        free(a->file); free(a->name); free(a->key); free(a->value); free(a);
    }
    free(io->peers);
    free(io->segments);
    free(io->lease_next);
    free(io->lease_end);
    free(io->lease_asked);
    forget_undurable(io);
    free(io);
    return NLB_OK;
}
