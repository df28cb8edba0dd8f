/* util.c: assertions, checked allocation, rank-aware logging, clocks and memory probes.
 * See util.h for the conventions. Not here: MPI (the fatal hook is how MPI_Abort gets in). */
#define _POSIX_C_SOURCE 200809L
#include "wildcpu/util.h"

#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int log_rank = 0;
static int log_nranks = 1;
static int log_quiet = 0;
static wc_fatal_hook fatal_hook = NULL;

void wc_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "wildcpu: internal error: assertion `%s' failed at %s:%d\n", expr, file, line);
    fflush(stderr);
    abort();
}

void *wc_alloc_check(size_t nbytes, const char *file, int line) {
    void *p = malloc(nbytes ? nbytes : 1);
    if (!p) {
        char buf[32];
        wc_fatal("out of memory allocating %s at %s:%d", wc_fmt_bytes(buf, sizeof buf, nbytes),
                 file, line);
    }
    return p;
}

void *wc_calloc_check(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        char buf[32];
        wc_fatal("out of memory allocating %s at %s:%d",
                 wc_fmt_bytes(buf, sizeof buf, (double)count * (double)size), file, line);
    }
    return p;
}

char *wc_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = WC_ALLOC(n);
    memcpy(d, s, n);
    return d;
}

void wc_log_set_rank(int rank, int nranks) {
    log_rank = rank;
    log_nranks = nranks;
}

int wc_log_set_quiet(int quiet) {
    const int was = log_quiet;
    log_quiet = quiet;
    return was;
}

static void vlog(FILE *f, const char *kind, const char *fmt, va_list ap) {
    /* One fprintf of a preformatted line, so that lines from several ranks sharing a stderr do
     * not interleave mid-line. */
    char small[2048], *msg = small;
    va_list again;
    va_copy(again, ap);
    const int n = vsnprintf(small, sizeof small, fmt, ap);
    /* a message naming long paths (up to PATH_MAX each) is printed whole */
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)) != NULL)
        vsnprintf(msg, (size_t)n + 1, fmt, again);
    else if (!msg)
        msg = small;
    va_end(again);
    /* what a message quotes (a file name, a band's description, a checkpoint's text) never
     * drives the terminal: its control bytes and ill-formed UTF-8 print as '?' */
    wc_text_sanitize(msg);
    if (!kind) /* progress on stdout: the line as given */
        fprintf(f, "%s\n", msg);
    else if (log_nranks > 1)
        fprintf(f, "wildcpu[rank %d]: %s%s\n", log_rank, kind, msg);
    else
        fprintf(f, "wildcpu: %s%s\n", kind, msg);
    fflush(f);
    if (msg != small) free(msg);
}

void wc_info(const char *fmt, ...) {
    if (log_rank != 0 || log_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(stdout, NULL, fmt, ap);
    va_end(ap);
}

void wc_warn(const char *fmt, ...) {
    if (log_quiet >= 2) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(stderr, "warning: ", fmt, ap);
    va_end(ap);
}

int wc_check_threads(int threads, const char *from) {
    cpu_set_t set;
    if (threads <= 1 || sched_getaffinity(0, sizeof set, &set) != 0) return WC_OK;
    const int cpus = CPU_COUNT(&set);
    /* who asked for them: a user who never gave --threads must learn where the count came from,
     * and that --threads overrides it */
    char asked[96], overrides[64] = "";
    if (from) {
        snprintf(asked, sizeof asked, "%s=%d (the default of --threads)", from, threads);
        snprintf(overrides, sizeof overrides, ", which overrides %s", from);
    } else {
        snprintf(asked, sizeof asked, "--threads %d", threads);
    }
    if (threads > WC_THREADS_PER_CPU_MAX * cpus) {
        /* every rank that has too few says so: ranks may be bound to different CPUs */
        wc_error("%s is more than %d times the %d CPU%s this process may run on (its "
                 "affinity: a Slurm allocation's, mpirun's binding, a taskset's): the threads "
                 "would take turns for every step and a stop would wait for them; use --threads "
                 "%d%s, or give the process more CPUs (srun --cpus-per-task, mpirun --bind-to "
                 "none)",
                 asked, WC_THREADS_PER_CPU_MAX, cpus, cpus == 1 ? "" : "s", cpus, overrides);
        return WC_ERR;
    }
    /* once per process: training checks, then its end-of-run map checks again */
    static int warned;
    if (threads > cpus && log_rank == 0 && !warned++)
        wc_warn("%s, but this process may run on %d CPU%s: the threads take turns on them and "
                "every step is slower than with --threads %d%s (and the report counts %d cores)",
                asked, cpus, cpus == 1 ? "" : "s", cpus, overrides, threads);
    return WC_OK;
}

void wc_error(const char *fmt, ...) {
    if (log_quiet >= 2) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(stderr, "error: ", fmt, ap);
    va_end(ap);
}

void wc_fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(stderr, "error: ", fmt, ap);
    va_end(ap);
    wc_die(WC_EXIT_RUNTIME);
}

void wc_set_fatal_hook(wc_fatal_hook hook) { fatal_hook = hook; }

void wc_die(int status) {
    fflush(stdout);
    fflush(stderr);
    if (fatal_hook) fatal_hook(status);
    exit(status);
}

double wc_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void wc_utc_timestamp(char *buf, size_t size) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

size_t wc_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (size_t)ru.ru_maxrss * 1024; /* Linux reports kilobytes */
}

size_t wc_current_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long pages_total = 0, pages_resident = 0;
    int n = fscanf(f, "%lu %lu", &pages_total, &pages_resident);
    fclose(f);
    if (n != 2) return 0;
    return (size_t)pages_resident * (size_t)sysconf(_SC_PAGESIZE);
}

int wc_mkdir_p(const char *path) {
    char *p = wc_strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) break; /* the final mkdir reports it */
        *s = '/';
    }
    int rc = mkdir(p, 0777) == 0 || errno == EEXIST ? WC_OK : WC_ERR;
    struct stat st;
    if (rc == WC_OK && stat(p, &st) != 0) {
        /* stat's errno: a loop of symbolic links (ELOOP); a link to nothing says ENOENT, which
         * a directory listing contradicts: it is said as ENOTDIR, "not a directory" */
        if (errno == ENOENT && lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) errno = ENOTDIR;
        rc = WC_ERR;
    } else if (rc == WC_OK && !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        rc = WC_ERR;
    }
    free(p);
    return rc;
}

int wc_reason(char *why, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return WC_ERR;
}

size_t wc_physical_memory_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)1 << 34;
}

size_t wc_address_space_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
    return (size_t)rl.rlim_cur;
}

/* OpenBLAS keeps the work buffers it mapped: threads that called it once cost nothing more */
static int blas_threads_counted;

int wc_check_address_space(int threads, size_t extra, const char *when) {
    const int more = threads > blas_threads_counted ? threads - blas_threads_counted : 0;
    /* nothing new for OpenBLAS (a map after training): what else comes is ordinary allocation,
     * which fails with a message of its own */
    if (more == 0) return WC_OK;
    const size_t need = (size_t)more * WC_OPENBLAS_BUFFER_BYTES + extra + ((size_t)64 << 20);
    if (!wc_address_space_has_room(need)) {
        char a[32], b[32];
        wc_error("the address-space limit of %s (ulimit -v, or the batch system's virtual-memory "
                 "limit) leaves less than the %s this rank maps %s: OpenBLAS's work buffer of "
                 "128 MiB for each of %d thread%s, GDAL's block cache and thread stacks; raise "
                 "the limit by that much, or run fewer --threads",
                 wc_fmt_bytes(a, sizeof a, (double)wc_address_space_limit()),
                 wc_fmt_bytes(b, sizeof b, (double)need), when, more, more == 1 ? "" : "s");
        return WC_ERR;
    }
    if (threads > blas_threads_counted) blas_threads_counted = threads;
    return WC_OK;
}

int wc_address_space_has_room(size_t bytes) {
    if (!wc_address_space_limit()) return 1;
    /* a reservation, never touched: it counts against the limit as any mapping does */
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 0;
    munmap(p, bytes);
    return 1;
}

void wc_strv_free(char **v) {
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

uint64_t wc_fnv1a64(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

const char *wc_fmt_bytes(char *buf, size_t size, double bytes) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%.0f %s", bytes, units[u]);
    else
        snprintf(buf, size, "%.1f %s", bytes, units[u]);
    return buf;
}

/* The value of key in rec: a pointer into rec and its length; NULL when absent. */
static const char *kv_find(const char *rec, const char *key, size_t *len) {
    size_t klen = strlen(key);
    for (const char *p = rec; p && *p;) {
        const char *end = strchr(p, ';');
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
            const char *v = p + klen + 1;
            *len = end ? (size_t)(end - v) : strlen(v);
            return v;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

void wc_kv_get(const char *rec, const char *key, char *buf, size_t size) {
    size_t n = 0;
    const char *v = kv_find(rec, key, &n);
    if (!v) n = 0;
    if (n >= size) n = size - 1;
    if (n) memcpy(buf, v, n);
    buf[n] = '\0';
}

/* Calls fn(key) for every key of rec. */
static void kv_keys(const char *rec, void (*fn)(const char *key, void *ctx), void *ctx) {
    for (const char *p = rec; p && *p;) {
        const char *eq = strchr(p, '='), *end = strchr(p, ';');
        if (eq && (!end || eq < end)) {
            char key[128];
            size_t n = WC_MIN((size_t)(eq - p), sizeof key - 1);
            memcpy(key, p, n);
            key[n] = '\0';
            fn(key, ctx);
        }
        p = end ? end + 1 : NULL;
    }
}

typedef struct {
    const char *now, *then;
    char *why;
    size_t size;
    int differs;
} kv_cmp;

/* Values are compared whole, however long; the message shows at most 300 characters of each. */
static void kv_compare_key(const char *key, void *ctx) {
    kv_cmp *c = ctx;
    size_t na = 0, nb = 0;
    const char *a = kv_find(c->now, key, &na), *b = kv_find(c->then, key, &nb);
    if (a && b && na == nb && memcmp(a, b, na) == 0) return;
    char tag[160];
    snprintf(tag, sizeof tag, "%s: ", key);
    if (strstr(c->why, tag)) return; /* each key once, even when it appears in both records */
    size_t n = strlen(c->why);
    snprintf(c->why + n, c->size - n, "%s%s: now %.*s%s, checkpoint %.*s%s", c->differs ? "; " : "",
             key, a ? (int)WC_MIN(na, 300) : 6, a ? a : "(none)", a && na > 300 ? "..." : "",
             b ? (int)WC_MIN(nb, 300) : 6, b ? b : "(none)", b && nb > 300 ? "..." : "");
    c->differs = 1;
}

int wc_kv_differs(const char *now, const char *then, char *why, size_t size) {
    kv_cmp c = {now, then, why, size, 0};
    why[0] = '\0';
    kv_keys(now, kv_compare_key, &c);
    kv_keys(then, kv_compare_key, &c);
    return c.differs;
}

size_t wc_utf8_len(const unsigned char *s, size_t avail, size_t *bad) {
    const unsigned c = s[0];
    *bad = 1;
    if (c < 0x80) return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c == 0xE0)
        n = 3, lo = 0xA0; /* not overlong */
    else if (c >= 0xE1 && c <= 0xEC)
        n = 3;
    else if (c == 0xED)
        n = 3, hi = 0x9F; /* not a surrogate */
    else if (c >= 0xEE && c <= 0xEF)
        n = 3;
    else if (c == 0xF0)
        n = 4, lo = 0x90; /* not overlong */
    else if (c >= 0xF1 && c <= 0xF3)
        n = 4;
    else if (c == 0xF4)
        n = 4, hi = 0x8F; /* not above U+10FFFF */
    else
        return 0; /* a continuation byte, C0, C1, F5..FF: *bad is 1 */
    for (size_t i = 1; i < n; i++) {
        if (i >= avail || s[i] < lo || s[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80, hi = 0xBF;
    }
    return n;
}

size_t wc_text_sanitize(char *s) {
    size_t replaced = 0;
    for (unsigned char *p = (unsigned char *)s; *p;) {
        size_t bad;
        const size_t n = wc_utf8_len(p, SIZE_MAX, &bad);
        /* C0 and DEL; C1 is U+0080..U+009F, 0xC2 0x80..0x9F in UTF-8 */
        const int control = *p < 0x20 || *p == 0x7f || (n == 2 && p[0] == 0xC2 && p[1] < 0xA0);
        if (n && !control) {
            p += n;
            continue;
        }
        /* each byte: the text keeps its length */
        const size_t k = n ? n : 1;
        memset(p, '?', k);
        replaced += k;
        p += k;
    }
    return replaced;
}
