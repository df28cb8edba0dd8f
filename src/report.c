/* report.c: the end-of-run summary, report.json and report.md; see report.h.
 * report.json is one flat object (validation metrics prefixed val_, the oracle's oracle_) so
 * that scripts, and the --baseline comparison, read it without a JSON library. */
#include "wildcpu/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/util.h"

/* The number after "key": in a flat JSON object, NAN if absent or null. */
static double json_number(const char *text, const char *key) {
    char pat[160];
    if (strlen(key) > sizeof pat - 4) return NAN;
    snprintf(pat, sizeof pat, "\"%.150s\":", key);
    const char *p = strstr(text, pat);
    if (!p) return NAN;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (strncmp(p, "null", 4) == 0) return NAN;
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

/* JSON has no NaN: an undefined figure (printf's "nan" or "-nan") becomes null. Strings are
 * copied as they are (a path may well contain "nan"). */
static char *nan_to_null(const char *s) {
    char *out = WC_ALLOC(strlen(s) * 2 + 1), *o = out;
    int in_string = 0;
    for (const char *p = s; *p;) {
        if (*p == '"') in_string = !in_string;
        if (in_string && *p == '\\' && p[1]) { /* an escaped character, e.g. \" */
            *o++ = *p++;
            *o++ = *p++;
            continue;
        }
        size_t skip = in_string                                    ? 0
                      : p[0] == '-' && strncmp(p + 1, "nan", 3) == 0 ? 4
                      : strncmp(p, "nan", 3) == 0                  ? 3
                                                                   : 0;
        if (skip) {
            memcpy(o, "null", 4);
            o += 4, p += skip;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

static const char *status_name(int status) {
    return status == WC_EXIT_OK ? "finished" : status == WC_EXIT_STOPPED ? "stopped" : "failed";
}

/* Writes path atomically (temporary name, then rename): a reader never sees half a report. */
typedef struct {
    const char *name, *key, *fmt;
    int higher_is_better; /* +1, -1, 0 (cost: lower is better, shown as a ratio) */
} row;

static void write_markdown(const char *path, const wc_run_summary *s, const char *json,
                           const char *base_json, const char *base_path) {
    wc_atomic_file af;
    if (wc_atomic_open(&af, path, "w") != WC_OK) return;
    FILE *f = af.f;
    fprintf(f, "# wildcpu run report\n\n");
    fprintf(f, "Status: **%s**. Model `%s`, %d rank%s x %d thread%s, global batch %d "
               "(micro-batch %d), %ld steps (%ld in this invocation).\n\n",
            status_name(s->status), s->arch, s->ranks, s->ranks > 1 ? "s" : "", s->threads,
            s->threads > 1 ? "s" : "", s->batch, s->micro_batch, s->steps_total, s->steps_done);
    static const row cost[] = {
        {"wall time (s)", "wall_time_s", "%.1f", 0},
        {"core-hours", "core_hours", "%.4f", 0},
        {"training samples/s", "samples_per_s", "%.2f", 1},
        {"GFLOP/s (all ranks)", "gflops_per_s", "%.1f", 1},
        {"peak RSS per rank, max (MiB)", "peak_rss_mib_max", "%.1f", 0},
        {"I/O wait, fraction of training", "io_wait_fraction", "%.4f", 0},
        {"reduction, fraction of training", "reduce_fraction", "%.4f", 0},
        {"checkpoints written", "checkpoints_written", "%.0f", 2},
        {"checkpoint time (s)", "checkpoint_time_s", "%.3f", 0},
    };
    static const row quality[] = {
        {"loss (BCE)", "val_loss", "%.4f", -1},
        {"AUC-PR (average precision)", "val_auc_pr", "%.4f", 1},
        {"ROC-AUC", "val_roc_auc", "%.4f", 1},
        {"best F1", "val_best_f1", "%.4f", 1},
        {"best-F1 threshold", "val_best_f1_threshold", "%.3f", 2},
        {"precision at 0.5", "val_precision_at_half", "%.4f", 1},
        {"recall at 0.5", "val_recall_at_half", "%.4f", 1},
        {"Brier score", "val_brier", "%.5f", -1},
        {"positive rate", "val_positive_rate", "%.4f", 2},
        {"validation pixels", "val_pixels", "%.0f", 2},
    };
    for (int part = 0; part < 2; part++) {
        const row *rows = part ? quality : cost;
        int nrows = part ? (int)(sizeof quality / sizeof quality[0])
                         : (int)(sizeof cost / sizeof cost[0]);
        fprintf(f, "## %s\n\n", part ? "Quality on validation ground (never trained on)" : "Cost");
        if (part && !s->have_val) {
            fprintf(f, "No validation ran (no validation patches).\n\n");
            continue;
        }
        fprintf(f, "| | this run |%s%s\n", part && s->have_oracle ? " oracle |" : "",
                base_json ? " baseline | change |" : "");
        fprintf(f, "|---|---:|%s%s\n", part && s->have_oracle ? "---:|" : "",
                base_json ? "---:|---:|" : "");
        for (int i = 0; i < nrows; i++) {
            char a[32], o[32] = "", b[32] = "", d[48] = "";
            double v = json_number(json, rows[i].key);
            snprintf(a, sizeof a, rows[i].fmt, v);
            if (part && s->have_oracle) {
                char okey[96];
                snprintf(okey, sizeof okey, "oracle_%s", rows[i].key + 4);
                double ov = json_number(json, okey);
                snprintf(o, sizeof o, isnan(ov) ? "-" : rows[i].fmt, ov);
            }
            if (base_json) {
                double bv = json_number(base_json, rows[i].key);
                snprintf(b, sizeof b, isnan(bv) ? "-" : rows[i].fmt, bv);
                if (isnan(bv) || isnan(v))
                    snprintf(d, sizeof d, "-");
                else if (rows[i].higher_is_better == 0 || (!part && rows[i].higher_is_better == 1))
                    snprintf(d, sizeof d, "x%.2f", bv != 0 ? v / bv : NAN);
                else
                    snprintf(d, sizeof d, "%+.4f", v - bv);
            }
            fprintf(f, "| %s | %s |", rows[i].name, isnan(v) ? "-" : a);
            if (part && s->have_oracle) fprintf(f, " %s |", o);
            if (base_json) fprintf(f, " %s | %s |", b, d);
            fprintf(f, "\n");
        }
        fprintf(f, "\n");
    }
    if (s->have_oracle && s->have_val)
        fprintf(f, "The oracle is the true burn probability the synthetic labels were drawn from: "
                   "the best any map can do on these pixels. This run's AUC-PR is %.0f%% of "
                   "the oracle's.\n\n",
                100 * s->val.auc_pr / s->oracle.auc_pr);
    if (base_json) {
        double dv = json_number(json, "val_auc_pr") - json_number(base_json, "val_auc_pr");
        double cost_ratio = json_number(json, "core_hours") / json_number(base_json, "core_hours");
        double speed = json_number(json, "wall_time_s") / json_number(base_json, "wall_time_s");
        fprintf(f, "Against the baseline (%s): AUC-PR %+.4f for x%.2f the core-hours and x%.2f "
                   "the wall time. Change is this run minus the baseline for quality, this run "
                   "over the baseline for cost.\n",
                base_path, dv, cost_ratio, speed);
    }
    wc_atomic_commit(&af);
}

void wc_report_finish(const wc_run_summary *s, const char *out_dir, const char *baseline_json) {
    const int R = wc_dist_size();
    int64_t *rss = WC_CALLOC(R, sizeof(int64_t));
    rss[wc_dist_rank()] = (int64_t)wc_peak_rss_bytes();
    wc_dist_sum_i64(rss, (size_t)R);
    if (wc_dist_rank() != 0) {
        free(rss);
        return;
    }
    int64_t rss_max = 0;
    for (int r = 0; r < R; r++) rss_max = WC_MAX(rss_max, rss[r]);
    const double ts = s->train_seconds > 0 ? s->train_seconds : NAN;
    const double samples = (double)s->steps_done * s->batch;
    const double sps = samples / ts;
    const double core_hours = s->wall_seconds * s->ranks * s->threads / 3600.0;
    const double expected =
        (double)(s->planned_bytes + s->baseline_bytes + s->gdal_cache_bytes);
    char buf[32], buf2[32];
    wc_info("run %s: %ld steps in %.1f s (%.2f samples/s, %.1f GFLOP/s over %d rank%s), "
            "%.4f core-hours; peak RSS %s per rank (max) vs %s planned + baseline + GDAL "
            "cache (x%.2f)",
            status_name(s->status), s->steps_done, s->wall_seconds, sps,
            sps * s->flops_per_sample / 1e9, s->ranks, s->ranks > 1 ? "s" : "", core_hours,
            wc_fmt_bytes(buf, sizeof buf, (double)rss_max), wc_fmt_bytes(buf2, sizeof buf2, expected),
            (double)rss_max / expected);
    if (s->train_seconds > 0)
        wc_info("time on rank 0: compute %.1f%%, reduction %.1f%%, validation %.1f%%, waiting "
                "for data %.2f%%, checkpoints %.2f%% (%ld written)",
                100 * s->compute_seconds / ts, 100 * s->reduce_seconds / ts,
                100 * s->val_seconds / ts, 100 * s->io_wait_seconds / ts,
                100 * s->ckpt_seconds / ts, s->ckpts_written);

    char path[4200], created[32];
    wc_utc_timestamp(created, sizeof created);
    snprintf(path, sizeof path, "%s/report.json", out_dir);
    /* room for the fixed fields, one figure per rank, and the model's name escaped */
    char arch[2 * sizeof s->arch + 8];
    wc_json_escape(arch, sizeof arch, s->arch);
    const size_t cap = 16384 + (size_t)R * 24;
    char *json = WC_ALLOC(cap);
    size_t n = (size_t)snprintf(json, cap,
        "{\"wildcpu\":\"%s\",\"created\":\"%s\",\"status\":\"%s\",\"model\":\"%s\","
        "\"ranks\":%d,\"threads_per_rank\":%d,\"global_batch\":%d,\"micro_batch\":%d,"
        "\"steps\":%ld,\"steps_this_run\":%ld,\"resumed_from_step\":%ld,\"steps_per_epoch\":%ld,"
        "\"epochs\":%.4g,\"wall_time_s\":%.3f,\"train_time_s\":%.3f,\"core_hours\":%.6f,"
        "\"samples_per_s\":%.4f,\"gflops_per_s\":%.3f,\"time_compute_s\":%.3f,"
        "\"time_reduce_s\":%.3f,\"time_validation_s\":%.3f,\"time_io_wait_s\":%.4f,"
        "\"io_wait_fraction\":%.6f,\"reduce_fraction\":%.6f,\"recomputed_steps\":%ld,"
        "\"peak_rss_mib_max\":%.2f,\"memory_planned_mib\":%.2f,\"memory_baseline_mib\":%.2f,"
        "\"gdal_cache_mib\":%.2f,\"peak_rss_over_plan\":%.4f,"
        "\"data_held_mib\":%.3f,\"patches_read\":%ld,\"mib_read\":%.2f,"
        "\"checkpoints_written\":%ld,\"checkpoint_time_s\":%.4f,\"checkpoint_mib\":%.3f,"
        "\"checkpoint_fraction\":%.6f,\"final_train_loss\":%.6g,\"peak_rss_mib_per_rank\":[",
        WC_VERSION, created, status_name(s->status), arch, s->ranks, s->threads, s->batch,
        s->micro_batch, s->steps_total, s->steps_done, s->start_step, s->steps_per_epoch,
        (double)s->steps_total / (double)s->steps_per_epoch, s->wall_seconds, s->train_seconds,
        core_hours, sps, sps * s->flops_per_sample / 1e9, s->compute_seconds, s->reduce_seconds,
        s->val_seconds, s->io_wait_seconds, s->io_wait_seconds / ts, s->reduce_seconds / ts,
        s->redo_steps, (double)rss_max / 1048576.0, (double)s->planned_bytes / 1048576.0,
        (double)s->baseline_bytes / 1048576.0, (double)s->gdal_cache_bytes / 1048576.0,
        (double)rss_max / expected, (double)s->data_bytes / 1048576.0,
        s->patches_read, s->bytes_read / 1048576.0, s->ckpts_written, s->ckpt_seconds,
        (double)s->ckpt_bytes / 1048576.0, s->ckpt_seconds / ts, s->last_loss);
    for (int r = 0; r < R; r++)
        n += (size_t)snprintf(json + n, cap - n, "%s%.2f", r ? "," : "",
                              (double)rss[r] / 1048576.0);
    n += (size_t)snprintf(json + n, cap - n, "]");
    if (s->have_val) {
        n += (size_t)snprintf(json + n, cap - n, ",");
        n += (size_t)wc_metrics_json(json + n, cap - n, &s->val, "val_");
    }
    if (s->have_oracle) {
        n += (size_t)snprintf(json + n, cap - n, ",");
        n += (size_t)wc_metrics_json(json + n, cap - n, &s->oracle, "oracle_");
    }
    snprintf(json + n, cap - n, "}\n");
    char *fixed = nan_to_null(json);
    free(json);
    json = fixed;
    wc_atomic_file af;
    if (wc_atomic_open(&af, path, "w") == WC_OK) {
        fputs(json, af.f);
        wc_atomic_commit(&af);
    }
    char *base = NULL;
    if (baseline_json) {
        base = wc_read_file(baseline_json);
        if (!base)
            wc_warn("--baseline %s cannot be read (%s): no comparison in the report",
                    baseline_json, strerror(errno));
    }
    snprintf(path, sizeof path, "%s/report.md", out_dir);
    write_markdown(path, s, json, base, baseline_json);
    free(base);
    free(json);
    free(rss);
}
