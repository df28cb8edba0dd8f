/* inspect.c: `wildcpu info`; see inspect.h. */
#include "wildcpu/inspect.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/json.h"
#include "wildcpu/rundir.h"
#include "wildcpu/snapshot.h"
#include "wildcpu/util.h"

/* A key=value record, one pair a line for readability (its text is sanitized, snapshot.c). */
static void print_record(const char *label, const char *rec) {
    if (!rec || !*rec) return;
    printf("  %-12s", label);
    for (const char *c = rec; *c; c++)
        if (*c == ';')
            printf("\n  %-12s", "");
        else
            putchar(*c);
    printf("\n");
}

/* The last validation's metrics, one "key value" per line. The section is a JSON object; files
 * of earlier versions hold its members without the braces. */
static void print_metrics(const char *m) {
    if (!m || !*m) return;
    const size_t size = strlen(m) + 3;
    char *text = WC_ALLOC(size);
    const int braced = m[0] == '{';
    snprintf(text, size, "%s%s%s", braced ? "" : "{", m, braced ? "" : "}");
    wc_json_doc doc;
    char why[160];
    if (wc_json_parse(text, &doc, why, sizeof why) != WC_OK) {
        printf("  %-12s(not readable: %s)\n", "metrics", why);
        free(text);
        return;
    }
    for (int i = 0; i < doc.n; i++) {
        const wc_json_member *e = &doc.members[i];
        /* a JSON escape ("\u001b") decodes to the control character the text had not */
        wc_text_sanitize(e->key);
        if (e->kind == WC_JSON_STRING) wc_text_sanitize(e->string);
        printf("  %-12s%s = ", i ? "" : "metrics", e->key);
        if (e->kind == WC_JSON_NUMBER)
            printf("%.10g\n", e->number);
        else if (e->kind == WC_JSON_STRING)
            printf("%s\n", e->string);
        else
            printf("%s\n", e->kind == WC_JSON_NULL ? "null" : "...");
    }
    wc_json_doc_free(&doc);
    free(text);
}

/* Reads path and checks its sections as a resume would, into snap when it is not NULL (the
 * caller frees it); WC_ERR with why. */
static int read_checked(const char *path, wc_ckpt *ck, wc_snapshot *snap, char *why,
                        size_t why_size) {
    if (wc_ckpt_read(path, ck, why, why_size) != WC_OK) return WC_ERR;
    wc_snapshot own = {0};
    int rc = wc_snapshot_check(ck, snap ? snap : &own, why, why_size);
    wc_snapshot_free(&own);
    if (rc != WC_OK) wc_ckpt_free(ck);
    return rc;
}

/* Reads path and checks it as a rerun of the command that wrote it would before resuming from
 * it (wc_snapshot_resumable, the resume's own rule): 1 when it would, 0 when the file is valid
 * but a rerun passes it over (why says why), -1 when it is not valid (why says why). */
static int read_resumable(const char *path, char *why, size_t why_size) {
    wc_ckpt ck;
    wc_snapshot snap = {0};
    if (read_checked(path, &ck, &snap, why, why_size) != WC_OK) {
        wc_snapshot_free(&snap);
        return -1;
    }
    wc_ckpt_free(&ck);
    wc_resume_match own;
    wc_snapshot_own_match(&snap, &own);
    const int usable = wc_snapshot_resumable(&snap, &own, why, why_size) == WC_OK;
    wc_snapshot_free(&snap);
    return usable;
}

/* Whether best.wcp (best) is not the best of the run of the newest checkpoint (newest), both
 * valid: the reason in why ("" when it is the run's). */
static void best_foreign(const char *best, const char *newest, char *why, size_t size) {
    wc_ckpt a, b;
    wc_snapshot sa = {0}, sb = {0};
    char w[512];
    *why = '\0';
    if (read_checked(best, &a, &sa, w, sizeof w) == WC_OK) {
        if (read_checked(newest, &b, &sb, w, sizeof w) == WC_OK) {
            wc_snapshot_best_foreign(&sa, &sb, why, size);
            wc_ckpt_free(&b);
        }
        wc_ckpt_free(&a);
    }
    wc_snapshot_free(&sa), wc_snapshot_free(&sb);
}

/* The texts are the decoded snapshot's, never the sections' bytes: they are sanitized there. */
static int describe_file(const char *path) {
    wc_ckpt ck;
    wc_snapshot snap = {0};
    char why[512];
    if (read_checked(path, &ck, &snap, why, sizeof why) != WC_OK) {
        wc_snapshot_free(&snap);
        printf("%s: INVALID: %s\n", path, why);
        return WC_EXIT_RUNTIME;
    }
    char a[32], b[32];
    printf("%s: valid wildcpu checkpoint (format version %u, CRC-32 and every section "
           "verified)\n",
           path, ck.version);
    printf("  %-12s%s on disk, %s uncompressed\n", "size",
           wc_fmt_bytes(a, sizeof a, (double)ck.file_bytes),
           wc_fmt_bytes(b, sizeof b, (double)ck.payload_bytes));
    printf("  %-12s%ld\n", "step", ck.step);
    print_record("meta", snap.meta);
    print_record("data", snap.fingerprint);
    print_record("config", snap.config);
    printf("  %-12s", "features");
    for (int c = 0; c < snap.nfeat; c++) printf("%s%s", c ? "," : "", snap.feat_names[c]);
    printf("\n");
    print_metrics(snap.metrics);
    /* a digest of the trained state: equal digests mean bitwise-equal parameters and moments */
    static const char *state[] = {WC_SECTION_PARAMS, WC_SECTION_OPTIM_M, WC_SECTION_OPTIM_V};
    for (int i = 0; i < 3; i++) {
        const wc_ckpt_section *sec = wc_ckpt_find(&ck, state[i]);
        if (!sec || !sec->size) continue;
        uint64_t h = wc_fnv1a64(sec->data, sec->size);
        printf("  %-12s%016llx (FNV-1a 64 of %zu bytes)\n", i == 0 ? "digest" : state[i],
               (unsigned long long)h, sec->size);
    }
    printf("  %-12s", "sections");
    for (int i = 0; i < ck.nsections; i++)
        printf("%s%s (%s)", i ? ", " : "", ck.sections[i].name,
               wc_fmt_bytes(a, sizeof a, (double)ck.sections[i].size));
    printf("\n");
    wc_ckpt_free(&ck);
    wc_snapshot_free(&snap);
    return WC_EXIT_OK;
}

/* The stop marker wildcpu writes is one short line (rundir.c); anything longer is not it */
#define MARKER_MAX     4096
#define MARKER_EXCERPT 120 /* bytes of a file that is not the marker, shown to identify it */

/* At most max bytes of text's first line into out (of size max + 4), cut at a character's
 * boundary, sanitized as a checkpoint's text is (wc_text_sanitize: control characters and
 * bytes that are not UTF-8 shown as '?'): a file of someone else's must not drive the
 * terminal. */
static void sanitized_line(char *out, const char *text, size_t max) {
    size_t n = strcspn(text, "\n");
    const int cut = n > max;
    if (cut) {
        n = max;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--;
    }
    memcpy(out, text, n);
    out[n] = '\0';
    wc_text_sanitize(out);
    strcpy(out + n, cut ? "..." : "");
}

/* "state: stopped ..." when DIR/STOPPED is wildcpu's marker. A path of that name that is no
 * regular file (a pipe would be waited on, /dev/zero read without end), is large, or does not
 * read as the marker's record is said not to be it, with a short sanitized excerpt, and
 * otherwise ignored. */
static void describe_stop_marker(const char *marker) {
    char why[256], line[MARKER_EXCERPT + 4];
    char *text = wc_read_file_limited(marker, MARKER_MAX, why, sizeof why);
    if (!text && errno == ENOENT) return;
    if (text && strncmp(text, "stopped_utc=", 12) == 0) {
        sanitized_line(line, text, MARKER_EXCERPT);
        /* a run that had set its predecessor aside (--fresh) resumes without --fresh */
        const int fresh = strstr(text, "resume=rerun the same command without --fresh") != NULL;
        printf("state: stopped by a signal (%s): rerun the same command%s to resume\n", line,
               fresh ? " without --fresh" : "");
    } else if (text) {
        sanitized_line(line, text, 40);
        printf("note: %s is not wildcpu's stop marker (it starts \"%s\"): ignored\n", marker, line);
    } else {
        printf("note: %s is not wildcpu's stop marker (%s): ignored\n", marker, why);
    }
    free(text);
}

/* What info says of one listed checkpoint: whether it reads and checks out, else why not, and
 * its size on disk. */
typedef struct {
    int ok;
    int resumable; /* valid, and a rerun would resume from it (else why says why not) */
    double bytes;
    char why[512];
} listed_ckpt;

/* The checkpoints of dir into *e (wc_ckpt_list), each read and checked into *seen (freed by the
 * caller with free). A training run writing into dir prunes its old checkpoints once a newer
 * one is durable: a listed file gone when it is read is no damaged checkpoint, so the listing is
 * taken again (info said "INVALID: cannot open: No such file or directory" of it, and of a run
 * checkpointing with --keep 1 "no valid checkpoint: ... use --fresh to start over"). Returns the
 * count, or -1 when dir cannot be read. */
static int read_listing(const char *dir, wc_ckpt_entry **e, listed_ckpt **seen) {
    for (int listing = 1;; listing++) {
        const int n = wc_ckpt_list(dir, listing == 1, e);
        if (n < 0) return n;
        *seen = WC_CALLOC((size_t)WC_MAX(n, 1), sizeof **seen);
        int again = 0;
        for (int i = 0; i < n && !again; i++) {
            const wc_ckpt_entry *en = &(*e)[i];
            listed_ckpt *s = &(*seen)[i];
            if (!en->header_ok)
                snprintf(s->why, sizeof s->why, "%s", en->why);
            else {
                const int r = read_resumable(en->path, s->why, sizeof s->why);
                s->ok = r >= 0, s->resumable = r > 0;
            }
            struct stat fs;
            s->bytes = lstat(en->path, &fs) == 0 ? (double)fs.st_size : 0;
            again = !s->ok && listing < WC_CKPT_LISTINGS && wc_ckpt_vanished(en->path);
        }
        if (!again) return n;
        free(*seen);
        wc_ckpt_list_free(*e, n);
    }
}

static int describe_dir(const char *path) {
    char dir[4096];
    if (wc_ckpt_dir_of(path, dir, sizeof dir) != WC_OK) return WC_EXIT_RUNTIME;
    wc_ckpt_entry *e;
    listed_ckpt *seen = NULL;
    int n = read_listing(dir, &e, &seen);
    if (n < 0) {
        fprintf(stderr, "wildcpu: cannot read %s: %s\n", dir, strerror(errno));
        return WC_EXIT_RUNTIME;
    }
    char best[4200];
    snprintf(best, sizeof best, "%s/%s", dir, WC_CKPT_BEST);
    struct stat bs;
    const int has_best = stat(best, &bs) == 0;
    printf("%s: %d checkpoint%s, newest first%s\n", dir, n, n == 1 ? "" : "s",
           has_best ? ", then the best validation's (" WC_CKPT_BEST ")" : "");
    int newest_valid = -1, newest_resumable = -1;
    for (int i = 0; i < n; i++) {
        char sz[32];
        printf("  %-40s step %8ld  %10s  %s%s\n", strrchr(e[i].path, '/') + 1, e[i].step,
               wc_fmt_bytes(sz, sizeof sz, seen[i].bytes),
               !seen[i].ok         ? "INVALID: "
               : seen[i].resumable ? "valid"
                                   : "valid, but a rerun passes it over: ",
               seen[i].resumable ? "" : seen[i].why);
        if (seen[i].ok && newest_valid < 0) newest_valid = i;
        if (seen[i].resumable && newest_resumable < 0) newest_resumable = i;
    }
    /* the best validation's checkpoint, which predict and evaluate use for the directory when
     * it is valid, else the newest valid one (wc_ckpt_resolve's choice) */
    int best_ok = 0, best_resumable = 0;
    if (has_best) {
        wc_ckpt ck;
        char why[512], sz[32];
        best_ok = read_checked(best, &ck, NULL, why, sizeof why) == WC_OK;
        /* its step is in its header, which an unreadable file does not give: "?", not a number */
        char step[24] = "?";
        if (best_ok) snprintf(step, sizeof step, "%ld", ck.step);
        if (best_ok) wc_ckpt_free(&ck);
        best_resumable = best_ok && read_resumable(best, why, sizeof why) > 0;
        printf("  %-40s step %8s  %10s  %s%s\n", WC_CKPT_BEST, step,
               wc_fmt_bytes(sz, sizeof sz, (double)bs.st_size),
               !best_ok         ? "INVALID: "
               : best_resumable ? "valid"
                                : "valid, but a rerun passes it over: ",
               best_resumable ? "" : why);
    }
    /* a best.wcp that is not the newest checkpoint's run's best is refused (model.c) */
    char foreign[2600] = "", rerun_foreign[2600] = "";
    if (best_ok && newest_valid >= 0)
        best_foreign(best, e[newest_valid].path, foreign, sizeof foreign);
    /* the resume's check_best holds it against the checkpoint it resumes from, which may be an
     * older one (the newer passed over) */
    if (best_ok && newest_resumable >= 0)
        best_foreign(best, e[newest_resumable].path, rerun_foreign, sizeof rerun_foreign);
    if (*foreign)
        printf("predict and evaluate given this directory refuse %s: %s\n", best, foreign);
    else
        printf("predict and evaluate given this directory use %s\n",
               best_ok             ? best
               : newest_valid >= 0 ? e[newest_valid].path
                                   : "nothing: there is no valid checkpoint");
    /* how the last run of a run directory ended, for scripts whose launcher hides it */
    char marker[4200];
    snprintf(marker, sizeof marker, "%s/%s", path, WC_RUNDIR_STOPPED);
    describe_stop_marker(marker);
    /* a training holding the directory's lock refuses a rerun until it ends */
    char run_file[4200], holder[256];
    snprintf(run_file, sizeof run_file, "%s/" WC_RUNDIR_REPORT_JSON, path);
    const int running = wc_rundir_taken_by_live_run(run_file, holder, sizeof holder);
    if (running)
        printf("state: a training is running in it (%s): a rerun is refused until it ends\n",
               *holder ? holder : "its pid unknown");
    /* while it runs, it writes newer checkpoints: what a rerun would take is its newest then */
    const char *when = running ? " once it has ended resumes from its newest checkpoint then; now"
                               : " resumes from";
    /* the checkpoint wc_snapshot_find_resume takes: the newest a rerun does not pass over */
    if (newest_resumable >= 0 && *rerun_foreign) /* the resume's check_best refuses it the same */
        printf("a rerun stops with an error until %s is moved out; it then%s %s\n", best, when,
               e[newest_resumable].path);
    else if (newest_resumable >= 0)
        printf("a rerun%s %s\n", when, e[newest_resumable].path);
    else if (best_resumable) /* wc_snapshot_find_resume's last resort */
        /* valid ones passed over are listed as valid just above: "no valid" would contradict
         * the listing */
        printf("a rerun%s %s (%s ckpt-*.wcp)\n", when, best,
               newest_valid >= 0 ? "no usable" : "no valid");
    else if ((n > 0 || has_best) && wc_ckpt_unreadable(dir) > 0) {
        char note[400];
        printf("no valid checkpoint for this user: a rerun stops with an error%s\n",
               wc_ckpt_unreadable_note(dir, note, sizeof note));
    } else if (newest_valid >= 0 || best_ok)
        printf("no checkpoint a rerun can resume from: a rerun stops with an error (use --fresh "
               "to start over)\n");
    else if (n > 0 || has_best)
        printf("no valid checkpoint: a rerun stops with an error (use --fresh to start over)\n");
    wc_ckpt_list_free(e, n);
    free(seen);
    return WC_EXIT_OK;
}

int wc_inspect_run(const char *path) {
    if (wc_dist_rank() != 0) return WC_EXIT_OK;
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "wildcpu: info %s: %s\n", path, strerror(errno));
        return WC_EXIT_RUNTIME;
    }
    return S_ISDIR(st.st_mode) ? describe_dir(path) : describe_file(path);
}
