/* train_ckpt.c: the training run's checkpoints (train_ctx.h): when they are due, what a
 * snapshot of the run holds, the synchronous and background writes, best.wcp, the stop's
 * checkpoint, and resuming from the newest usable one. The file format is snapshot.c's; the
 * writer thread is ckptbg.c's. */
#include "train_ctx.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "wildcpu/agree.h"
#include "wildcpu/bandmap.h"
#include "wildcpu/ckpt.h"
#include "wildcpu/cpuinfo.h"
#include "wildcpu/dist.h"
#include "wildcpu/json.h"
#include "wildcpu/metrics.h"
#include "wildcpu/rundir.h"
#include "wildcpu/snapshot.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

/* The default checkpoint interval's bounds (neither --ckpt-every nor --ckpt-minutes): the first
 * checkpoint after a minute, then 200 times the last background write's time, within these. */
#define WC_CKPT_DEFAULT_MIN_S 60.0
#define WC_CKPT_DEFAULT_MAX_S 600.0
/* Free inodes a run needs at start for its own files (split.tif, metrics.jsonl, the reports and
 * their temporary files) and the map's (the map, its working file, picture, style, item);
 * inodes_needed adds its checkpoints'. */
#define WC_RUN_FILE_INODES 20

/* Free inodes the run needs at start: its files', and its checkpoints': the --keep it keeps,
 * the one being written and best.wcp, less the checkpoints it holds already (a resumed run's:
 * their inodes are taken, and each new one replaces one), but never less than two (a checkpoint
 * and best.wcp may both be in their temporary files at once). */
static long inodes_needed(const train_ctx *t) {
    wc_ckpt_entry *entries = NULL;
    const int listed = wc_ckpt_list(t->ckpt_dir, 0, &entries);
    if (listed > 0) wc_ckpt_list_free(entries, listed);
    char best[4400];
    snprintf(best, sizeof best, "%s/%s", t->ckpt_dir, WC_CKPT_BEST);
    const long have = WC_MAX(listed, 0) + (access(best, F_OK) == 0);
    return WC_RUN_FILE_INODES + WC_MAX(2, (long)t->cfg->keep + 2 - have);
}

/* Appends the vector pairs' input channels, "2/3,8/9" (none: ""). */
static void append_pairs(char *kv, size_t size, const wc_augment *a) {
    size_t n = strlen(kv);
    for (int k = 0; k < a->npairs && n < size; k++)
        n += (size_t)snprintf(kv + n, size - n, "%s%d/%d", k ? "," : "", a->pair[k][0],
                              a->pair[k][1]);
}

/* A setting as the config record holds it: 10 significant digits where they give the value
 * back exactly (every value a user types, and what earlier checkpoints recorded), else the
 * fewest up to 17 that do, so that two settings that differ never read alike (--lr
 * 5.0000000001e-4 is not 5e-4). */
typedef struct {
    char s[32];
} setting_text;
static setting_text exact(double v) {
    setting_text t;
    for (int digits = 10; digits <= 17; digits++) {
        snprintf(t.s, sizeof t.s, "%.*g", digits, v);
        if (strtod(t.s, NULL) == v) break;
    }
    return t;
}

/* The settings that must be equal for a resume to be exact. */
void wc_train_ckpt_config_kv(train_ctx *t) {
    const wc_train_config *c = t->cfg;
    const uint64_t h = wc_fnv1a64(t->net->spec, strlen(t->net->spec));
    /* a --model path is a value: "a;b=1/s.spec" cut at ';' added a setting b, and a resume
     * typing the same file otherwise was refused for it */
    char *model = wc_kv_escape(t->net->arch);
    snprintf(t->config_kv, sizeof t->config_kv,
             "model=%s;spec_hash=%016llx;batch=%d;micro_batch=%d;seed=%llu;patch=%d;"
             "val_fraction=%s;val_block_px=%d;min_valid=%s;optimizer=%s;lr=%s;"
             "weight_decay=%s;warmup=%ld;total_steps=%ld;pos_weight=%s;reduce=%s;"
             "jitter=%s",
             model, (unsigned long long)h, c->batch, c->micro_batch, (unsigned long long)c->seed,
             c->data.patch, exact(c->data.val_fraction).s, c->data.val_block_px,
             exact(c->data.min_valid).s, t->opt->cfg.kind == WC_OPTIM_ADAMW ? "adamw" : "sgd",
             exact(t->opt->cfg.lr).s, exact(t->opt->cfg.weight_decay).s, t->opt->cfg.warmup_steps,
             t->opt->cfg.total_steps, exact(c->pos_weight).s, c->fast_reduce ? "fast" : "exact",
             c->no_jitter ? "off" : "on");
    free(model);
    /* --lr-end, only when not 0.05: every version before it ended the cosine there, so their
     * checkpoints (without the key) resume with --lr-end 0.05 and no other */
    if (t->opt->cfg.min_lr_ratio != 0.05) {
        size_t n = strlen(t->config_kv);
        snprintf(t->config_kv + n, sizeof t->config_kv - n, ";lr_end=%s",
                 exact(t->opt->cfg.min_lr_ratio).s);
    }
    /* as a checkpoint's text reads back (snapshot.c), which a resume compares it with: a
     * --model path may hold any byte */
    wc_text_sanitize(t->config_kv);
    /* The orientations and the input channels of the vector pairs ("augment=8:2/3,8/9"), only
     * when on: a checkpoint of a run without augmentation (or of a version before it) has no
     * such key and matches a run without --augment. */
    const wc_augment *a = &t->ds->aug;
    if (a->norient > 1) {
        size_t n = strlen(t->config_kv);
        snprintf(t->config_kv + n, sizeof t->config_kv - n, ";augment=%d:", a->norient);
        append_pairs(t->config_kv, sizeof t->config_kv, a);
    }
    /* --rotate's largest turn and the pairs it turns, only when on (the same rule): a resume
     * with other --vector-bands would turn other bands. The turn is written as the other
     * settings are (exact): with 10 digits, --rotate 10.0000000001 resumed a run of --rotate 10
     * and drew other angles from then on. */
    if (a->turn_deg > 0) {
        size_t n = strlen(t->config_kv);
        snprintf(t->config_kv + n, sizeof t->config_kv - n, ";rotate=%s:", exact(a->turn_deg).s);
        append_pairs(t->config_kv, sizeof t->config_kv, a);
    }
}

/* Records the background writes that have ended (rank 0; with wait, the running one too). */
void wc_train_ckpt_take_background(train_ctx *t, int wait) {
    wc_ckptbg_result r;
    while (t->bg && wc_ckptbg_poll(t->bg, wait, &r)) {
        if (r.rc != WC_OK) {
            wc_error("checkpoint at step %ld (%s) is not complete (see above); it replaced none "
                     "of the previous checkpoints; continuing without it",
                     r.step, r.why);
            wc_forget_error(); /* recovered from: not a later failure's cause */
            continue;
        }
        t->sum.ckpt_bg_seconds += r.seconds;
        /* The default interval keeps checkpoints under 0.5% of the training time: a background
         * write costs the training at most its own time (its share of the cores), so the next
         * one comes 200 write times later, but at least 1 and at most 10 minutes apart. */
        if (t->ckpt.adaptive)
            t->ckpt.interval =
                WC_MIN(WC_MAX(200 * r.seconds, WC_CKPT_DEFAULT_MIN_S), WC_CKPT_DEFAULT_MAX_S);
        t->sum.ckpts_written++;
        t->sum.ckpt_bytes = r.bytes;
        wc_trainlog_checkpoint(t->log, t->ckpt_dir, NULL, r.step, r.bytes, r.seconds, r.stall,
                               r.why);
    }
}

/* Writes the snapshot of the state after steps_done steps, as ckpt-<step>.wcp or, with name, as
 * that file (best.wcp); with background (and a writer), hands it to the writer thread and
 * returns once it is copied. Rank 0 only. A synchronous write waits for a background one
 * first, so writes never overlap and the log keeps their order. */
static int save_checkpoint(train_ctx *t, long steps_done, const char *why, const char *name,
                           int background) {
    if (t->rank != 0) return WC_OK;
    background = background && t->bg && !name;
    if (!background) wc_train_ckpt_take_background(t, 1);
    char ts[32];
    wc_utc_timestamp(ts, sizeof ts);
    /* the units of the inputs (predict compares them): sized with them, however many */
    char *units = wc_bandmap_units_record(&t->ds->files.src, t->ds->feat_bands, t->ds->nfeat);
    /* the channels a map feeds as 0 (wc_feature_inv_std): up to 11 characters each */
    char *constant = WC_CALLOC((size_t)t->ds->nfeat * 12 + 32, 1);
    for (int c = 0, n = 0; c < t->ds->nfeat; c++)
        if (t->ds->constant[c])
            n += sprintf(constant + n, "%s%d", n ? ":" : ";" WC_META_CONSTANT "=", c + 1);
    const size_t meta_size = 1024 + strlen(units) + strlen(t->sum.kernels) + strlen(constant);
    char *meta = WC_ALLOC(meta_size);
    const long spe = t->sched.steps_per_epoch, epoch = steps_done / spe;
    double log_sum;
    long log_steps;
    wc_trainlog_pending_loss(t->log, &log_sum, &log_steps);
    /* A best.wcp of a later step than the checkpoint resumed from, adopted as the best
     * (check_best), is in the future of the checkpoints the resumed run writes before that step:
     * they record the best their own step knows, the resumed checkpoint's, as the run that
     * wrote best.wcp did. A best after the checkpoint's step reads as impossible (snapshot.c):
     * such a checkpoint was refused by every reader, and a stop at it lost the steps since. */
    long best_step = t->best.step;
    double best_auc = t->best.auc_pr;
    if (best_step > steps_done) best_step = t->best.resumed_step, best_auc = t->best.resumed_auc_pr;
    char *arch = wc_kv_escape(t->net->arch); /* a --model path: a value, as in config= */
    snprintf(meta, meta_size,
             "wildcpu=%s;step=%ld;epoch=%ld;epochs_total=%ld;ranks=%d;threads=%d;time=%s;"
             "arch=%s;nparams=%zu;loss=%.17g;rng=stateless (seed, stream, epoch);"
             "log_loss_sum=%a;log_loss_steps=%ld;" WC_META_BAND_VALUES "=unpacked;" WC_META_KERNELS
             "=%s%s%s%s",
             WC_VERSION, steps_done, epoch, (t->total_steps + spe - 1) / spe, t->nranks,
             t->cfg->threads, ts, arch, t->net->nparams, t->sum.last_loss, log_sum, log_steps,
             t->sum.kernels, *units ? ";" WC_META_UNITS "=" : "", units, constant);
    wc_text_sanitize(meta); /* written as it reads back (snapshot.c) */
    free(units), free(constant), free(arch);
    const char **names = WC_ALLOC(sizeof(char *) * t->ds->nfeat);
    for (int c = 0; c < t->ds->nfeat; c++)
        names[c] = t->ds->files.src.bands[t->ds->feat_bands[c] - 1].name;
    /* the last validation, as a JSON object ("" when there was none) */
    wc_json metrics;
    wc_json_init(&metrics);
    if (t->sum.have_val) {
        wc_json_object(&metrics);
        wc_metrics_json_members(&metrics, &t->sum.val, "val_");
        if (t->sum.have_oracle) wc_metrics_json_members(&metrics, &t->sum.oracle, "oracle_");
        wc_json_end(&metrics);
    }
    const wc_snapshot snap = {.meta = meta,
                              .config = t->config_kv,
                              .fingerprint = t->ds->fingerprint,
                              .spec = t->net->spec,
                              .metrics = t->sum.have_val ? wc_json_text(&metrics) : "",
                              .nfeat = t->ds->nfeat,
                              .feat_names = names,
                              .mean = t->ds->mean,
                              .std = t->ds->std,
                              .step = steps_done,
                              .epoch = epoch,
                              .epoch_pos = (steps_done % spe) * t->cfg->batch,
                              .optim_step = t->opt->step,
                              .ranks = t->nranks,
                              .calibrated = t->red->calibrated,
                              .val_pending = t->val_pending,
                              .best_auc_pr = best_auc,
                              .best_step = best_step,
                              .ntensors = t->net->ntensors,
                              .exponent = t->red->exponent,
                              .nparams = t->net->nparams,
                              .params = t->net->params,
                              .optim_m = t->opt->m,
                              .optim_v = t->opt->v};
    double secs = 0;
    size_t bytes = 0;
    int rc = WC_OK;
    if (background)
        t->sum.ckpt_seconds += wc_ckptbg_start(t->bg, t->ckpt_dir, &snap, t->cfg->keep, why);
    else
        rc = wc_snapshot_write(t->ckpt_dir, name, &snap, t->cfg->keep, &secs, &bytes);
    free(names), free(meta);
    wc_json_free(&metrics);
    if (background) return WC_OK;
    if (rc != WC_OK) {
        wc_error("checkpoint at step %ld (%s) is not complete (see above); it replaced none "
                 "of the previous checkpoints",
                 steps_done, why);
        return WC_ERR;
    }
    t->sum.ckpt_seconds += secs;
    t->sum.ckpts_written++;
    t->sum.ckpt_bytes = bytes;
    wc_trainlog_checkpoint(t->log, t->ckpt_dir, name, steps_done, bytes, secs, -1, why);
    return WC_OK;
}

/* Checkpoint rank 0 wrote; all ranks learn whether it worked. */
int wc_train_ckpt_collective(train_ctx *t, long steps_done, const char *why) {
    int failed = wc_dist_any(save_checkpoint(t, steps_done, why, NULL, 0) != WC_OK);
    t->ckpt.last = wc_now();
    return failed ? WC_ERR : WC_OK;
}

/* An interval checkpoint: rank 0 snapshots the state and its writer thread writes it while
 * training goes on (no collective: how the write went is rank 0's to log). Without a writer,
 * the collective synchronous write. */
void wc_train_ckpt_interval(train_ctx *t, long steps_done) {
    if (wc_dist_any(t->rank == 0 && t->bg == NULL)) {
        if (wc_train_ckpt_collective(t, steps_done, "interval") != WC_OK) {
            wc_warn("continuing without this checkpoint");
            wc_forget_error(); /* recovered from: not a later failure's cause */
        }
        return;
    }
    save_checkpoint(t, steps_done, "interval", NULL, 1);
    t->ckpt.last = wc_now();
}

/* Model selection: after a validation whose AUC-PR beats every earlier one, the state is kept
 * as best.wcp, which maps and evaluations of the run directory use. The comparison is of exact
 * (rank-independent) metrics, so every rank decides alike. A failed write is a warning: the
 * previous best.wcp stays, and so does the best it records. */
void wc_train_ckpt_keep_if_best(train_ctx *t, long step) {
    const double auc = t->sum.val.auc_pr;
    if (!t->sum.have_val || !wc_metrics_can_rank(&t->sum.val) || !isfinite(auc) ||
        !(auc > t->best.auc_pr))
        return;
    const double prev_auc = t->best.auc_pr;
    const long prev_step = t->best.step;
    t->best.auc_pr = auc, t->best.step = step + 1;
    int failed = wc_dist_any(
        save_checkpoint(t, step + 1, "best validation AUC-PR", WC_CKPT_BEST, 0) != WC_OK);
    if (failed) {
        if (t->rank == 0 && prev_step >= 0)
            wc_warn(WC_CKPT_BEST " of step %ld (AUC-PR %.4f) was not replaced", prev_step,
                    prev_auc);
        else if (t->rank == 0)
            wc_warn("no " WC_CKPT_BEST " yet: the next better validation tries again");
        t->best.auc_pr = prev_auc, t->best.step = prev_step;
        if (auc > t->best.unsaved_auc_pr)
            t->best.unsaved_auc_pr = auc, t->best.unsaved_step = step + 1;
        wc_forget_error(); /* recovered from: not a later failure's cause */
    } else
        t->sum.best_lost = 0;
}

/* The normalization a resumed run goes on with is the checkpoint's: its weights were trained
 * on inputs scaled by it. Recomputed from the same data it is the same bits, unless the
 * computation itself changed between versions (a constant band's scale did in 2026-12): then
 * the checkpoint's is kept, so that the run goes on as it was, and the difference is said.
 * Collective; `s` is rank 0's snapshot (NULL elsewhere). */
static void adopt_normalization(train_ctx *t, const wc_snapshot *s, const char *path) {
    const int n = t->ds->nfeat;
    double *mean = t->ds->mean, *std = t->ds->std;
    int32_t first_differing = -1;
    if (s) {
        for (int c = 0; c < n && first_differing < 0; c++)
            if (memcmp(&s->mean[c], &mean[c], sizeof *mean) ||
                memcmp(&s->std[c], &std[c], sizeof *std))
                first_differing = c;
        if (first_differing >= 0) {
            const int c = first_differing;
            wc_warn("%s was written with another normalization of feature %d (%s): mean %.17g "
                    "and std %.17g, where this run computes %.17g and %.17g from the data as it "
                    "is now: the data's values changed since (the same grid and bands, other "
                    "pixels: is --tiles the raster that run trained on?), or this version "
                    "computes it otherwise; the resumed run keeps the checkpoint's for every "
                    "feature",
                    path, c + 1, t->ds->files.src.bands[t->ds->feat_bands[c] - 1].name, s->mean[c],
                    s->std[c], mean[c], std[c]);
            memcpy(mean, s->mean, sizeof *mean * (size_t)n);
            memcpy(std, s->std, sizeof *std * (size_t)n);
            /* and the channels it fed as 0 (none for a checkpoint before the list: it fed
             * every value) */
            char why[256];
            if (wc_snapshot_constant(s, t->ds->constant, why, sizeof why) != WC_OK)
                wc_warn("%s: %s: every channel taken as varying", path, why);
        }
    }
    wc_dist_bcast(&first_differing, sizeof first_differing, 0);
    if (first_differing < 0) return;
    wc_dist_bcast(mean, sizeof *mean * (size_t)n, 0);
    wc_dist_bcast(std, sizeof *std * (size_t)n, 0);
    wc_dist_bcast(t->ds->constant, (size_t)n, 0);
}

/* The last validation the checkpoint records (its `metrics`), as this session's until it runs
 * its own: its report and checkpoints then carry it instead of saying none ran. Collective;
 * `s` is rank 0's snapshot (NULL elsewhere). */
static void adopt_last_validation(train_ctx *t, const wc_snapshot *s) {
    int have[2] = {0, 0};
    if (s && s->metrics && *s->metrics) {
        /* files of earlier versions hold the members without the braces */
        const int braced = s->metrics[0] == '{';
        char *text = WC_ALLOC(strlen(s->metrics) + 3);
        sprintf(text, "%s%s%s", braced ? "" : "{", s->metrics, braced ? "" : "}");
        wc_json_doc doc = {0, NULL};
        char why[128];
        if (wc_json_parse(text, &doc, why, sizeof why) == WC_OK) {
            have[0] = wc_metrics_read_members(&doc, "val_", &t->sum.val) == WC_OK;
            have[1] = have[0] && wc_metrics_read_members(&doc, "oracle_", &t->sum.oracle) == WC_OK;
        }
        wc_json_doc_free(&doc);
        free(text);
    }
    wc_dist_bcast(have, sizeof have, 0);
    if (!have[0]) return;
    wc_dist_bcast(&t->sum.val, sizeof t->sum.val, 0);
    if (have[1]) wc_dist_bcast(&t->sum.oracle, sizeof t->sum.oracle, 0);
    t->sum.have_val = 1, t->sum.have_oracle = have[1], t->sum.val_earlier = 1;
}

/* Collective, before training: room for a checkpoint on the file system that keeps them. A disk
 * too full for one would let the run compute to its end and lose it all there (every interval
 * checkpoint, best.wcp and the stop's fail with a warning, the final one with an error), so it
 * is refused now (status 1), naming the room and the need. Later failures stay warnings: space
 * may come back. */
int wc_train_ckpt_check_room(const train_ctx *t) {
    int refused = 0;
    /* a finished training writes no checkpoint (a rerun draws the map, or does nothing) */
    if (t->rank == 0 && t->start_step < t->total_steps) {
        /* the payload (parameters and optimizer moments; zlib gains little on floats) and its
         * metadata (a few KiB) */
        const uint64_t need =
            (uint64_t)t->net->nparams * sizeof(float) * (t->opt->v ? 3 : 2) + ((uint64_t)64 << 10);
        const char *const dirs[] = {t->ckpt_dir, t->cfg->out_dir};
        struct statvfs v;
        for (int i = 0; i < 2; i++) {
            if (statvfs(dirs[i], &v) != 0) continue; /* not made yet: its parent's */
            const uint64_t room = (uint64_t)v.f_bavail * v.f_frsize;
            if (room < need) {
                char a[32], b[32];
                wc_error("%s has %s free on its file system, and a checkpoint of this run takes "
                         "up to %s: the run would compute and lose it all at its end; free some "
                         "space, or give --out another directory",
                         dirs[i], wc_fmt_bytes(a, sizeof a, (double)room),
                         wc_fmt_bytes(b, sizeof b, (double)need));
                refused = 1;
            }
            /* files, not bytes: a checkpoint and its temporary file, best.wcp, the run's own
             * files and the map's (f_files 0: a file system that counts none) */
            const long inodes = inodes_needed(t);
            if (v.f_files > 0 && v.f_favail < (fsfilcnt_t)inodes) {
                wc_error("%s has %llu inodes free on its file system (files it may still create), "
                         "and this run needs %ld for its checkpoints (--keep %d, the one being "
                         "written, best.wcp), reports and map: checkpoints would fail and the run "
                         "be lost; remove files there, or give --out another directory",
                         dirs[i], (unsigned long long)v.f_favail, inodes, t->cfg->keep);
                refused = 1;
            }
            break;
        }
        /* a file-size limit (ulimit -f, a batch system's) below one checkpoint fails every one */
        struct rlimit fsize;
        if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
            (uint64_t)fsize.rlim_cur < need) {
            char a[32], b[32];
            wc_error("the file-size limit (ulimit -f) is %s, and a checkpoint of this run takes "
                     "up to %s: every checkpoint would fail and the run be lost; raise the limit",
                     wc_fmt_bytes(a, sizeof a, (double)fsize.rlim_cur),
                     wc_fmt_bytes(b, sizeof b, (double)need));
            refused = 1;
        }
    }
    return wc_dist_any(refused) ? WC_ERR : WC_OK;
}

/* Rank 0: the newest checkpoint of t's run a resume can use (wc_snapshot_find_resume, matched
 * against this run's data, settings, network and features) into *snap, its file into *path
 * (caller frees), the files passed over on the way kept aside (wc_ckpt_keep_passed_over).
 * Returns 1 when found, 0 when there is none (a fresh start), -1 after a message. */
static int64_t find_resume(const train_ctx *t, wc_snapshot *snap, char **path) {
    const char **names = WC_ALLOC(sizeof(char *) * (size_t)t->ds->nfeat);
    for (int c = 0; c < t->ds->nfeat; c++)
        names[c] = t->ds->files.src.bands[t->ds->feat_bands[c] - 1].name;
    const wc_resume_match match = {.fingerprint = t->ds->fingerprint,
                                   .config = t->config_kv,
                                   .nparams = t->net->nparams,
                                   .ntensors = t->net->ntensors,
                                   .need_optim_v = t->opt->v != NULL,
                                   .total_steps = t->total_steps,
                                   .feat_names = names,
                                   .nfeat = t->ds->nfeat};
    int64_t found = wc_snapshot_find_resume(t->ckpt_dir, &match, snap, path);
    if (found > 0 &&
        wc_ckpt_keep_passed_over(t->ckpt_dir, *path, snap->step, t->total_steps) != WC_OK)
        found = -1;
    free(names);
    return found;
}

/* Rank 0: whether best.wcp still holds the best the resumed run knows (t->best, from the
 * checkpoint `path`). Removed since (by hand), or damaged: the best is tracked afresh, so the
 * next validation writes one and the map and the report use what is on disk (a damaged one
 * kept as the best would never be replaced by a validation below its AUC-PR). A best.wcp
 * better than the best this checkpoint knows (written after it: the interval checkpoints since
 * failed on a full disk, or the process was killed before the next) is the best so far: the
 * resumed run, exact, reaches it again, and replacing it with a worse validation on the way
 * there would lose it if the run stopped before. Sets best_known (step, AUC-PR) to such a
 * best.wcp's; returns 1 when the checkpoint names a best and best.wcp is missing or not
 * usable, -1 (after an error) when best.wcp is an older best than the checkpoint knows, else 0.
 * finished: the checkpoint is the training's last (no validation follows). */
static int check_best(const train_ctx *t, const char *path, int finished, double best_known[2]) {
    char best[4400], why[512];
    snprintf(best, sizeof best, "%s/%s", t->ckpt_dir, WC_CKPT_BEST);
    wc_ckpt ck;
    wc_snapshot b = {0};
    const int present = access(best, F_OK) == 0;
    int best_missing = !present || wc_ckpt_read(best, &ck, why, sizeof why) != WC_OK;
    /* read whole, but not a snapshot a map could use (predict would pass it over) */
    int stale = 0;
    if (!best_missing) {
        best_missing = wc_snapshot_check(&ck, &b, why, sizeof why) != WC_OK;
        if (!best_missing && b.best_step >= 0 && b.best_auc_pr > t->best.auc_pr) {
            best_known[0] = (double)b.best_step, best_known[1] = b.best_auc_pr;
            wc_info("%s (step %lld, AUC-PR %.4f) is a better validation than %s knows of: "
                    "kept as the best",
                    best, (long long)b.best_step, b.best_auc_pr, path);
        } else if (!best_missing &&
                   wc_best_is_older(b.step, b.best_auc_pr, t->best.step, t->best.auc_pr)) {
            /* Not the best the checkpoint knows, and no better: a run only ever replaces
             * best.wcp by a better one, so this is an older copy put back from outside (a
             * backup, a sync taken mid-run). The map would be drawn from it under the report's
             * claim of the other. */
            wc_error("%s holds step %lld (AUC-PR %.4f), but %s knows the best validation after "
                     "step %ld (AUC-PR %.4f): an older copy of it, put back from outside this "
                     "run; the map of this run would be drawn from it. Move it out of %s (the "
                     "best is then tracked afresh), or use --fresh",
                     best, (long long)b.step, b.best_auc_pr, path, t->best.step, t->best.auc_pr,
                     t->ckpt_dir);
            stale = 1;
        }
        wc_ckpt_free(&ck);
        wc_snapshot_free(&b);
    }
    if (stale) return -1;
    if (best_missing && t->best.step >= 0)
        wc_warn("%s (step %ld) is %s%s: %s", best, t->best.step,
                present ? "not usable: " : "missing", present ? why : "",
                finished ? "the training is finished, so no validation writes it again: the map, "
                           "and `predict` or `evaluate` given this directory, use the newest "
                           "checkpoint (--fresh trains anew)"
                         : "the best validation is tracked afresh from here, and the next "
                           "validation writes it");
    return best_missing && t->best.step >= 0;
}

/* The kernels of this session's steps, on rank 0: "/ranks:mixed" added when some rank
 * computes with others (the ranks agree on it, and the one that differs has said so). */
static void kernels_of_session(char *buf, size_t size, int mixed) {
    wc_cpuinfo_kernels(buf, size);
    if (mixed) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "/ranks:mixed");
    }
}

/* The run's kernels (t->sum.kernels): those of the checkpoint resumed from (s; NULL for a
 * fresh start, and a checkpoint before 2026-12-05 records none), then this session's where
 * they differ from its last. Kernels of two CPU types round differently, so a resume on other
 * kernels is not bitwise the run that never stopped, which a resume otherwise is: said here,
 * and kept in every later checkpoint and in the report. Rank 0. */
static void take_kernels(train_ctx *t, const wc_snapshot *s, const char *path) {
    char now[WC_KERNELS_MAX + 16], then[sizeof t->sum.kernels] = "";
    kernels_of_session(now, sizeof now, t->kernels_mixed);
    if (s) wc_kv_get(s->meta, WC_META_KERNELS, then, sizeof then);
    const char *last = strrchr(then, ',') ? strrchr(then, ',') + 1 : then;
    if (!*then || strcmp(last, now) == 0) {
        snprintf(t->sum.kernels, sizeof t->sum.kernels, "%s", *then ? then : now);
        return;
    }
    char core[48] = "";
    sscanf(last, "openblas:%47[^/]", core);
    wc_warn("%s was computed with the kernels %s, this run with %s: kernels of two CPU types "
            "may round differently (OpenBLAS's Haswell and SkylakeX kernels do), so the run goes "
            "on from it, but maybe not bitwise as the run that never stopped would (report.json "
            "lists the kernels of each session); for an exact resume, run it with "
            "OPENBLAS_CORETYPE=%s%s on every rank",
            path, last, now, core,
            strstr(last, "/products:openblas") ? " and WILDCPU_GEMM=openblas" : "");
    const size_t n = strlen(then);
    if (n + 1 + strlen(now) < sizeof t->sum.kernels) {
        memcpy(t->sum.kernels, then, n);
        snprintf(t->sum.kernels + n, sizeof t->sum.kernels - n, ",%s", now);
    } else { /* a run resumed on other kernels over and over: the first and this session's */
        char first[WC_KERNELS_MAX + 16];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(then, ","), then);
        snprintf(t->sum.kernels, sizeof t->sum.kernels, "%s,...,%s", first, now);
    }
}

/* Resumes from the newest usable checkpoint, if any. Collective. Returns WC_OK (t->start_step
 * set, 0 for a fresh start) or WC_ERR. */
int wc_train_ckpt_resume(train_ctx *t) {
    t->start_step = 0;
    t->kernels_mixed = wc_agree_kernels("this training");
    if (t->rank == 0) wc_ckpt_remove_stale(t->ckpt_dir);
    if (t->rank == 0) take_kernels(t, NULL, NULL); /* until a checkpoint says otherwise */
    if (t->cfg->fresh) return WC_OK;
    char *path = NULL;
    wc_snapshot snap = {0};
    const wc_snapshot *s = &snap;
    int64_t found = t->rank == 0 ? find_resume(t, &snap, &path) : 0;
    wc_dist_bcast(&found, sizeof found, 0);
    if (found <= 0) {
        wc_snapshot_free(&snap);
        free(path);
        return found < 0 ? WC_ERR : WC_OK;
    }
    /* rank 0 holds the checked snapshot; everyone receives the state */
    const int nt = t->net->ntensors;
    const size_t pbytes = t->net->nparams * sizeof(float);
    int64_t counters[6] = {0, 0, 0, 0, 0, -1};
    double best_auc = -1, last_loss = 0;
    char prev_ranks[32] = "";
    if (t->rank == 0) {
        counters[0] = s->step, counters[1] = s->optim_step, counters[2] = s->calibrated;
        counters[3] = s->epoch, counters[4] = s->val_pending, counters[5] = s->best_step;
        best_auc = s->best_auc_pr;
        memcpy(t->net->params, s->params, pbytes);
        memcpy(t->opt->m, s->optim_m, pbytes);
        if (t->opt->v) memcpy(t->opt->v, s->optim_v, pbytes);
        memcpy(t->red->exponent, s->exponent, sizeof(int32_t) * nt);
        wc_kv_get(s->meta, "ranks", prev_ranks, sizeof prev_ranks);
        take_kernels(t, s, path);
        /* the progress line's pending loss, checked by the snapshot's decoding (a checkpoint
         * of an earlier version has none: 0) */
        t->resumed_loss_sum = s->log_loss_sum;
        t->resumed_loss_steps = s->log_loss_steps;
        /* the last step's loss, which the next checkpoint and the report record: a resume
         * that takes no step (a pending final validation) wrote loss=0 */
        char loss[64];
        wc_kv_get(s->meta, "loss", loss, sizeof loss);
        last_loss = *loss ? strtod(loss, NULL) : 0;
    }
    wc_dist_bcast(counters, sizeof counters, 0);
    wc_dist_bcast(&best_auc, sizeof best_auc, 0);
    wc_dist_bcast(&last_loss, sizeof last_loss, 0);
    t->sum.last_loss = last_loss;
    adopt_normalization(t, t->rank == 0 ? s : NULL, path);
    adopt_last_validation(t, t->rank == 0 ? s : NULL);
    wc_dist_bcast(t->net->params, pbytes, 0);
    wc_dist_bcast(t->opt->m, pbytes, 0);
    if (t->opt->v) wc_dist_bcast(t->opt->v, pbytes, 0);
    wc_dist_bcast(t->red->exponent, sizeof(int32_t) * nt, 0);
    t->start_step = counters[0];
    t->opt->step = counters[1];
    t->red->calibrated = (int)counters[2];
    t->val_pending = (int)counters[4];
    t->best.step = (long)counters[5], t->best.auc_pr = best_auc;
    t->best.resumed_step = t->best.step, t->best.resumed_auc_pr = t->best.auc_pr;
    /* best.wcp may hold another best than the checkpoint knows, or none (check_best) */
    double best_known[2] = {(double)t->best.step, t->best.auc_pr};
    const int best_state =
        t->rank == 0
            ? check_best(t, path, t->start_step >= t->total_steps && !t->val_pending, best_known)
            : 0;
    if (wc_dist_any(best_state < 0)) {
        wc_snapshot_free(&snap);
        free(path);
        return WC_ERR;
    }
    const int best_missing = best_state > 0;
    wc_dist_bcast(best_known, sizeof best_known, 0);
    t->best.step = (long)best_known[0], t->best.auc_pr = best_known[1];
    if (wc_dist_any(best_missing)) {
        /* the report says so until a validation writes a new one (it named best.wcp) */
        t->sum.best_lost = 1, t->sum.best_lost_step = t->best.step;
        t->best.step = -1, t->best.auc_pr = -1;
    }
    char epoch[48] = ""; /* the epoch the next step is in: none once every step is done */
    if (t->start_step < t->total_steps)
        snprintf(epoch, sizeof epoch, " (epoch %lld)", (long long)counters[3] + 1);
    wc_info("resuming from %s: %ld of %ld steps done%s%s%s%s", path, t->start_step, t->total_steps,
            epoch, *prev_ranks ? ", written by " : "", prev_ranks,
            *prev_ranks ? (strcmp(prev_ranks, "1") ? " ranks" : " rank") : "");
    wc_snapshot_free(&snap);
    free(path);
    return WC_OK;
}

/* What a rerun does after a stop whose checkpoint failed (a full disk): it resumes from the
 * newest checkpoint on disk, which is not this step's, or starts over when there is none; "rerun
 * the same command to resume" alone read as if the stop's step were saved. Rank 0. */
static void describe_lost_stop(const train_ctx *t, long steps_done, char *buf, size_t len) {
    const long newest = wc_rundir_newest_step(t->cfg);
    if (newest == -2)
        snprintf(buf, len,
                 "%s cannot be read: a rerun resumes from its newest usable checkpoint, "
                 "if any, else starts over",
                 t->ckpt_dir);
    else if (newest < 0)
        snprintf(buf, len, "no checkpoint of this run is on disk: a rerun starts over from step 0");
    else if (newest >= steps_done)
        snprintf(buf, len, "%s to resume from the checkpoint of step %ld",
                 wc_rundir_rerun(t->cfg, "training"), newest);
    else {
        char again[64];
        if (newest + 1 == steps_done)
            snprintf(again, sizeof again, "step %ld is", steps_done);
        else
            snprintf(again, sizeof again, "steps %ld-%ld are", newest + 1, steps_done);
        snprintf(buf, len,
                 "the newest checkpoint on disk is of step %ld: %s to resume from it (%s trained "
                 "again)",
                 newest, wc_rundir_rerun(t->cfg, "training"), again);
    }
}

/* The stop: a checkpoint, then status 75 (or 1 when the checkpoint failed). */
int wc_train_ckpt_stop(train_ctx *t, long steps_done) {
    wc_dist_agree_stop_origin(); /* rank 0 names the rank the signal reached, and DIR/STOPPED too */
    int ok = wc_train_ckpt_collective(t, steps_done, "stop signal") == WC_OK;
    if (ok) wc_rundir_mark_stopped(t->cfg, "training");
    wc_trainlog_break_line(t->log);
    char next[4600]; /* the checkpoints directory, when it cannot be read */
    if (ok)
        snprintf(next, sizeof next, "%s to resume", wc_rundir_rerun(t->cfg, "training"));
    else if (t->rank == 0)
        describe_lost_stop(t, steps_done, next, sizeof next);
    else
        *next = '\0';
    /* the time from the signal only where it came: another rank's is not known here (0.0 s was
     * printed, for a checkpoint that took 4 s) */
    char origin[96], when[80] = "";
    if (wc_stop_signal())
        snprintf(when, sizeof when, " (%.1f s from the signal to the end of the checkpoint)",
                 wc_stop_seconds_since());
    wc_info("stopped by %s after step %ld: %s%s; %s",
            wc_stop_origin(origin, sizeof origin, "a signal on another rank"), steps_done,
            ok ? "checkpoint written" : "CHECKPOINT FAILED", when, next);
    wc_stop_ignore_further();
    return ok ? WC_EXIT_STOPPED : WC_EXIT_RUNTIME;
}

/* The checkpoint policy and rank 0's writer thread. */
void wc_train_ckpt_start(train_ctx *t) {
    const wc_train_config *cfg = t->cfg;
    t->ckpt.interval = cfg->ckpt_minutes > 0 ? cfg->ckpt_minutes * 60
                       : cfg->ckpt_every > 0 ? 0
                                             : WC_CKPT_DEFAULT_MIN_S;
    t->ckpt.adaptive = cfg->ckpt_minutes <= 0 && cfg->ckpt_every <= 0;
    if (t->rank == 0) {
        t->bg =
            wc_ckptbg_create(t->net->nparams, t->net->ntensors, t->opt->v != NULL, t->ds->nfeat);
        if (!t->bg) wc_warn("interval checkpoints are written synchronously");
    }
}

void wc_train_ckpt_finish(train_ctx *t) {
    wc_train_ckpt_take_background(t, 1);
    wc_ckptbg_destroy(t->bg);
    t->bg = NULL;
}
