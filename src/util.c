/* util.c: assertions, checked allocation, rank-aware logging, clocks and memory probes.
 * See util.h for the conventions. Not here: MPI (the fatal hook is how MPI_Abort gets in). */
#define _POSIX_C_SOURCE 200809L
#include "wildcpu/util.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static char alloc_advice[512]; /* the command's, for a failure: wc_alloc_set_advice */

void wc_alloc_set_advice(const char *advice) {
    snprintf(alloc_advice, sizeof alloc_advice, "%s", advice ? advice : "");
}

/* What advice about the address-space limit counts for a process that maps `bytes`: what a
 * process maps varies by a few MiB from run to run (the libraries' own), so a thirty-second more.
 * Advice that fitted exactly was refused when followed (a --micro-batch of 20 under the limit
 * that had refused 32). */
static size_t advised(size_t bytes) {
    return bytes + bytes / 32;
}

/* "raise the limit to at least 1.2 GiB (ulimit -v 1258291)": room for `more` bytes beside what
 * this process maps now. */
static void raise_limit_to(size_t more, char *buf, size_t size) {
    const size_t mib = (size_t)1 << 20;
    const size_t to = (advised(wc_address_space_used() + more) + mib - 1) / mib * mib;
    char b[32];
    snprintf(buf, size, "raise the limit to at least %s (ulimit -v %zu)",
             wc_fmt_bytes(b, sizeof b, (double)to), to >> 10);
}

const char *wc_out_of_memory_cause(double bytes, char *buf, size_t size) {
    const size_t limit = wc_address_space_limit();
    char cause[400];
    if (limit && (bytes <= 0 || !wc_address_space_has_room((size_t)bytes))) {
        char l[32], u[32], raise[128] = "raise the limit";
        if (bytes > 0) raise_limit_to((size_t)bytes, raise, sizeof raise);
        snprintf(cause, sizeof cause,
                 "the address-space limit of %s (ulimit -v, or the batch system's virtual-memory "
                 "limit) has no room for it beside the %s this rank maps already; %s",
                 wc_fmt_bytes(l, sizeof l, (double)limit),
                 wc_fmt_bytes(u, sizeof u, (double)wc_address_space_used()), raise);
    } else {
        char p[32], r[32];
        snprintf(cause, sizeof cause,
                 "more than this machine gives this rank (%s of physical memory, of which this "
                 "rank holds %s): run fewer ranks per machine",
                 wc_fmt_bytes(p, sizeof p, (double)wc_physical_memory_bytes()),
                 wc_fmt_bytes(r, sizeof r, (double)wc_current_rss_bytes()));
    }
    snprintf(buf, size, "%s%s%s", cause, *alloc_advice ? ", or " : "", alloc_advice);
    return buf;
}

/* Ends the process after an allocation of `bytes` failed: what was being allocated (`what`,
 * NULL when unnamed) and where, what ran out, and what to do. Allocates nothing. */
WC_NORETURN static void out_of_memory(double bytes, const char *what, const char *file, int line) {
    char b[32], cause[1024];
    wc_fmt_bytes(b, sizeof b, bytes);
    wc_out_of_memory_cause(bytes, cause, sizeof cause);
    if (what)
        wc_fatal("out of memory allocating %s for %s (%s:%d): %s", b, what, file, line, cause);
    wc_fatal("out of memory allocating %s at %s:%d: %s", b, file, line, cause);
}

void *wc_alloc_named(size_t nbytes, const char *what, const char *file, int line) {
    void *p = malloc(nbytes ? nbytes : 1);
    if (!p) out_of_memory((double)nbytes, what, file, line);
    return p;
}

void *wc_calloc_named(size_t count, size_t size, const char *what, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory((double)count * (double)size, what, file, line);
    return p;
}

void *wc_alloc_check(size_t nbytes, const char *file, int line) {
    return wc_alloc_named(nbytes, NULL, file, line);
}

void *wc_calloc_check(size_t count, size_t size, const char *file, int line) {
    return wc_calloc_named(count, size, NULL, file, line);
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
        wc_warn("%s, but this process may run on %d CPU%s: the threads take turns on them, "
                "which is slower than --threads %d%s (a training's report counts %d cores)",
                asked, cpus, cpus == 1 ? "" : "s", cpus, overrides, threads);
    return WC_OK;
}

static char last_error[WC_LAST_ERROR_MAX];
static pthread_mutex_t last_error_lock = PTHREAD_MUTEX_INITIALIZER;

/* Keeps the error's text (the reader and writer threads log errors too). One that points
 * "above" keeps the error before it in front: the report has no "above". */
static void keep_error(const char *fmt, va_list ap) {
    char text[WC_LAST_ERROR_MAX];
    const int n = vsnprintf(text, sizeof text, fmt, ap);
    if (n >= (int)sizeof text) memcpy(text + sizeof text - 4, "...", 4);
    pthread_mutex_lock(&last_error_lock);
    if (strstr(text, "see above") && last_error[0]) {
        char joined[2 * WC_LAST_ERROR_MAX + 8];
        size_t before = strlen(last_error); /* GDAL's messages end in a full stop */
        while (before > 0 && (last_error[before - 1] == '.' || last_error[before - 1] == ' '))
            before--;
        snprintf(joined, sizeof joined, "%.*s; then: %s", (int)before, last_error, text);
        const size_t len = strlen(joined);
        memcpy(last_error, joined, WC_MIN(len + 1, sizeof last_error));
        if (len >= sizeof last_error) memcpy(last_error + sizeof last_error - 4, "...", 4);
    } else {
        memcpy(last_error, text, sizeof text);
    }
    pthread_mutex_unlock(&last_error_lock);
}

const char *wc_last_error(char *buf, size_t size) {
    pthread_mutex_lock(&last_error_lock);
    snprintf(buf, size, "%s", last_error);
    pthread_mutex_unlock(&last_error_lock);
    for (char *c = buf; *c; c++) /* one line */
        if (*c == '\n' || *c == '\r') *c = ' ';
    return buf;
}

void wc_adopt_error(const char *text) {
    pthread_mutex_lock(&last_error_lock);
    if (snprintf(last_error, sizeof last_error, "%s", text) >= (int)sizeof last_error)
        memcpy(last_error + sizeof last_error - 4, "...", 4); /* cut, as keep_error says */
    pthread_mutex_unlock(&last_error_lock);
}

void wc_forget_error(void) {
    pthread_mutex_lock(&last_error_lock);
    last_error[0] = '\0';
    pthread_mutex_unlock(&last_error_lock);
}

void wc_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    keep_error(fmt, ap);
    va_end(ap);
    if (log_quiet >= 2) return;
    va_start(ap, fmt);
    vlog(stderr, "error: ", fmt, ap);
    va_end(ap);
}

void wc_fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    keep_error(fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    vlog(stderr, "error: ", fmt, ap);
    va_end(ap);
    wc_die(WC_EXIT_RUNTIME);
}

void wc_set_fatal_hook(wc_fatal_hook hook) {
    fatal_hook = hook;
}

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

double wc_progress_seconds(void) {
    static double seconds = 0;
    if (seconds > 0) return seconds;
    seconds = WC_PROGRESS_SECONDS;
    const char *s = getenv("WILDCPU_PROGRESS_SECONDS");
    if (!s) return seconds;
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (end != s && *end == '\0' && errno == 0 && v >= 0.1 && v <= 86400)
        seconds = v;
    else if (log_rank == 0) /* once: the first call sets seconds */
        wc_warn("WILDCPU_PROGRESS_SECONDS='%s' is not a number of seconds from 0.1 to 86400: "
                "ignored, progress lines every %g s",
                s, seconds);
    return seconds;
}

void wc_progress_start(wc_progress *p) {
    p->t0 = p->said = wc_now();
}

int wc_progress_due(wc_progress *p) {
    const double now = wc_now();
    if (now - p->said < wc_progress_seconds()) return 0;
    p->said = now;
    return 1;
}

double wc_progress_elapsed(const wc_progress *p) {
    return wc_now() - p->t0;
}

double wc_progress_left(const wc_progress *p, double done) {
    return done > 0 ? wc_progress_elapsed(p) * (1 - done) / done : 0;
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

/* The first two fields of /proc/self/statm (pages mapped, pages resident), read without
 * allocating: an allocation failure's message reads them. 0 when unknown. */
static int read_statm(unsigned long *mapped, unsigned long *resident) {
    char buf[128];
    const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    return sscanf(buf, "%lu %lu", mapped, resident) == 2;
}

size_t wc_current_rss_bytes(void) {
    unsigned long mapped, resident;
    if (!read_statm(&mapped, &resident)) return 0;
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

size_t wc_address_space_used(void) {
    unsigned long mapped, resident;
    if (!read_statm(&mapped, &resident)) return 0;
    return (size_t)mapped * (size_t)sysconf(_SC_PAGESIZE);
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

void wc_address_space_settle(void) {
    const char *tunables = getenv("GLIBC_TUNABLES");
    if (!wc_address_space_limit() || getenv("MALLOC_ARENA_MAX") ||
        (tunables && strstr(tunables, "arena_max")))
        return;
    /* the threads share the main heap's lock: a step allocates nothing, and the reader's and
     * the checkpoint writer's allocations are few */
    mallopt(M_ARENA_MAX, 1);
}

/* OpenBLAS keeps the work buffers it mapped: threads that called it once cost nothing more */
static int blas_threads_counted;

/* What glibc maps for a thread's stack (the default attributes: the stack limit, ulimit -s),
 * with its guard page. */
static size_t thread_stack_bytes(void) {
    pthread_attr_t attr;
    size_t stack = (size_t)8 << 20, guard = 4096;
    if (pthread_getattr_default_np(&attr) == 0) {
        pthread_attr_getstacksize(&attr, &stack);
        pthread_attr_getguardsize(&attr, &guard);
        pthread_attr_destroy(&attr);
    }
    return stack + guard;
}

const char *wc_thread_start_error(int err, char *buf, size_t size) {
    const size_t stack = thread_stack_bytes();
    /* EAGAIN: no room for its stack (or the process limit on threads) */
    if (err == EAGAIN && wc_address_space_limit() && !wc_address_space_has_room(stack)) {
        char b[32], cause[1024];
        snprintf(buf, size, "no room for its stack of %s: %s",
                 wc_fmt_bytes(b, sizeof b, (double)stack),
                 wc_out_of_memory_cause((double)stack, cause, sizeof cause));
    } else {
        snprintf(buf, size, "%s", strerror(err));
    }
    return buf;
}

void wc_address_need_add(wc_address_need *need, size_t bytes, const char *fmt, ...) {
    WC_ASSERT(need->nparts < WC_MAP_PARTS_MAX);
    wc_map_part *p = &need->parts[need->nparts++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof p->what, fmt, ap);
    va_end(ap);
    p->bytes = bytes;
}

/* need with what every need adds: OpenBLAS's buffers, the stacks, the slack. */
static void complete_need(const wc_address_need *need, wc_address_need *all) {
    *all = *need;
    /* threads that already called OpenBLAS (a map after a training in this process) have their
     * buffers */
    const int more =
        need->threads > blas_threads_counted ? need->threads - blas_threads_counted : 0;
    if (more > 0)
        wc_address_need_add(all, (size_t)more * WC_OPENBLAS_BUFFER_BYTES,
                            "OpenBLAS's work buffer%s for %d thread%s",
                            more > 1 ? "s (128 MiB each)" : "", more, more == 1 ? "" : "s");
    if (need->started > 0)
        wc_address_need_add(all, (size_t)need->started * thread_stack_bytes(),
                            "the stacks of the %d thread%s it starts", need->started,
                            need->started == 1 ? "" : "s");
    wc_address_need_add(all, WC_ADDRESS_SLACK, "what the libraries map as they go");
}

size_t wc_address_need_bytes(const wc_address_need *need) {
    wc_address_need all;
    complete_need(need, &all);
    size_t total = 0;
    for (int i = 0; i < all.nparts; i++) total += all.parts[i].bytes;
    return total;
}

int wc_address_space_fits_advice(size_t bytes) {
    const size_t limit = wc_address_space_limit(), used = wc_address_space_used();
    if (!limit) return 1;
    return used <= limit && bytes <= limit - used && advised(used + bytes) <= limit;
}

size_t wc_address_space_left(void) {
    const size_t limit = wc_address_space_limit(), used = wc_address_space_used();
    if (!limit) return SIZE_MAX;
    return limit > used ? limit - used : 0;
}

int wc_check_address_space(const wc_address_need *need) {
    if (!wc_address_space_limit()) return WC_OK;
    wc_address_need all;
    complete_need(need, &all);
    const size_t total = wc_address_need_bytes(need);
    if (wc_address_space_has_room(total)) {
        if (need->first_product && need->threads > blas_threads_counted)
            blas_threads_counted = need->threads;
        return WC_OK;
    }
    const int more = need->threads - blas_threads_counted;
    char parts[WC_MAP_PARTS_MAX * 200] = "", b[32], l[32], u[32], raise[128], fewer[160] = "";
    for (int i = 0; i < all.nparts; i++) {
        const size_t len = strlen(parts);
        snprintf(parts + len, sizeof parts - len, "%s%s %s", i ? ", " : "", all.parts[i].what,
                 wc_fmt_bytes(b, sizeof b, (double)all.parts[i].bytes));
    }
    raise_limit_to(total, raise, sizeof raise);
    /* fewer threads only where there are several: each maps OpenBLAS's buffer (and a stack) */
    if (need->threads > 1 && more > 0)
        snprintf(fewer, sizeof fewer, ", or run fewer --threads than %d (128 MiB less for each)",
                 need->threads);
    wc_error("the address-space limit of %s (ulimit -v, or the batch system's virtual-memory "
             "limit) has no room for the %s this rank maps %s, beside the %s it maps already "
             "(the libraries, MPI, GDAL, the data's plan): %s; %s%s%s%s",
             wc_fmt_bytes(l, sizeof l, (double)wc_address_space_limit()),
             wc_fmt_bytes(b, sizeof b, (double)total), need->when,
             wc_fmt_bytes(u, sizeof u, (double)wc_address_space_used()), parts, raise, fewer,
             need->advice ? ", or " : "", need->advice ? need->advice : "");
    return WC_ERR;
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

const char *wc_fmt_percent(char *buf, size_t size, double part, double whole) {
    const double pc = whole > 0 ? 100 * part / whole : 0;
    snprintf(buf, size, "%.1f", pc);
    if (!(part > 0 && part < whole)) return buf;
    for (int digits = 2; digits <= 15 && !(strtod(buf, NULL) > 0 && strtod(buf, NULL) < 100);
         digits++)
        snprintf(buf, size, "%.*f", digits, pc);
    if (strtod(buf, NULL) == 0) snprintf(buf, size, "%.2g", pc); /* 1 in 1e18: "1e-16" */
    return buf;
}

const char *wc_fmt_exact(char *buf, size_t size, double v) {
    /* 17 significant digits always read back to the same double; fewer are shorter and often
     * enough (0.1 rather than 0.10000000000000001). -0 keeps its sign in %g. */
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, size, "%.*g", p, v);
        if (p == 17 || strtod(buf, NULL) == v) break;
    }
    return buf;
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

char *wc_kv_escape(const char *path) {
    char *out = WC_ALLOC(3 * strlen(path) + 1), *o = out;
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        if (strchr(";=,%", *c) || *c < 0x20 || *c == 0x7f)
            o += sprintf(o, "%%%02X", *c);
        else
            *o++ = (char)*c;
    *o = '\0';
    return out;
}

void wc_kv_get_path(const char *rec, const char *key, char *buf, size_t size) {
    char *v = WC_ALLOC(strlen(rec) + 1);
    wc_kv_get(rec, key, v, strlen(rec) + 1);
    size_t n = 0;
    for (const char *c = v; *c && n + 1 < size; c++) {
        unsigned x;
        if (*c == '%' && sscanf(c + 1, "%2x", &x) == 1 && x > 0)
            buf[n++] = (char)x, c += 2;
        else
            buf[n++] = *c;
    }
    buf[n] = '\0';
    free(v);
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
