/* report.c: the end-of-run summary, report.json and report.md; see report.h.
 *
 * report.json is one flat object (validation metrics prefixed val_, the oracle's oracle_; one
 * array, the peak RSS of each rank) so that scripts read it with any JSON library, written
 * from a table of fields through the JSON builder (undefined figures are null). report.md is
 * drawn from that document as parsed back, the way the --baseline report is read: one lookup
 * for this run and the baseline, and the two files cannot disagree (numbers read back to the
 * same bits).
 *
 * Not here: computing the metrics (metrics.c), the risk map, MPI beyond gathering peak RSS. */
#include "wildcpu/report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/cpuinfo.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/json.h"
#include "wildcpu/quicklook.h"
#include "wildcpu/rundir.h"
#include "wildcpu/util.h"

static const char *status_name(int status) {
    return status == WC_EXIT_OK ? "finished" : status == WC_EXIT_STOPPED ? "stopped" : "failed";
}

/* report.json's "map": what became of the end-of-run map. */
static const char *map_name(wc_report_map map) {
    static const char *const names[] = {"none", "pending", "written", "failed", "stopped"};
    return names[map];
}

/* The map as the outcome of drawing it (a command status). */
static wc_report_map map_of_status(int status) {
    return status == WC_EXIT_OK        ? WC_REPORT_MAP_WRITTEN
           : status == WC_EXIT_STOPPED ? WC_REPORT_MAP_STOPPED
                                       : WC_REPORT_MAP_FAILED;
}

/* A failed command's cause as its log said it last (util.h), "" when it did not fail. */
static const char *failure_cause(int status, char *buf, size_t size) {
    buf[0] = '\0';
    if (status != WC_EXIT_OK && status != WC_EXIT_STOPPED) wc_last_error(buf, size);
    return buf;
}

/* report.md's first paragraph: how the command ended, the map included: status is the
 * training's, or the map's once it is drawn (map written, failed or stopped); rerun says how to
 * resume a stopped map (NULL: the same command). One line, so that wc_report_map_done can
 * replace it. */
static void write_status_line(FILE *f, int status, wc_report_map map, const char *rerun) {
    char why[WC_LAST_ERROR_MAX];
    failure_cause(status, why, sizeof why);
    switch (map) {
    case WC_REPORT_MAP_NONE:
        if (*why)
            fprintf(f, "Status: **%s**: %s.\n\n", status_name(status), why);
        else
            fprintf(f, "Status: **%s**.\n\n", status_name(status));
        break;
    case WC_REPORT_MAP_PENDING:
        fprintf(f, "Status: **finished** training; the risk map is not drawn yet.\n\n");
        break;
    case WC_REPORT_MAP_WRITTEN:
        fprintf(f, "Status: **finished**: trained, and the risk map drawn.\n\n");
        break;
    case WC_REPORT_MAP_FAILED:
        fprintf(f,
                "Status: **failed**: training finished, but the risk map was not made (%s; "
                "status %d).\n\n",
                *why ? why : "the run's log says why", status);
        break;
    case WC_REPORT_MAP_STOPPED:
        fprintf(f,
                "Status: **stopped** while drawing the risk map (training had finished): "
                "%s to draw it.\n\n",
                rerun ? rerun : "rerun the same command");
        break;
    }
}

/* A row of report.md: its label, the report.json key it shows, how. */
typedef struct {
    const char *name, *key, *fmt; /* fmt NULL: a threshold (wc_metrics_threshold_text) */
    int higher_is_better;         /* +1, -1, 0 (cost: lower is better, shown as a ratio) */
    int total; /* a total of the session (cost_totals_why), not a rate or a peak */
} row;

/* report.md from this run's report (run) and, when given, the baseline's (base). Written
 * atomically (temporary name, then rename): a reader never sees half a report. */
/* The reliability section: the diagram (when it was written) and its table. A calibrated model's
 * bins have an observed share equal to their mean prediction, so the risk map's numbers can be
 * read as probabilities. */
static void write_reliability(FILE *f, const wc_metrics *m, int have_picture) {
    fprintf(f, "### Reliability (calibration) of the last validation\n\n");
    if (have_picture) fprintf(f, "![reliability diagram](" WC_RUNDIR_CALIBRATION_PNG ")\n\n");
    fprintf(f, "| predicted | pixels | mean predicted | observed burned |\n|---|---:|---:|---:|\n");
    for (int k = 0; k < WC_METRICS_CAL_BINS; k++) {
        fprintf(f, "| %.1f-%.1f | %lld |", k / 10.0, (k + 1) / 10.0, (long long)m->cal_count[k]);
        if (m->cal_count[k] > 0)
            fprintf(f, " %.4f | %.4f |\n", m->cal_predicted[k], m->cal_observed[k]);
        else
            fprintf(f, " - | - |\n");
    }
    fprintf(f, "\n");
}

/* Why this run's v cannot be set against the baseline's bv (a difference, or a ratio when
 * ratio), or NULL when it can: a run without validation has no quality figures, a report of
 * another version or written by hand may lack any, and a ratio to zero is none. */
static const char *no_change_why(double v, double bv, int ratio) {
    if (!isfinite(v)) return "this run has none";
    if (!isfinite(bv)) return "the baseline has none";
    if (ratio && bv == 0) return "the baseline's is 0";
    /* a hand-written or damaged report: a negative cost, or one so small the ratio overflows */
    if (ratio && (bv < 0 || !isfinite(v / bv))) return "the baseline's is out of range";
    return NULL;
}

/* v in fmt, or in wide when fmt would not fit buf: a hand-written baseline's 1e308 at %.1f has
 * 309 digits, and its difference or ratio as many. */
static void fmt_fit(char *buf, size_t size, const char *fmt, const char *wide, double v) {
    if (snprintf(buf, size, fmt, v) >= (int)size) snprintf(buf, size, wide, v);
}

/* The change column: this run minus the baseline, or over it for a ratio; "n/a" when
 * no_change_why says there is none. */
static void fmt_change(char *d, size_t size, double v, double bv, int ratio) {
    if (no_change_why(v, bv, ratio))
        snprintf(d, size, "n/a");
    else if (ratio)
        fmt_fit(d, size, "x%.2f", "x%.4g", v / bv);
    else
        fmt_fit(d, size, "%+.4f", "%+.4g", v - bv);
}

/* Why the totals of a report's cost (its wall time, core-hours, checkpoints) are not those of
 * its whole training, into buf, who naming the report ("this run's"), or NULL when they are: a
 * report counts its own session alone, so one of a resumed session, of a stopped one or of a
 * rerun that only wrote a missing report covers part of the steps (a report without the step
 * members, of another version or written by hand, is taken as whole). */
static const char *cost_part_why(const wc_json_doc *doc, const char *who, char *buf, size_t size) {
    const double total = wc_json_get_num(doc, "steps"),
                 here = wc_json_get_num(doc, "steps_this_run"),
                 from = wc_json_get_num(doc, "resumed_from_step");
    if (!isfinite(total) || !isfinite(here) || here >= total) return NULL;
    if (here <= 0)
        snprintf(buf, size, "%s covers none of its %.0f steps", who, total);
    else
        snprintf(buf, size, "%s covers steps %.0f-%.0f of %.0f only", who,
                 (isfinite(from) ? from : 0) + 1, (isfinite(from) ? from : 0) + here, total);
    return buf;
}

/* Why the totals of the two costs cannot be set side by side (one of them is part of its
 * training's: cost_part_why), into buf, or NULL when they can. */
static const char *cost_totals_why(const wc_json_doc *run, const wc_json_doc *base, char *buf,
                                   size_t size) {
    char a[128], b[128];
    const char *ra = cost_part_why(run, "this run's", a, sizeof a),
               *rb = cost_part_why(base, "the baseline's", b, sizeof b);
    if (!ra && !rb) return NULL;
    snprintf(buf, size, "%s%s%s, a report counting its own session alone", ra ? ra : "",
             ra && rb ? ", " : "", rb ? rb : "");
    return buf;
}

/* The sentence under the tables: AUC-PR against the cost. A figure that cannot be compared
 * reads n/a, and a last sentence says why (never "+nan" or "xnan"). */
static void write_comparison(FILE *f, const wc_json_doc *run, const wc_json_doc *base,
                             const char *base_path) {
    static const struct {
        const char *key, *what;
        int ratio;
    } figs[] = {{"val_auc_pr", "validation AUC-PR", 0},
                {"core_hours", "core-hours", 1},
                {"wall_time_s", "wall time", 1}};
    char shown[3][32], why[800] = "", part[320];
    const char *totals = cost_totals_why(run, base, part, sizeof part);
    size_t n = 0;
    int part_of_cost = 0; /* a cost figure is n/a for totals: said once, after the others */
    for (int i = 0; i < 3; i++) {
        const double v = wc_json_get_num(run, figs[i].key), bv = wc_json_get_num(base, figs[i].key);
        fmt_change(shown[i], sizeof shown[i], v, bv, figs[i].ratio);
        const char *no = no_change_why(v, bv, figs[i].ratio);
        if (!no && figs[i].ratio && totals) { /* core-hours and wall time are totals */
            snprintf(shown[i], sizeof shown[i], "n/a");
            part_of_cost = 1;
        }
        if (no && n < sizeof why)
            n += (size_t)snprintf(why + n, sizeof why - n, "%s%s: %s", n ? "; " : "", figs[i].what,
                                  no);
    }
    if (part_of_cost && n < sizeof why)
        n += (size_t)snprintf(why + n, sizeof why - n, "%scost: %s", n ? "; " : "", totals);
    fprintf(f,
            "Against the baseline (%s): AUC-PR %s for %s the core-hours and %s the wall time. "
            "Change is this run minus the baseline for quality and checkpoints written, this "
            "run over the baseline for the rest of the cost.%s%s%s\n",
            base_path, shown[0], shown[1], shown[2], n ? " n/a: no comparison (" : "", why,
            n ? ")." : "");
}

/* A table cell: v in the row's format (%.4g when that would not fit), "-" when undefined. */
static void fmt_cell(char *cell, size_t size, const char *fmt, double v) {
    if (!isfinite(v))
        snprintf(cell, size, "-");
    else if (!fmt) /* a threshold, in the digits that select what it selects */
        wc_metrics_threshold_text(v, cell, size);
    else
        fmt_fit(cell, size, fmt, "%.4g", v);
}

/* The model-selection paragraph of a run whose best.wcp (of step `step`) was lost. */
static void write_best_lost(FILE *f, long step) {
    fprintf(f,
            "Model selection: " WC_CKPT_DIR "/" WC_CKPT_BEST " (the best validation, after step "
            "%ld) was missing or damaged when this session started, and no validation has "
            "written one since: the risk map of this run, and `wildcpu predict` or `evaluate` "
            "given this directory, use the newest checkpoint instead.\n\n",
            step);
}

/* The model-selection paragraph of a run without best.wcp, and why it has none: the map and
 * the commands given the directory use the newest checkpoint on disk, named by its step (which
 * a failed step loop leaves behind the step it reached). */
static void write_newest_used(FILE *f, const wc_run_summary *s, const char *why) {
    char which[64];
    if (s->newest_ckpt_step >= 0)
        snprintf(which, sizeof which, "step %ld", s->newest_ckpt_step);
    else
        snprintf(which, sizeof which, "%s",
                 s->newest_ckpt_step == -1 ? "there was none" : "its directory could not be read");
    fprintf(f,
            "Model selection: none, as %s: %s`wildcpu predict` or `evaluate` given this "
            "directory use%s its newest checkpoint (%s when this report was written).\n\n",
            why, s->map == WC_REPORT_MAP_NONE ? "" : "the risk map of this run, and ",
            s->map == WC_REPORT_MAP_NONE ? "s" : "", which);
}

static int write_markdown(const char *path, const wc_run_summary *s, const wc_json_doc *run,
                          const wc_json_doc *base, const char *base_path, int have_picture) {
    wc_atomic_file af;
    if (wc_atomic_open(&af, path, "w") != WC_OK) return WC_ERR;
    FILE *f = af.f;
    fprintf(f, "# wildcpu run report\n\n");
    write_status_line(f, s->status, s->map, NULL);
    char resumed[64] = "";
    if (s->start_step > 0)
        snprintf(resumed, sizeof resumed, ", resumed from step %ld", s->start_step);
    fprintf(f,
            "Model `%s`, %d rank%s x %d thread%s, global batch %d (micro-batch %d), %ld of %ld "
            "steps done (%ld in this invocation%s). The cost below is this invocation's: "
            "earlier sessions of a resumed run are not counted in it.\n\n",
            s->arch, s->ranks, s->ranks > 1 ? "s" : "", s->threads, s->threads > 1 ? "s" : "",
            s->batch, s->micro_batch, s->start_step + s->steps_done, s->steps_total, s->steps_done,
            resumed);
    if (s->augmentation[0]) fprintf(f, "Augmentation: %s.\n\n", s->augmentation);
    if (isfinite(s->shifted_fraction) || isfinite(s->turned_fraction)) {
        fprintf(f, "Training samples of the first epoch");
        if (isfinite(s->shifted_fraction))
            fprintf(f, ": %.0f%% shifted (jitter)", 100 * s->shifted_fraction);
        if (isfinite(s->turned_fraction))
            fprintf(f, "%s %.0f%% turned (--rotate)", isfinite(s->shifted_fraction) ? "," : ":",
                    100 * s->turned_fraction);
        fprintf(f, ".\n\n");
    }
    char machine[400];
    fprintf(f, "Machine (rank 0): %s.\n\n", wc_cpuinfo_describe(machine, sizeof machine));
    if (strchr(s->kernels, ',') || strstr(s->kernels, "/ranks:mixed"))
        fprintf(f,
                "Kernels: %s. %s may round differently: this run's parameters may not be "
                "bitwise those of a run on one kind of kernels (set one OPENBLAS_CORETYPE for "
                "every rank and session for that).\n\n",
                s->kernels,
                strchr(s->kernels, ',') ? "Its sessions ran on different kernels, which"
                                        : "Its ranks ran on different kernels, which");

    static const row cost[] = {
        {"wall time (s)", "wall_time_s", "%.1f", 0, 1},
        {"core-hours", "core_hours", "%.4f", 0, 1},
        {"training samples/s", "samples_per_s", "%.2f", 1, 0},
        {"GFLOP/s (all ranks)", "gflops_per_s", "%.1f", 1, 0},
        {"peak RSS per rank, max (MiB)", "peak_rss_mib_max", "%.1f", 0, 0},
        {"I/O wait, fraction of training (rank 0)", "io_wait_fraction", "%.4f", 0, 0},
        {"reduction, fraction of training", "reduce_fraction", "%.4f", 0, 0},
        {"checkpoints written", "checkpoints_written", "%.0f", 2, 1},
        {"checkpoint time (s)", "checkpoint_time_s", "%.3f", 0, 1},
    };
    static const row quality[] = {
        {"loss (BCE)", "val_loss", "%.4f", -1, 0},
        {"AUC-PR (average precision)", "val_auc_pr", "%.4f", 1, 0},
        {"ROC-AUC", "val_roc_auc", "%.4f", 1, 0},
        {"best F1", "val_best_f1", "%.4f", 1, 0},
        {"best-F1 threshold", "val_best_f1_threshold", NULL, 2, 0},
        {"precision at 0.5", "val_precision_at_half", "%.4f", 1, 0},
        {"recall at 0.5", "val_recall_at_half", "%.4f", 1, 0},
        {"Brier score", "val_brier", "%.5f", -1, 0},
        {"positive rate", "val_positive_rate", "%.4f", 2, 0},
        {"validation pixels", "val_pixels", "%.0f", 2, 0},
    };
    for (int part = 0; part < 2; part++) {
        const row *rows = part ? quality : cost;
        int nrows =
            part ? (int)(sizeof quality / sizeof quality[0]) : (int)(sizeof cost / sizeof cost[0]);
        fprintf(f, "## %s\n\n", part ? "Quality on validation ground (never trained on)" : "Cost");
        if (part && !s->have_val) {
            fprintf(f, s->val_patches ? "No validation ran yet (it runs after every epoch).\n\n"
                                      : "No validation ran (no validation patches).\n\n");
            continue;
        }
        fprintf(f, "| | this run |%s%s\n", part && s->have_oracle ? " oracle |" : "",
                base ? " baseline | change |" : "");
        fprintf(f, "|---|---:|%s%s\n", part && s->have_oracle ? "---:|" : "",
                base ? "---:|---:|" : "");
        for (int i = 0; i < nrows; i++) {
            char a[32], o[32] = "", b[32] = "", d[48] = "";
            double v = wc_json_get_num(run, rows[i].key);
            fmt_cell(a, sizeof a, rows[i].fmt, v);
            if (part && s->have_oracle) {
                char okey[96];
                snprintf(okey, sizeof okey, "oracle_%s", rows[i].key + 4);
                fmt_cell(o, sizeof o, rows[i].fmt, wc_json_get_num(run, okey));
            }
            if (base) {
                double bv = wc_json_get_num(base, rows[i].key);
                fmt_cell(b, sizeof b, rows[i].fmt, bv);
                const int ratio =
                    rows[i].higher_is_better == 0 || (!part && rows[i].higher_is_better == 1);
                fmt_change(d, sizeof d, v, bv, ratio);
                if (!ratio && rows[i].fmt && strcmp(rows[i].fmt, "%.0f") == 0 &&
                    !no_change_why(v, bv, 0))
                    fmt_fit(d, sizeof d, "%+.0f", "%+.4g", v - bv); /* a count's: whole */
                char part_why[320]; /* the sentence under the tables says why */
                if (rows[i].total && cost_totals_why(run, base, part_why, sizeof part_why))
                    snprintf(d, sizeof d, "n/a");
            }
            fprintf(f, "| %s | %s |", rows[i].name, a);
            if (part && s->have_oracle) fprintf(f, " %s |", o);
            if (base) fprintf(f, " %s | %s |", b, d);
            fprintf(f, "\n");
        }
        fprintf(f, "\n");
        if (part && !wc_metrics_can_rank(&s->val) && s->val.pixels > 0)
            fprintf(f,
                    "%s of the validation pixels is burned, so the ranking figures say "
                    "nothing of this model (AUC-PR is %s for any model): check the labels, or "
                    "move the validation blocks (--val-block, --seed).\n\n",
                    s->val.positives == 0 ? "None" : "Every one",
                    s->val.positives == 0 ? "undefined" : "1");
    }
    if (s->have_val && s->val_earlier) {
        fprintf(f,
                "The last validation ran in an earlier session of this run (the checkpoint it "
                "resumed from records it; none ran since)%s\n\n",
                have_picture ? ", and " WC_RUNDIR_CALIBRATION_PNG " is that session's reliability "
                               "diagram:"
                             : ".");
        if (have_picture) fprintf(f, "![reliability diagram](" WC_RUNDIR_CALIBRATION_PNG ")\n\n");
    } else if (s->have_val)
        write_reliability(f, &s->val, have_picture);
    if (s->best_step >= 0)
        fprintf(f,
                "Model selection: the checkpoint with the best validation AUC-PR, %.4f after step "
                "%ld, is kept as " WC_CKPT_DIR "/" WC_CKPT_BEST "; the risk map of this run, and "
                "`wildcpu predict` or `evaluate` given this directory, use it. The table shows "
                "the last validation.\n\n",
                s->best_auc_pr, s->best_step);
    else if (s->best_lost)
        write_best_lost(f, s->best_lost_step);
    else if (!s->val_patches)
        write_newest_used(f, s, "no ground is held out for validation");
    else if (s->best_unsaved_step < 0) /* else the paragraph below says what became of it */
        write_newest_used(f, s,
                          !s->have_val ? "no validation has run yet"
                                       : "no validation could rank models (the log says why)");
    if (s->best_unsaved_step >= 0)
        fprintf(f,
                "The validation after step %ld was better (AUC-PR %.4f), but " WC_CKPT_BEST
                " could not be written then (the log says why), and its weights are gone: "
                "%s.\n\n",
                s->best_unsaved_step, s->best_unsaved_auc_pr,
                s->best_step >= 0 ? "the map uses the best that was saved"
                                  : "no validation's checkpoint was saved as " WC_CKPT_BEST);
    if (s->have_oracle && s->have_val && isfinite(s->val.auc_pr) && s->oracle.auc_pr > 0)
        fprintf(f,
                "The oracle is the true burn probability the synthetic labels were drawn from: "
                "the best any map can do on these pixels. This run's AUC-PR is %.0f%% of "
                "the oracle's.\n\n",
                100 * s->val.auc_pr / s->oracle.auc_pr);
    if (base) write_comparison(f, run, base, base_path);
    return wc_atomic_commit(&af);
}

/* A field of report.json: a key and its value, in the file's order. */
typedef struct field {
    const char *key;
    enum { FIELD_STR, FIELD_INT, FIELD_NUM } kind;
    const char *s;
    int64_t i;
    double v;
} field;
#define BASELINE_MAX (16u << 20) /* a report.json or report.md is a few KiB */

/* The --baseline report, parsed; a file that cannot be read or is not a wildcpu report is a
 * warning (the run's own report is still written, without the comparison). */
static int read_baseline(const char *path, wc_json_doc *doc) {
    char why[256];
    char *text = wc_read_file_limited(path, BASELINE_MAX, why, sizeof why);
    if (!text) {
        wc_warn("--baseline %s cannot be read (%s): no comparison in the report", path, why);
        return WC_ERR;
    }
    int rc = wc_json_parse(text, doc, why, sizeof why);
    free(text);
    if (rc != WC_OK) {
        wc_warn("--baseline %s is not valid JSON (%s): no comparison in the report", path, why);
        return WC_ERR;
    }
    if (!wc_json_get_str(doc, "wildcpu")) {
        wc_warn("--baseline %s is not a wildcpu " WC_RUNDIR_REPORT_JSON " (it has no "
                "\"wildcpu\" member): no comparison in the report",
                path);
        wc_json_doc_free(doc);
        return WC_ERR;
    }
    return WC_OK;
}

/* text (malloc'd) with the member key of its top-level object set to `json` (a value as JSON
 * text: "\"written\"", "-1", "null"): its value replaced where the parser found it, or the member
 * added after the last one; the rest of the text stays as it was (members this version does not
 * know, a report pretty-printed by a user's tool). text is freed; NULL (after a warning naming
 * path) when it is not a JSON object with members. */
static char *with_member(char *text, const char *path, const char *key, const char *json) {
    wc_json_doc doc;
    char why[256];
    const int parsed = wc_json_parse(text, &doc, why, sizeof why) == WC_OK;
    if (!parsed || doc.n == 0) {
        wc_warn("%s is not a JSON object (%s): left as it is", path, parsed ? "no members" : why);
        wc_json_doc_free(&doc);
        free(text);
        return NULL;
    }
    const wc_json_member *m = wc_json_get(&doc, key), *last = &doc.members[doc.n - 1];
    wc_json k;
    wc_json_init(&k);
    wc_json_str(&k, key);
    size_t keep, resume; /* text[0, keep) + the new part + text[resume, ...) */
    char *part;
    if (m) {
        keep = m->value_at, resume = m->value_at + m->value_len;
        part = wc_strdup(json);
    } else {
        keep = resume = last->value_at + last->value_len;
        const size_t n = strlen(wc_json_text(&k)) + strlen(json) + 3;
        part = WC_ALLOC(n);
        snprintf(part, n, ",%s:%s", wc_json_text(&k), json);
    }
    wc_json_free(&k);
    wc_json_doc_free(&doc);
    const size_t n = keep + strlen(part) + strlen(text + resume) + 1;
    char *out = WC_ALLOC(n);
    snprintf(out, n, "%.*s%s%s", (int)keep, text, part, text + resume);
    free(part);
    free(text);
    return out;
}

/* report.json of out_dir with the members keys[i] set to the JSON texts values[i] (n of them),
 * where they are in the file, the rest kept as it is; `why` says for what, in warnings. A file
 * that is not a wildcpu report.json is left alone (said). Returns WC_ERR when the file was to
 * be updated and could not be (an error said it: a full disk), else WC_OK. */
static int update_json(const char *out_dir, const char *const *keys, const char *const *values,
                       int n, const char *why_for) {
    char path[4200], why[256];
    snprintf(path, sizeof path, "%s/" WC_RUNDIR_REPORT_JSON, out_dir);
    char *text = wc_read_file_limited(path, BASELINE_MAX, why, sizeof why);
    if (!text) {
        if (access(path, F_OK) == 0) wc_warn("%s cannot be read to %s: %s", path, why_for, why);
        return WC_OK; /* no report: this invocation trained nothing, and no earlier one left it */
    }
    wc_json_doc doc = {0, NULL};
    const int ours =
        wc_json_parse(text, &doc, why, sizeof why) == WC_OK && wc_json_get_str(&doc, "wildcpu");
    wc_json_doc_free(&doc);
    if (!ours) {
        wc_warn("%s is not a wildcpu " WC_RUNDIR_REPORT_JSON ": left as it is (not updated to %s)",
                path, why_for);
        free(text);
        return WC_OK;
    }
    for (int i = 0; i < n && text; i++) text = with_member(text, path, keys[i], values[i]);
    wc_atomic_file af;
    int rc = WC_OK;
    if (text && wc_atomic_open(&af, path, "w") == WC_OK) {
        fputs(text, af.f);
        rc = wc_atomic_commit(&af);
    } else if (text)
        rc = WC_ERR;
    free(text);
    return rc;
}

/* report.json of out_dir with its status and map set to how drawing the map ended; WC_ERR when
 * it could not be written. */
static int json_map_done(const char *out_dir, int status) {
    wc_json st, map;
    wc_json_init(&st), wc_json_init(&map);
    wc_json_str(&st, status_name(status));
    wc_json_str(&map, map_name(map_of_status(status)));
    wc_json err; /* the map's failure, when it failed */
    wc_json_init(&err);
    char why[WC_LAST_ERROR_MAX];
    wc_json_str(&err, failure_cause(status, why, sizeof why));
    const char *keys[] = {"status", "map", "error"},
               *values[] = {wc_json_text(&st), wc_json_text(&map), wc_json_text(&err)};
    const int rc = update_json(out_dir, keys, values, 3, "record the map");
    wc_json_free(&st), wc_json_free(&map), wc_json_free(&err);
    return rc;
}

/* The pictures' section of report.md starts here; everything after it is the section. */
#define PICTURES_MARK "<!-- wildcpu: pictures -->"

/* report.md of out_dir with its status line saying how drawing the map ended and, when it was
 * drawn, a section with the pictures; WC_ERR when it could not be written. */
static int markdown_map_done(const char *out_dir, int status, const char *rerun) {
    static const struct {
        const char *file, *title, *caption;
    } pics[] = {
        {WC_RUNDIR_PICTURE, "The risk map",
         "Burn probability of every pixel (`" WC_RUNDIR_MAP "`; open it in QGIS, which picks "
         "up `" WC_RUNDIR_MAP_STEM ".qml`), on the absolute scale 0..1; nodata is transparent."},
    };
    char path[4200], pic[4200];
    snprintf(path, sizeof path, "%s/" WC_RUNDIR_REPORT_MD, out_dir);
    /* this run wrote it just now, but a pipe put in its place since must not hold the run */
    char why[256];
    char *text = wc_read_file_limited(path, BASELINE_MAX, why, sizeof why);
    if (!text) {
        if (access(path, F_OK) == 0) wc_warn("%s cannot be read to record the map: %s", path, why);
        return WC_OK;
    }
    char *mark = strstr(text, PICTURES_MARK);
    if (mark) *mark = '\0';
    /* the status line only: a report of a wildcpu before 2026-12-03 went on in the same
     * paragraph ("Model ..."), which becomes the next one */
    char *line = strstr(text, "\nStatus: "), *after = line ? strchr(line + 1, '\n') : NULL;
    while (after && *after == '\n') after++;
    wc_atomic_file af;
    int rc = WC_OK;
    if (!after)
        wc_warn("%s has no status line: it does not record the map", path);
    else if (wc_atomic_open(&af, path, "w") != WC_OK)
        rc = WC_ERR;
    else {
        fprintf(af.f, "%.*s", (int)(line + 1 - text), text);
        write_status_line(af.f, status, map_of_status(status), rerun);
        fprintf(af.f, "%s%s\n\n", after, PICTURES_MARK);
        for (size_t i = 0; status == WC_EXIT_OK && i < sizeof pics / sizeof pics[0]; i++) {
            snprintf(pic, sizeof pic, "%s/%s", out_dir, pics[i].file);
            if (access(pic, R_OK) != 0) continue;
            fprintf(af.f, "## %s\n\n![%s](%s)\n\n%s\n\n", pics[i].title, pics[i].title,
                    pics[i].file, pics[i].caption);
        }
        rc = wc_atomic_commit(&af);
    }
    free(text);
    return rc;
}

void wc_report_best_lost(const char *out_dir, long step) {
    const char *keys[] = {"best_step", "best_val_auc_pr"}, *values[] = {"-1", "null"};
    update_json(out_dir, keys, values, 2, "record the lost best.wcp");
    /* report.md: its model-selection paragraph, which named best.wcp, replaced */
    char path[4200], why[256];
    snprintf(path, sizeof path, "%s/" WC_RUNDIR_REPORT_MD, out_dir);
    char *text = wc_read_file_limited(path, BASELINE_MAX, why, sizeof why);
    wc_atomic_file af;
    char *para = text ? strstr(text, "\nModel selection: ") : NULL;
    char *end = para ? strstr(para + 1, "\n\n") : NULL;
    if (end && wc_atomic_open(&af, path, "w") == WC_OK) {
        fprintf(af.f, "%.*s", (int)(para + 1 - text), text);
        write_best_lost(af.f, step);
        fputs(end + 2, af.f);
        wc_atomic_commit(&af);
    }
    free(text);
}

int wc_report_map_done(const char *out_dir, int status, const char *rerun) {
    const int json = json_map_done(out_dir, status) != WC_OK;
    const int md = markdown_map_done(out_dir, status, rerun) != WC_OK;
    return json * WC_REPORT_JSON_STALE + md * WC_REPORT_MD_STALE;
}

/* What the summary derives from the run's figures: the log and report.json say the same. */
typedef struct derived {
    double ts;         /* the step loop's seconds; NaN when it did not run (rates undefined) */
    double sps;        /* training samples per second */
    double core_hours; /* wall time x ranks x threads */
    double expected;   /* bytes: planned + baseline + GDAL cache + its open files */
    int64_t rss_max;   /* the largest peak RSS of any rank */
} derived;

static derived derive(const wc_run_summary *s, const int64_t *rss, int R) {
    derived d = {.ts = s->train_seconds > 0 ? s->train_seconds : NAN};
    for (int r = 0; r < R; r++) d.rss_max = WC_MAX(d.rss_max, rss[r]);
    d.sps = (double)s->samples_done / d.ts;
    d.core_hours = s->wall_seconds * s->ranks * s->threads / 3600.0;
    d.expected =
        (double)(s->planned_bytes + s->baseline_bytes + s->gdal_cache_bytes + s->gdal_files_bytes);
    return d;
}

static void log_summary(const wc_run_summary *s, const derived *d) {
    char buf[32], buf2[32], rate[96];
    if (isnan(d->ts)) /* no step in this run: no rate to give */
        snprintf(rate, sizeof rate, "over %d rank%s", s->ranks, s->ranks > 1 ? "s" : "");
    else
        snprintf(rate, sizeof rate, "%.2f samples/s, %.1f GFLOP/s over %d rank%s", d->sps,
                 d->sps * s->flops_per_sample / 1e9, s->ranks, s->ranks > 1 ? "s" : "");
    wc_info("run %s: %ld steps in %.1f s (%s), %.4f core-hours; peak RSS %s per rank (max) vs "
            "%s planned + baseline + GDAL cache and open files (x%.2f)",
            status_name(s->status), s->steps_done, s->wall_seconds, rate, d->core_hours,
            wc_fmt_bytes(buf, sizeof buf, (double)d->rss_max),
            wc_fmt_bytes(buf2, sizeof buf2, d->expected), (double)d->rss_max / d->expected);
    if (s->best_unsaved_step >= 0)
        wc_warn("the best validation of this session, after step %ld (AUC-PR %.4f), could not be "
                "saved as " WC_CKPT_BEST "; %s",
                s->best_unsaved_step, s->best_unsaved_auc_pr,
                s->best_step >= 0 ? "it holds the best that was saved" : "there is none");
    if (s->train_seconds > 0)
        wc_info("time on rank 0: compute %.1f%%, reduction %.1f%%, validation %.1f%%, waiting "
                "for data %.2f%%, checkpoints %.2f%% (%ld written)",
                100 * s->compute_seconds / d->ts, 100 * s->reduce_seconds / d->ts,
                100 * s->val_seconds / d->ts, 100 * s->io_wait_seconds / d->ts,
                100 * s->ckpt_seconds / d->ts, s->ckpts_written);
}

/* report.json's document into j (initialized): the fields in order, the peak RSS of each of the
 * R ranks, then the validation metrics and the oracle's. status and map are how the command ends
 * (s's, unless writing the report failed). */
static void build_json(wc_json *j, const wc_run_summary *s, int status, wc_report_map map,
                       const derived *d, const int64_t *rss, int R) {
    char created[32], why[WC_LAST_ERROR_MAX];
    wc_utc_timestamp(created, sizeof created);
    const double MiB = 1048576.0;
    const field fields[] = {
        {"wildcpu", FIELD_STR, .s = WC_VERSION},
        {"created", FIELD_STR, .s = created},
        {"status", FIELD_STR, .s = status_name(status)},
        {"map", FIELD_STR, .s = map_name(map)},
        /* a failure's cause, the last error the log said: "" for a run that did not fail */
        {"error", FIELD_STR, .s = failure_cause(status, why, sizeof why)},
        {"model", FIELD_STR, .s = s->arch},
        {"ranks", FIELD_INT, .i = s->ranks},
        {"threads_per_rank", FIELD_INT, .i = s->threads},
        {"global_batch", FIELD_INT, .i = s->batch},
        {"micro_batch", FIELD_INT, .i = s->micro_batch},
        {"augmentation", FIELD_STR, .s = s->augmentation},
        {"shifted_fraction", FIELD_NUM, .v = s->shifted_fraction},
        {"turned_fraction", FIELD_NUM, .v = s->turned_fraction},
        {"steps", FIELD_INT, .i = s->steps_total},
        {"steps_done", FIELD_INT, .i = s->start_step + s->steps_done},
        {"steps_this_run", FIELD_INT, .i = s->steps_done},
        {"resumed_from_step", FIELD_INT, .i = s->start_step},
        {"steps_per_epoch", FIELD_INT, .i = s->steps_per_epoch},
        {"epochs", FIELD_NUM, .v = (double)s->steps_total / (double)s->steps_per_epoch},
        {"wall_time_s", FIELD_NUM, .v = s->wall_seconds},
        {"train_time_s", FIELD_NUM, .v = s->train_seconds},
        {"core_hours", FIELD_NUM, .v = d->core_hours},
        {"samples_per_s", FIELD_NUM, .v = d->sps},
        {"gflops_per_s", FIELD_NUM, .v = d->sps * s->flops_per_sample / 1e9},
        {"time_compute_s", FIELD_NUM, .v = s->compute_seconds},
        {"time_reduce_s", FIELD_NUM, .v = s->reduce_seconds},
        {"time_validation_s", FIELD_NUM, .v = s->val_seconds},
        {"time_io_wait_s", FIELD_NUM, .v = s->io_wait_seconds},
        {"io_wait_fraction", FIELD_NUM, .v = s->io_wait_seconds / d->ts},
        {"reduce_fraction", FIELD_NUM, .v = s->reduce_seconds / d->ts},
        {"recomputed_steps", FIELD_INT, .i = s->redo_steps},
        {"peak_rss_mib_max", FIELD_NUM, .v = (double)d->rss_max / MiB},
        {"memory_planned_mib", FIELD_NUM, .v = (double)s->planned_bytes / MiB},
        {"memory_baseline_mib", FIELD_NUM, .v = (double)s->baseline_bytes / MiB},
        {"gdal_cache_mib", FIELD_NUM, .v = (double)s->gdal_cache_bytes / MiB},
        {"gdal_open_files_mib", FIELD_NUM, .v = (double)s->gdal_files_bytes / MiB},
        {"peak_rss_over_plan", FIELD_NUM, .v = (double)d->rss_max / d->expected},
        {"data_held_mib", FIELD_NUM, .v = (double)s->data_bytes / MiB},
        {"patches_read", FIELD_INT, .i = s->patches_read},
        {"mib_read", FIELD_NUM, .v = s->bytes_read / MiB},
        {"checkpoints_written", FIELD_INT, .i = s->ckpts_written},
        {"checkpoint_time_s", FIELD_NUM, .v = s->ckpt_seconds},
        {"checkpoint_mib", FIELD_NUM, .v = (double)s->ckpt_bytes / MiB},
        {"checkpoint_fraction", FIELD_NUM, .v = s->ckpt_seconds / d->ts},
        {"checkpoint_background_s", FIELD_NUM, .v = s->ckpt_bg_seconds},
        {"final_train_loss", FIELD_NUM, .v = s->last_loss},
        {"best_step", FIELD_INT, .i = s->best_step},
        {"best_val_auc_pr", FIELD_NUM, .v = s->best_step >= 0 ? s->best_auc_pr : NAN},
        {"best_unsaved_step", FIELD_INT, .i = s->best_unsaved_step},
        {"best_unsaved_val_auc_pr", FIELD_NUM,
         .v = s->best_unsaved_step >= 0 ? s->best_unsaved_auc_pr : NAN},
    };
    wc_json_object(j);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const field *f = &fields[i];
        wc_json_key(j, f->key);
        if (f->kind == FIELD_STR)
            wc_json_str(j, f->s);
        else if (f->kind == FIELD_INT)
            wc_json_int(j, f->i);
        else
            wc_json_num(j, f->v);
    }
    wc_json_key(j, "peak_rss_mib_per_rank");
    wc_json_array(j);
    for (int r = 0; r < R; r++) wc_json_num(j, (double)rss[r] / MiB);
    wc_json_end(j);
    wc_cpuinfo_json_members(j); /* rank 0's node: the figures above mean nothing without it */
    /* the kernels of the run's sessions: more than one, and its bits are no single kind's */
    wc_json_key(j, "kernels");
    wc_json_array(j);
    for (const char *k = s->kernels; *k;) {
        const size_t n = strcspn(k, ",");
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)WC_MIN(n, sizeof one - 1), k);
        wc_json_str(j, one);
        k += n + (k[n] == ',');
    }
    wc_json_end(j);
    if (s->have_val) {
        wc_metrics_json_members(j, &s->val, "val_");
        /* an earlier session's validation, from a checkpoint: its bins are not recorded */
        if (!s->val_earlier) wc_metrics_json_calibration(j, "val_calibration", &s->val);
    }
    if (s->have_oracle) wc_metrics_json_members(j, &s->oracle, "oracle_");
    wc_json_end(j);
}

/* Writes a JSON document (the builder's text) to path, atomically. */
static int write_json(const char *path, const wc_json *j) {
    wc_atomic_file af;
    int rc = wc_atomic_open(&af, path, "w");
    if (rc == WC_OK) {
        fputs(wc_json_text(j), af.f);
        fputc('\n', af.f);
        rc = wc_atomic_commit(&af);
    }
    return rc;
}

/* The report.json in out_dir, parsed into doc (wc_json_doc_free it); 0 when it cannot be read
 * or is not JSON. */
static int read_report_json(const char *out_dir, wc_json_doc *doc) {
    char path[4200], why[256];
    snprintf(path, sizeof path, "%s/" WC_RUNDIR_REPORT_JSON, out_dir);
    char *text = wc_read_file_limited(path, BASELINE_MAX, why, sizeof why);
    const int parsed = text && wc_json_parse(text, doc, why, sizeof why) == WC_OK;
    free(text);
    return parsed;
}

/* Whether x and y are the same figure as report.json holds it (undefined: null, read as NaN). */
static int same_figure(double x, double y) {
    return x == y || (isnan(x) && isnan(y));
}

/* Whether the report.json in out_dir (an earlier session's, not yet replaced) shows the
 * validation m, so that the calibration.png beside it is m's diagram. A session that resumed
 * from an older checkpoint than the newest (one passed over as unusable) shows that checkpoint's
 * validation, while the picture the stopped session left is of a later one. Every figure is
 * written to the last bit (%.17g), in report.json as in the checkpoint, so equal is exact. */
static int report_shows_validation(const char *out_dir, const wc_metrics *m) {
    wc_json_doc doc;
    if (!read_report_json(out_dir, &doc)) return 0;
    const int same = same_figure(wc_json_get_num(&doc, "val_pixels"), (double)m->pixels) &&
                     same_figure(wc_json_get_num(&doc, "val_positives"), (double)m->positives) &&
                     same_figure(wc_json_get_num(&doc, "val_loss"), m->loss) &&
                     same_figure(wc_json_get_num(&doc, "val_auc_pr"), m->auc_pr) &&
                     same_figure(wc_json_get_num(&doc, "val_brier"), m->brier);
    wc_json_doc_free(&doc);
    return same;
}

/* Rank 0's part of wc_report_finish. report.md is written first, from the document report.json
 * will hold, so that report.json, written last, can say how the command ends: when report.md
 * could not be written a finished run fails (and draws no map), and report.json says so. */
static int write_reports(const wc_run_summary *s, const char *out_dir, const char *baseline_json,
                         const int64_t *rss, int R) {
    const derived d = derive(s, rss, R);
    log_summary(s, &d);
    wc_json j;
    wc_json_init(&j);
    build_json(&j, s, s->status, s->map, &d, rss, R);
    /* The builder's output is valid JSON within every limit of the reader: a failure here is a
     * bug in json.c, not a runtime condition. */
    wc_json_doc run, base = {0, NULL};
    char why[256], path[4200];
    int rc = wc_json_parse(wc_json_text(&j), &run, why, sizeof why);
    WC_ASSERT(rc == WC_OK);
    const int have_base = baseline_json && read_baseline(baseline_json, &base) == WC_OK;
    /* the reliability diagram first, so report.md links it only when it exists */
    snprintf(path, sizeof path, "%s/" WC_RUNDIR_CALIBRATION_PNG, out_dir);
    struct stat st;
    const int picture_there = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
    int have_picture;
    if (s->have_val && s->val_earlier) /* that session's, when it is the validation shown */
        have_picture = picture_there && report_shows_validation(out_dir, &s->val);
    else
        have_picture = s->have_val &&
                       wc_quicklook_reliability(path, WC_METRICS_CAL_BINS, s->val.cal_count,
                                                s->val.cal_predicted, s->val.cal_observed) == WC_OK;
    if (!have_picture && picture_there)
        unlink(path); /* an earlier run's picture: it would pass for this run's */
    snprintf(path, sizeof path, "%s/" WC_RUNDIR_REPORT_MD, out_dir);
    const int rc_md =
        write_markdown(path, s, &run, have_base ? &base : NULL, baseline_json, have_picture);
    wc_json_doc_free(&run);
    wc_json_doc_free(&base);
    if (rc_md != WC_OK) { /* a finished run fails for it, and draws no map; a stop stays one */
        wc_json_reset(&j);
        build_json(&j, s, s->status == WC_EXIT_OK ? WC_EXIT_RUNTIME : s->status, WC_REPORT_MAP_NONE,
                   &d, rss, R);
    }
    snprintf(path, sizeof path, "%s/" WC_RUNDIR_REPORT_JSON, out_dir);
    const int rc_json = write_json(path, &j);
    wc_json_free(&j);
    if (rc_json == WC_OK && rc_md == WC_OK) return WC_OK;
    /* The write's message says why. A report left from an earlier run of the directory would
     * describe that run as this one's (and a rerun, finding training finished, keeps it): it
     * goes. */
    int removed = 0;
    for (int k = 0; k < 2; k++) {
        if ((k ? rc_md : rc_json) == WC_OK) continue;
        snprintf(path, sizeof path, "%s/%s", out_dir,
                 k ? WC_RUNDIR_REPORT_MD : WC_RUNDIR_REPORT_JSON);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && unlink(path) == 0) removed++;
    }
    static const char FAILED_SAYS[] = ": " WC_RUNDIR_REPORT_JSON " says the run failed";
    wc_error("the run's report is not complete (%s%s%s, see above)%s%s",
             rc_json == WC_OK ? "" : WC_RUNDIR_REPORT_JSON,
             rc_json == WC_OK || rc_md == WC_OK ? "" : " and ",
             rc_md == WC_OK ? "" : WC_RUNDIR_REPORT_MD,
             rc_json == WC_OK && s->status == WC_EXIT_OK ? FAILED_SAYS : "",
             removed ? "; an earlier run's is removed, so that none describes another run" : "");
    return WC_ERR;
}

int wc_report_missing(const char *out_dir, long steps, long *said) {
    *said = -1;
    for (int k = 0; k < 2; k++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", out_dir,
                 k ? WC_RUNDIR_REPORT_MD : WC_RUNDIR_REPORT_JSON);
        if (access(path, F_OK) != 0) return WC_REPORT_MISSING;
    }
    /* report.md is written before report.json, so a report.json of the finished training has
     * its report.md beside it; one of an earlier session (a process killed after the final
     * checkpoint, before its report) would be kept as the finished run's */
    wc_json_doc doc;
    if (!read_report_json(out_dir, &doc)) return WC_OK; /* not ours to judge: kept, as before */
    const double done = wc_json_get_num(&doc, "steps_done");
    wc_json_doc_free(&doc);
    if (done == (double)steps) return WC_OK;
    *said = isfinite(done) ? (long)done : -1;
    return WC_REPORT_EARLIER;
}

void wc_report_agree_failure(void) {
    if (wc_dist_size() == 1) return;
    char why[WC_LAST_ERROR_MAX], ranked[WC_LAST_ERROR_MAX + 24];
    wc_last_error(why, sizeof why);
    const int first = -wc_dist_max_int(*why ? -wc_dist_rank() : -INT_MAX); /* the lowest */
    if (first == INT_MAX) return;
    wc_dist_bcast(why, sizeof why, first);
    why[sizeof why - 1] = '\0';
    if (first == 0) return;
    snprintf(ranked, sizeof ranked, "rank %d: %s", first, why);
    wc_adopt_error(ranked);
}

int wc_report_finish(const wc_run_summary *s, const char *out_dir, const char *baseline_json) {
    const int R = wc_dist_size();
    wc_report_agree_failure();
    int64_t *rss = WC_CALLOC(R, sizeof(int64_t));
    rss[wc_dist_rank()] = (int64_t)wc_peak_rss_bytes();
    wc_dist_sum_i64(rss, (size_t)R);
    /* the reading is every rank's, each its own share of the patches */
    wc_run_summary all = *s;
    int64_t read[2] = {s->patches_read, (int64_t)s->bytes_read};
    wc_dist_sum_i64(read, 2);
    all.patches_read = (long)read[0], all.bytes_read = (double)read[1];
    int64_t rc = wc_dist_rank() == 0 ? write_reports(&all, out_dir, baseline_json, rss, R) : WC_OK;
    free(rss);
    wc_dist_bcast(&rc, sizeof rc, 0);
    return (int)rc;
}
