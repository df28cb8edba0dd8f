/* util.h: what every module needs and nothing more: always-on assertions, checked allocation,
 * rank-aware logging, a fatal-error hook, and clocks and memory probes.
 *
 * Conventions used across wildcpu:
 *   - functions that can fail at run time return WC_OK (0) or WC_ERR (-1) after logging a
 *     message that names the file, band, rank or step involved;
 *   - the commands are the exception: wc_<command>_run (train, predict, export, inspect; run.h's
 *     wc_run_train_and_map) returns the process's exit status (WC_EXIT_*), because a command
 *     decides between "runtime error", "usage error" and "stopped"; main returns what they
 *     return and nothing else turns a result into an exit status;
 *   - verbs, one pair per kind of object: create/destroy for an object the module allocates
 *     and returns (wc_net_create), open/close for one bound to files it reads or writes
 *     (wc_raster_open, wc_dataset_open, wc_trainlog_open), init/free for a struct the caller
 *     owns and the module fills (wc_schedule_init, wc_json_init; also a struct filled from a
 *     file: wc_ckpt_read, wc_model_load, wc_snapshot_decode, each with its _free); every
 *     destroy, close and free accepts NULL or an all-zero struct;
 *   - programmer errors (broken invariants) are WC_ASSERT failures: file:line, then abort;
 *   - out-of-memory is fatal: WC_ALLOC reports file:line and the size, then calls the fatal hook
 *     (which is MPI_Abort once the distributed layer is up, so no rank hangs in a collective).
 *
 * Not here: MPI, GDAL, or anything about the network. */
#ifndef WILDCPU_UTIL_H
#define WILDCPU_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define WC_OK  0
#define WC_ERR (-1)

/* Exit statuses of the program (docs/cli.md, "Exit status"). */
enum {
    WC_EXIT_OK = 0,
    WC_EXIT_RUNTIME = 1,
    WC_EXIT_USAGE = 2,
    WC_EXIT_STOPPED = 75, /* stopped by a signal after writing a checkpoint: rerun to resume */
};

#define WC_VERSION "0.1.0"

#if defined(__GNUC__)
#define WC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define WC_NORETURN     __attribute__((noreturn))
#else
#define WC_PRINTF(a, b)
#define WC_NORETURN
#endif

#define WC_ASSERT(cond)        ((cond) ? (void)0 : wc_assert_fail(#cond, __FILE__, __LINE__))
#define WC_ALLOC(nbytes)       wc_alloc_check((nbytes), __FILE__, __LINE__)
#define WC_CALLOC(count, size) wc_calloc_check((count), (size), __FILE__, __LINE__)
/* The same for a large buffer, naming what it is for ("the network's activations"): a failure
 * says what was being allocated, not only where. */
#define WC_ALLOC_FOR(nbytes, what) wc_alloc_named((nbytes), (what), __FILE__, __LINE__)
#define WC_CALLOC_FOR(count, size, what)                                                           \
    wc_calloc_named((count), (size), (what), __FILE__, __LINE__)
/* Each argument is evaluated twice: never pass a call with an effect (a write, a collective). */
#define WC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define WC_MAX(a, b) ((a) > (b) ? (a) : (b))

WC_NORETURN void wc_assert_fail(const char *expr, const char *file, int line);
/* malloc/calloc that never return NULL: a failure is fatal and names the call site (and what
 * the buffer is for, when named), what ran out (the address-space limit, with what this rank
 * maps and how far to raise it, or the machine's memory) and the command's advice. A request
 * of 0 bytes returns a valid 1-byte block so callers need no special case. */
void *wc_alloc_check(size_t nbytes, const char *file, int line);
void *wc_calloc_check(size_t count, size_t size, const char *file, int line);
void *wc_alloc_named(size_t nbytes, const char *what, const char *file, int line);
void *wc_calloc_named(size_t count, size_t size, const char *what, const char *file, int line);
/* Why an allocation of `bytes` failed (0: of a size unknown, as in a library), and what to do,
 * as those failures say it, into buf; returns buf. Allocates nothing. */
const char *wc_out_of_memory_cause(double bytes, char *buf, size_t size);
/* Why pthread_create failed with err, into buf: a stack the address-space limit has no room
 * for is said as an allocation failure is; returns buf. */
const char *wc_thread_start_error(int err, char *buf, size_t size);
/* What the command advises when memory runs out, after the cause an allocation failure names
 * ("or a smaller --micro-batch than 32"); process-wide, NULL: nothing more. The text is copied. */
void wc_alloc_set_advice(const char *advice);
/* strdup that never returns NULL. */
char *wc_strdup(const char *s);

/* Formats the reason a check failed into why (size bytes) and returns WC_ERR, so a check reads
 * `return wc_reason(why, size, "section %s is missing", name);`. */
int wc_reason(char *why, size_t size, const char *fmt, ...) WC_PRINTF(3, 4);

/* Frees a NULL-terminated array of strings and the strings (NULL is fine). */
void wc_strv_free(char **v);

/* Logging. The rank prefix is set once by the distributed layer; before that (and in single
 * process runs) messages carry no rank. wc_info prints on rank 0 only, to stdout; warnings and
 * errors print on any rank, to stderr, prefixed with the rank when there is more than one. */
void wc_log_set_rank(int rank, int nranks);
/* quiet 1: wc_info prints nothing (tests); 2: warnings and errors neither (fuzzers, which feed
 * millions of bad inputs). wc_fatal always prints. */
int wc_log_set_quiet(int quiet); /* returns the level it replaces */
void wc_info(const char *fmt, ...) WC_PRINTF(1, 2);
void wc_warn(const char *fmt, ...) WC_PRINTF(1, 2);
/* --threads against the CPUs this process may run on (its affinity: a Slurm allocation's, a
 * taskset's): rank 0 warns when it exceeds them; more than WC_THREADS_PER_CPU_MAX times them is
 * an error (WC_ERR after a message), since every step and every stop would wait for threads
 * taking turns. from: the environment variable the count came from (SLURM_CPUS_PER_TASK), which
 * the messages then name instead of --threads; NULL when --threads gave it. */
#define WC_THREADS_PER_CPU_MAX 4
int wc_check_threads(int threads, const char *from);
void wc_error(const char *fmt, ...) WC_PRINTF(1, 2);
/* The last error this process logged (wc_error, wc_fatal) into buf, on one line, "..." when cut
 * at WC_LAST_ERROR_MAX; "" when none: the cause a failed run's report names (a batch job's
 * stderr is often gone). The last, not the first: a run fails with its last error, and forgets
 * those it recovers from (wc_forget_error). One that says "see above" carries the one before it.
 * Returns buf. */
#define WC_LAST_ERROR_MAX 512
const char *wc_last_error(char *buf, size_t size);
void wc_forget_error(void);
/* Makes text the last error without logging it: another rank's, which that rank logged. */
void wc_adopt_error(const char *text);
/* Logs the message as an error, then ends the whole job through the fatal hook. */
WC_NORETURN void wc_fatal(const char *fmt, ...) WC_PRINTF(1, 2);

/* The fatal hook ends the job with exit status `status`. Default: exit(status). The distributed
 * layer installs one that calls MPI_Abort so that every rank ends, not only this one. */
typedef void (*wc_fatal_hook)(int status);
void wc_set_fatal_hook(wc_fatal_hook hook);
WC_NORETURN void wc_die(int status);

/* Seconds on a monotonic clock (for durations). */
double wc_now(void);
/* The progress lines of a long phase (the map's rounds, planning the data, validation, the
 * map's picture, the split raster...), all at one cadence: a line every WC_PROGRESS_SECONDS, and
 * one at the end where the phase says how it went. WILDCPU_PROGRESS_SECONDS (0.1 to 86400)
 * sets another cadence (a job's log may want a line a minute); wc_progress_seconds() is the one
 * in force. */
#define WC_PROGRESS_SECONDS 5.0
double wc_progress_seconds(void);
typedef struct wc_progress {
    double t0, said; /* the phase's start, the last line */
} wc_progress;
void wc_progress_start(wc_progress *p);
/* Whether a line is due now (WC_PROGRESS_SECONDS since the last, or the start); when it is, the
 * clock for the next one starts. */
int wc_progress_due(wc_progress *p);
/* Seconds since the start, and the seconds left at the fraction `done` (0 < done <= 1) at the
 * pace so far. */
double wc_progress_elapsed(const wc_progress *p);
double wc_progress_left(const wc_progress *p, double done);
/* ISO 8601 UTC timestamp of now, e.g. "2026-11-30T03:14:15Z", into buf (>= 21 bytes). */
void wc_utc_timestamp(char *buf, size_t size);

/* Peak and current resident set size of this process, in bytes (0 if unknown). */
size_t wc_peak_rss_bytes(void);
size_t wc_current_rss_bytes(void);

/* The machine's physical memory in bytes (the bound beyond which a size read from a file is
 * refused rather than allocated). */
size_t wc_physical_memory_bytes(void);
/* The process's address-space limit (RLIMIT_AS: ulimit -v, a batch system's vmem limit) in
 * bytes, 0 when there is none. */
size_t wc_address_space_limit(void);
/* What this process maps now (its virtual size), in bytes; 0 if unknown. */
size_t wc_address_space_used(void);
/* Whether `bytes` more of address space can still be mapped under that limit (a reservation
 * made and released at once); always 1 without a limit. */
int wc_address_space_has_room(size_t bytes);
/* Under an address-space limit, before any thread starts: one malloc arena for every thread
 * (glibc reserves 64 MiB of address space for each thread's own arena, used or not: 9 of them,
 * 576 MiB, in a training of 4 threads, which no plan can count as they come). A MALLOC_ARENA_MAX
 * (or glibc.malloc.arena_max tunable) set in the environment stands. */
void wc_address_space_settle(void);
/* What OpenBLAS maps for each thread that calls it, once (its BUFFER_SIZE on x86-64: 128 MiB),
 * and loops for ever on when the mapping fails (memory.c) instead of failing. */
#define WC_OPENBLAS_BUFFER_BYTES ((size_t)128 << 20)
/* One part of what a rank is about to map, named for the messages ("the network's activations
 * and workspace (--micro-batch 32 of 64x64)"). */
typedef struct wc_map_part {
    char what[160];
    size_t bytes;
} wc_map_part;
#define WC_MAP_PARTS_MAX 12
/* What the libraries map beyond any plan as a rank goes on (GDAL's drivers, the first
 * allocations of new threads): room left free by every need, and kept mapped after the work
 * that needed it (a training's share stays while its map is drawn). */
#define WC_ADDRESS_SLACK ((size_t)32 << 20)
/* What a rank maps once it computes, known in advance: its parts, OpenBLAS's work buffer for
 * each of `threads` threads that call it (those not counted before in this process: none after
 * a training in this process), and a stack for each of the `started` threads it starts. */
typedef struct wc_address_need {
    wc_map_part parts[WC_MAP_PARTS_MAX];
    int nparts;
    int threads;        /* --threads: they call OpenBLAS */
    int started;        /* threads started besides the caller (pools, reader, writer) */
    const char *when;   /* "once training starts" */
    const char *advice; /* the command's, for what it maps ("a smaller --micro-batch"); or NULL */
    int first_product;  /* the check comes right before the threads' first product: OpenBLAS's
                         * buffers are mapped after it, and are not counted again */
} wc_address_need;
/* Adds a part (as printf) to need. */
void wc_address_need_add(wc_address_need *need, size_t bytes, const char *fmt, ...) WC_PRINTF(3, 4);
/* Everything `need` maps: its parts, OpenBLAS's buffers, the stacks and room for what the
 * libraries map as they go. */
size_t wc_address_need_bytes(const wc_address_need *need);
/* What the address-space limit leaves to this process beside what it maps now (SIZE_MAX
 * without a limit). */
size_t wc_address_space_left(void);
/* Whether `bytes` more fit under the address-space limit with the margin the limit's advice
 * keeps (true without a limit): what a --micro-batch advised in a message must fit. */
int wc_address_space_fits_advice(size_t bytes);
/* Whether the address-space limit leaves room for `need`, checked before any of it is mapped:
 * an allocation failure would end the run later, and OpenBLAS, out of room, would spin for ever
 * in its first product (deaf to a stop; the other ranks waiting in a collective). Without room,
 * WC_ERR after a message naming the limit, what this rank maps already, what it would map, part
 * by part, and what to do: a limit large enough (how large), fewer --threads when more than one
 * would map OpenBLAS's buffer, and the command's advice. */
int wc_check_address_space(const wc_address_need *need);

/* Formats part/whole as a percentage into buf (>= 24 bytes), "12.3": one decimal, or as many
 * more as keep a share that is neither none nor all from reading as 0.0 or 100.0 (12 valid
 * pixels of 65536 are 99.98% nodata, not 100.0%); returns buf. */
const char *wc_fmt_percent(char *buf, size_t size, double part, double whole);

/* Formats v into buf (>= 32 bytes) in the shortest of %.15g, %.16g and %.17g that reads back
 * to the same double (4928775 as "4928775", 0.1 as "0.1"), so two numbers that differ are never
 * written alike; returns buf. */
const char *wc_fmt_exact(char *buf, size_t size, double v);

/* Formats a byte count as "12.3 MiB" into buf (>= 16 bytes); returns buf. */
const char *wc_fmt_bytes(char *buf, size_t size, double bytes);

/* FNV-1a, 64 bits: the digest that names exact parameters (wildcpu info, map metadata). */
uint64_t wc_fnv1a64(const void *data, size_t n);

/* mkdir -p: creates path and its missing parents; WC_OK if it exists as a directory after. */
int wc_mkdir_p(const char *path);

/* The length (1..4) of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), reading at most avail bytes; 0 if it is not one, with
 * *bad = the length of its maximal ill-formed prefix (at least 1), which Unicode's "substitution
 * of maximal subparts" replaces with one U+FFFD (what Python's decode(errors="replace") does).
 * A NUL is never a continuation byte, so a NUL-terminated string is not read past its end. */
size_t wc_utf8_len(const unsigned char *s, size_t avail, size_t *bad);

/* Text from a file wildcpu did not write itself (a checkpoint's records, DIR/STOPPED) made fit
 * to print on a terminal and to write into a map's metadata, in place and at the same length:
 * every byte of a control character (C0, DEL, and C1 in its UTF-8 form, U+0080 to U+009F) or of
 * a sequence that is not well-formed UTF-8 becomes '?'; printable UTF-8 (accented letters, CJK)
 * is kept. Such bytes would drive the terminal (ESC sequences retitle it, clear it, recolour
 * what follows; CR overwrites the line) or end up in GDAL metadata. Returns the bytes
 * replaced. */
size_t wc_text_sanitize(char *s);

/* "key=value;key=value" records (data fingerprints, training configurations): compares a and
 * b key by key; on a difference writes "key: now A, checkpoint B; ..." into why and returns
 * nonzero. Keys missing on one side count as different. */
int wc_kv_differs(const char *now, const char *then, char *why, size_t size);
/* The value of key in such a record into buf ("" when absent). */
void wc_kv_get(const char *rec, const char *key, char *buf, size_t size);
/* A path as such a record's value: the separators (';' '=' ','), '%' and control characters as
 * %XX, so that a file named "a;b=1.tif" is all of its name, not a value cut at ';' and a key
 * "b" of its own (caller frees). wc_kv_get_path undoes it. */
char *wc_kv_escape(const char *path);
/* The value of key in a record with wc_kv_escape's %XX undone, into buf ("" when absent). */
void wc_kv_get_path(const char *rec, const char *key, char *buf, size_t size);

#endif
