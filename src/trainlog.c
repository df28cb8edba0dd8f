/* trainlog.c: progress lines and metrics.jsonl; see trainlog.h. */
#include "wildcpu/trainlog.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/json.h"
#include "wildcpu/rundir.h"
#include "wildcpu/util.h"

struct wc_trainlog {
    int active;    /* rank 0 */
    char *path;    /* out_dir/metrics.jsonl */
    int fd;        /* appending; -1 when none */
    off_t end;     /* the end of its last whole line */
    int failed;    /* a write failed (reported once) */
    int tty;       /* a live bar between progress lines */
    int bar_shown; /* the bar occupies the current line */
    long total_steps, steps_per_epoch, log_every;
    double t_open, t_start, t_last;
    long steps_since_start, samples_since_line;
    long steps_since_line; /* of them, the steps with a loss (a valid pixel) */
    double loss_since_line, last_loss;
    wc_json line; /* the line being built (its buffer is reused) */
};

/* One line of the log (a finished JSON object), flushed. */
static void write_line(wc_trainlog *l, const wc_json *j) {
    if (l->fd < 0) return;
    const char *text = wc_json_text(j);
    struct iovec v[2] = {{(void *)text, strlen(text)}, {"\n", 1}};
    const ssize_t len = (ssize_t)(v[0].iov_len + 1);
    const ssize_t n = writev(l->fd, v, 2); /* one append */
    if (n == len) {
        l->end += len;
        return;
    }
    const char *why = n < 0 ? strerror(errno) : "a short write (the disk full, or a size limit)";
    /* Cut back what the failed write left of its line (a full disk takes part of one), so the
     * file stays one JSON object per line and the next line starts on a line of its own. When
     * even that fails, the log ends here: a line appended after the fragment would be torn. */
    if (n > 0 && ftruncate(l->fd, l->end) != 0) {
        wc_warn("writing %s failed: %s, and cutting back the part written failed too (%s): the "
                "log ends with part of a line, and training goes on without it",
                l->path, why, strerror(errno));
        close(l->fd);
        l->fd = -1;
    } else if (!l->failed) {
        wc_warn("writing %s failed: %s; training goes on, the log misses lines", l->path, why);
    }
    l->failed = 1;
}

/* A line starts as {"type":TYPE,"step":STEP, ...; the caller adds members and writes it. */
static wc_json *begin_line(wc_trainlog *l, const char *type, long step) {
    wc_json_reset(&l->line);
    wc_json_object(&l->line);
    wc_json_kstr(&l->line, "type", type);
    wc_json_kint(&l->line, "step", step);
    return &l->line;
}

static void end_line(wc_trainlog *l) {
    wc_json_end(&l->line);
    write_line(l, &l->line);
}

/* metrics.jsonl at --log-every 1 grows by some 200 bytes a step; a larger file is not a log this
 * program wrote, and copying it line by line would hold the run up for minutes */
#define LOG_MAX ((size_t)1 << 30)

/* Whether the line of n bytes is a logged step at or before keep_through_step; *bad is set when
 * it is no logged step at all (a torn last line, or the NUL bytes a crash can leave at the end
 * of a file being appended to). */
static int keep_line(const char *line, size_t n, long keep_through_step, int *bad) {
    double step = NAN;
    wc_json_doc doc;
    char why[160];
    if (!memchr(line, '\0', n) && wc_json_parse_n(line, n, &doc, why, sizeof why) == WC_OK) {
        step = wc_json_get_num(&doc, "step");
        wc_json_doc_free(&doc);
    }
    *bad = !isfinite(step);
    return !*bad && step <= keep_through_step;
}

/* The log of a resumed run: drop what the interrupted run logged after the checkpoint. A line
 * that is not a JSON object with a step (a torn last line of a killed run) is dropped too. A log
 * that is no regular file (a pipe would be waited on for ever, /dev/zero read without end) or is
 * larger than LOG_MAX is an error: the run stops rather than replace the user's file. Returns
 * WC_OK (also when there is no log) or WC_ERR after a message. */
static int trim(const char *path, long keep_through_step) {
    char why[256];
    const int fd = wc_open_regular(path, LOG_MAX, why, sizeof why);
    if (fd < 0 && errno == ENOENT) return WC_OK;
    if (fd < 0) {
        wc_error("cannot resume the metrics log %s: %s; move it away (or start over with --fresh)",
                 path, why);
        return WC_ERR;
    }
    FILE *in = fdopen(fd, "rb");
    wc_atomic_file out;
    if (!in) {
        wc_error("cannot read %s: %s", path, strerror(errno));
        close(fd);
        return WC_ERR;
    }
    if (wc_atomic_open(&out, path, "w") != WC_OK) {
        fclose(in);
        return WC_ERR;
    }
    long dropped_bad = 0;
    char *line = NULL;
    size_t cap = 0;
    for (ssize_t n; (n = getline(&line, &cap, in)) > 0;) {
        int bad;
        if (keep_line(line, (size_t)n, keep_through_step, &bad)) fwrite(line, 1, (size_t)n, out.f);
        dropped_bad += bad;
    }
    const int read_failed = ferror(in), err = errno;
    free(line);
    fclose(in);
    if (read_failed) {
        wc_error("reading %s failed: %s", path, strerror(err));
        wc_atomic_discard(&out);
        return WC_ERR;
    }
    if (dropped_bad)
        wc_warn("%s: dropped %ld line(s) that were not a logged step (a torn write?)", path,
                dropped_bad);
    if (wc_atomic_commit(&out) != WC_OK)
        wc_warn("%s keeps lines logged after the checkpoint", path);
    return WC_OK;
}

wc_trainlog *wc_trainlog_open(const char *out_dir, long start_step, long total_steps,
                              long steps_per_epoch, long log_every) {
    wc_trainlog *l = WC_CALLOC(1, sizeof *l);
    l->fd = -1;
    wc_json_init(&l->line);
    l->total_steps = total_steps, l->steps_per_epoch = steps_per_epoch, l->log_every = log_every;
    l->t_open = l->t_start = l->t_last = wc_now();
    if (wc_dist_rank() != 0) return l;
    l->active = 1;
    /* A live bar only on a real terminal: Open MPI gives every rank a pseudo-terminal even when
     * mpirun's output goes to a file, so under a launcher progress goes in lines. */
    l->tty = isatty(STDOUT_FILENO) && !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("SLURM_STEP_ID") &&
             !getenv("PMIX_RANK");
    size_t n = strlen(out_dir) + sizeof "/" WC_RUNDIR_METRICS_LOG;
    l->path = WC_ALLOC(n);
    snprintf(l->path, n, "%s/" WC_RUNDIR_METRICS_LOG, out_dir);
    if (start_step > 0 && trim(l->path, start_step) != WC_OK) {
        wc_trainlog_close(l);
        return NULL;
    }
    if (start_step == 0) unlink(l->path);
    /* O_NONBLOCK: a pipe put there since would fail the open (ENXIO), not hold the run */
    l->fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
    if (l->fd < 0 || (l->end = lseek(l->fd, 0, SEEK_END)) < 0) {
        wc_error("cannot write %s: %s", l->path, strerror(errno));
        wc_trainlog_close(l);
        return NULL;
    }
    return l;
}

void wc_trainlog_close(wc_trainlog *l) {
    if (!l) return;
    wc_trainlog_break_line(l);
    if (l->fd >= 0) close(l->fd);
    wc_json_free(&l->line);
    free(l->path);
    free(l);
}

void wc_trainlog_start(wc_trainlog *l) {
    l->t_start = l->t_last = wc_now();
}

void wc_trainlog_break_line(wc_trainlog *l) {
    if (l->bar_shown) printf("\n");
    l->bar_shown = 0;
}

/* Clears the live bar's line before a message takes it. */
static void clear_bar(wc_trainlog *l) {
    if (l->bar_shown) printf("\r\033[K");
    l->bar_shown = 0;
}

static void fmt_duration(char *buf, size_t size, double s) {
    long v = (long)(s + 0.5);
    if (v >= 3600)
        snprintf(buf, size, "%ldh%02ldm", v / 3600, v / 60 % 60);
    else
        snprintf(buf, size, "%ldm%02lds", v / 60, v % 60);
}

/* A loss as progress lines show it: "-" for none (NaN: no valid pixel). */
static void fmt_loss(char *out, size_t size, double loss) {
    if (isnan(loss))
        snprintf(out, size, "-");
    else
        snprintf(out, size, "%.4f", loss);
}

void wc_trainlog_step(wc_trainlog *l, long step, double loss, double lr, long samples) {
    l->steps_since_start++;
    l->samples_since_line += samples;
    if (!isnan(loss)) { /* a step without a valid pixel has none */
        l->steps_since_line++;
        l->loss_since_line += loss;
        l->last_loss = loss;
    }
    if (!l->active) return;
    const double now = wc_now();
    const long done = step + 1;
    const int line_due = done % l->log_every == 0 || done == l->total_steps;
    const double rate = (double)l->steps_since_start / (now - l->t_start);
    char eta[32];
    fmt_duration(eta, sizeof eta, rate > 0 ? (double)(l->total_steps - done) / rate : 0);
    if (!line_due) {
        if (!l->tty) return;
        int width = 30, filled = (int)(width * (double)done / (double)l->total_steps);
        char shown[32];
        fmt_loss(shown, sizeof shown, loss);
        printf("\r\033[K[%.*s%*s] step %ld/%ld  loss %s  ETA %s", filled,
               "##############################", width - filled, "", done, l->total_steps, shown,
               eta);
        fflush(stdout);
        l->bar_shown = 1;
        return;
    }
    const long epoch = step / l->steps_per_epoch + 1;
    const long epochs = (l->total_steps + l->steps_per_epoch - 1) / l->steps_per_epoch;
    const double dt = now - l->t_last;
    const double sps = dt > 0 ? (double)l->samples_since_line / dt : 0;
    const double mean =
        l->steps_since_line > 0 ? l->loss_since_line / (double)l->steps_since_line : NAN;
    char shown[32];
    fmt_loss(shown, sizeof shown, mean);
    clear_bar(l);
    wc_info("epoch %ld/%ld  step %ld/%ld  loss %s  lr %.2e  %.1f samples/s  ETA %s", epoch, epochs,
            done, l->total_steps, shown, lr, sps, eta);
    wc_json *j = begin_line(l, "train", done);
    wc_json_kint(j, "epoch", epoch);
    wc_json_knum(j, "loss", mean);
    wc_json_knum(j, "lr", lr);
    wc_json_knum(j, "samples_per_s", sps);
    wc_json_knum(j, "elapsed_s", now - l->t_open);
    end_line(l);
    l->t_last = now;
    l->samples_since_line = l->steps_since_line = 0;
    l->loss_since_line = 0;
}

void wc_trainlog_pending_loss(const wc_trainlog *l, double *sum, long *steps) {
    *sum = l ? l->loss_since_line : 0, *steps = l ? l->steps_since_line : 0;
}

void wc_trainlog_resume_loss(wc_trainlog *l, double sum, long steps) {
    l->loss_since_line = sum, l->steps_since_line = steps;
}

void wc_trainlog_validation(wc_trainlog *l, long step, const wc_metrics *val,
                            const wc_metrics *oracle) {
    if (!l->active) return;
    const long epoch = step / l->steps_per_epoch + 1;
    wc_json *j = begin_line(l, "val", step + 1);
    wc_json_kint(j, "epoch", epoch);
    wc_metrics_json_members(j, val, "");
    if (oracle) wc_metrics_json_members(j, oracle, "oracle_");
    end_line(l);
    clear_bar(l);
    char ranking[256];
    wc_metrics_ranking_text(val, 1, ranking, sizeof ranking);
    /* no validation pixel counted (all left out: nodata, beyond float's range) leaves the
     * loss, Brier and burned share undefined: said so, as the metrics log's null, not "nan" */
    char loss[24] = "undefined", brier[24] = "undefined", burned[40] = "";
    if (!isnan(val->loss)) snprintf(loss, sizeof loss, "%.4f", val->loss);
    if (!isnan(val->brier)) snprintf(brier, sizeof brier, "%.4f", val->brier);
    if (!isnan(val->positive_rate))
        snprintf(burned, sizeof burned, ", %.1f%% burned", 100 * val->positive_rate);
    wc_info("validation after step %ld (epoch %ld): loss %s  %s  Brier %s  (%lld pixels%s)",
            step + 1, epoch, loss, ranking, brier, (long long)val->pixels, burned);
    /* no share of an oracle without an AUC-PR (no valid pixel, none burned): never "nan%" */
    const double share = oracle && oracle->auc_pr > 0 ? 100 * val->auc_pr / oracle->auc_pr : NAN;
    char of[64] = "";
    if (isfinite(share))
        snprintf(of, sizeof of, "  (model at %.0f%% of the oracle's AUC-PR)", share);
    if (!oracle) return;
    if (oracle->pixels == 0) { /* nodata over every validation pixel: no figure to print */
        wc_info("  oracle: no probability on any of the validation pixels, so no figures");
        return;
    }
    /* an undefined figure (none of its pixels burned) as the model's line says it, not "nan" */
    char ap[24] = "undefined", roc[24] = "undefined";
    if (!isnan(oracle->auc_pr)) snprintf(ap, sizeof ap, "%.4f", oracle->auc_pr);
    if (!isnan(oracle->roc_auc)) snprintf(roc, sizeof roc, "%.4f", oracle->roc_auc);
    wc_info("  oracle on %s: AUC-PR %s  ROC-AUC %s%s",
            oracle->bad_outputs ? "the same pixels but those it has no probability for"
                                : "the same pixels",
            ap, roc, of);
}

void wc_trainlog_checkpoint(wc_trainlog *l, const char *dir, const char *name, long step,
                            size_t bytes, double seconds, double stall, const char *why) {
    if (!l->active) return;
    char b[32], file[64];
    if (name)
        snprintf(file, sizeof file, "%s", name);
    else
        snprintf(file, sizeof file, "ckpt-%08ld.wcp", step);
    clear_bar(l);
    if (stall >= 0)
        wc_info("checkpoint %s/%s (%s): %s in %.3f s in the background (training waited %.3f s)",
                dir, file, why, wc_fmt_bytes(b, sizeof b, (double)bytes), seconds, stall);
    else
        wc_info("checkpoint %s/%s (%s): %s in %.3f s", dir, file, why,
                wc_fmt_bytes(b, sizeof b, (double)bytes), seconds);
    wc_json *j = begin_line(l, "checkpoint", step);
    wc_json_kstr(j, "file", file);
    wc_json_kint(j, "bytes", (int64_t)bytes);
    wc_json_knum(j, "seconds", seconds);
    if (stall >= 0) wc_json_knum(j, "stall_s", stall);
    wc_json_kstr(j, "why", why);
    end_line(l);
}
