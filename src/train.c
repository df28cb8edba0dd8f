/* train.c: the training driver; see train.h. In order: setup (data, network, optimizer,
 * resume), the step (read ahead, forward/backward per micro-batch, exact reduction, update),
 * validation, checkpoints, stop signals, logging, and the end of the run. */
#include "wildcpu/train.h"

#include <cblas.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/layers.h"
#include "wildcpu/metrics.h"
#include "wildcpu/net.h"
#include "wildcpu/raster.h"
#include "wildcpu/reader.h"
#include "wildcpu/reduce.h"
#include "wildcpu/report.h"
#include "wildcpu/schedule.h"
#include "wildcpu/snapshot.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

void wc_train_config_default(wc_train_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    wc_data_config_default(&cfg->data);
    cfg->out_dir = "run";
    cfg->model = "unet-lite";
    cfg->epochs = 10;
    cfg->batch = 32;
    cfg->micro_batch = 4;
    wc_optim_config_default(&cfg->optim, WC_OPTIM_ADAMW);
    cfg->optim.warmup_steps = -1;
    cfg->lr_ref_batch = 32;
    cfg->pos_weight = 1.0;
    cfg->seed = 1;
    cfg->threads = 1;
    cfg->log_every = 10;
    cfg->keep = 3;
}

/* ---- the run's state --------------------------------------------------------------------- */

typedef struct {
    const wc_train_config *cfg;
    int rank, nranks;
    char ckpt_dir[4096];
    wc_dataset *ds;
    wc_net *net;
    wc_optim *opt;
    wc_reducer *red;
    wc_reader *rd;
    wc_schedule sched;
    long total_steps, start_step;
    int max_local;           /* most micro-batches a rank gets in a step */
    /* decode buffers for one micro-batch: labels, validity, oracle */
    float *y, *oracle;
    uint8_t *valid;
    const wc_read_batch **held; /* (max_local) this step's batches, kept for a recomputation */
    /* look-ahead cursor: the next read request to submit */
    long cur_step;
    int cur_j, cur_phase, cur_v;
    uint32_t *ids;           /* (micro_batch) the patch ids of one read request */
    /* validation */
    wc_metrics_acc *acc, *oracle_acc;
    long val_lo, val_hi;     /* this rank's validation patches */
    int val_mb_max;          /* validation micro-batches of the largest share (agreement cadence) */
    int val_pending;         /* the last epoch's validation was cut short by a stop */
    wc_metrics last_val, last_oracle;
    int have_val, have_oracle;
    /* bookkeeping for logs and the report */
    FILE *jsonl;
    int jsonl_failed;        /* a write failed (reported once) */
    double t_start, t_steps, t_last_log, t_last_ckpt;
    long samples_since_log, steps_done_here;
    double loss_sum_since_log;
    long loss_steps_since_log;
    double last_loss;
    double ckpt_seconds;
    long ckpts_written;
    size_t ckpt_bytes_last;
    double reduce_seconds, compute_seconds, val_seconds;
    long redo_count;
    int tty;
    int stop_agreed;         /* some rank voted to stop in the last step's reduction */
    int ckpt_time_due;       /* rank 0 voted for a timed checkpoint in it */
    double ckpt_interval;    /* seconds between timed checkpoints; 0: none */
    size_t planned_bytes, baseline_bytes;
    char config_kv[2048];
    long poison_step;        /* the divergence test hook (WILDCPU_TEST_POISON), -1: off */
    char poison_kind;
} train_ctx;

/* The settings that must be equal for a resume to be exact. */
static void build_config_kv(train_ctx *t) {
    const wc_train_config *c = t->cfg;
    uint64_t h = 0;
    for (const char *p = t->net->spec; *p; p++) h = h * 1099511628211ULL ^ (unsigned char)*p;
    snprintf(t->config_kv, sizeof t->config_kv,
             "model=%s;spec_hash=%016llx;batch=%d;micro_batch=%d;seed=%llu;patch=%d;"
             "val_fraction=%.10g;val_block_px=%d;min_valid=%.10g;optimizer=%s;lr=%.10g;"
             "weight_decay=%.10g;warmup=%ld;total_steps=%ld;pos_weight=%.10g;reduce=%s",
             t->net->arch, (unsigned long long)h, c->batch, c->micro_batch,
             (unsigned long long)c->seed, c->data.patch, c->data.val_fraction, c->data.val_block_px,
             c->data.min_valid, t->opt->cfg.kind == WC_OPTIM_ADAMW ? "adamw" : "sgd",
             t->opt->cfg.lr, t->opt->cfg.weight_decay, t->opt->cfg.warmup_steps,
             t->opt->cfg.total_steps, c->pos_weight, c->fast_reduce ? "fast" : "exact");
}

/* ---- metrics.jsonl ----------------------------------------------------------------------- */

/* One line of metrics.jsonl (rank 0), flushed so a stopped run keeps it. A failed write (a full
 * disk) is reported once: the training itself does not depend on the log. */
static void log_json(train_ctx *t, const char *fmt, ...) WC_PRINTF(2, 3);
static void log_json(train_ctx *t, const char *fmt, ...) {
    if (!t->jsonl) return;
    va_list ap;
    va_start(ap, fmt);
    int bad = vfprintf(t->jsonl, fmt, ap) < 0;
    va_end(ap);
    bad |= fputc('\n', t->jsonl) == EOF;
    bad |= fflush(t->jsonl) != 0;
    if (bad && !t->jsonl_failed)
        wc_warn("writing %s/metrics.jsonl failed: %s; training goes on, the log misses lines",
                t->cfg->out_dir, strerror(errno));
    t->jsonl_failed |= bad;
    clearerr(t->jsonl);
}

/* ---- read-ahead -------------------------------------------------------------------------- */

enum { PHASE_TRAIN, PHASE_VAL };

static int val_micro_batches(const train_ctx *t) {
    return (int)((t->val_hi - t->val_lo + t->cfg->micro_batch - 1) / t->cfg->micro_batch);
}

static long make_tag(long step, int phase, int j) { return (step * 2 + phase) * 100000 + j; }

/* Submits read requests in consumption order while the reader has room. */
static void submit_ahead(train_ctx *t) {
    uint32_t *ids = t->ids;
    while (wc_reader_can_submit(t->rd) && t->cur_step < t->total_steps) {
        int lo, hi, n;
        wc_schedule_micro_batches(&t->sched, t->cur_step, &lo, &hi);
        if (t->cur_phase == PHASE_TRAIN) {
            if (t->cur_j < lo) t->cur_j = lo;
            if (t->cur_j < hi) {
                n = wc_schedule_patches(&t->sched, t->cur_step, t->cur_j, ids);
                wc_reader_submit(t->rd, ids, n, 0, make_tag(t->cur_step, PHASE_TRAIN, t->cur_j));
                t->cur_j++;
                continue;
            }
            t->cur_phase = PHASE_VAL;
            t->cur_v = 0;
        }
        if (wc_schedule_ends_epoch(&t->sched, t->cur_step) && t->cur_v < val_micro_batches(t)) {
            long first = t->val_lo + (long)t->cur_v * t->cfg->micro_batch;
            n = (int)WC_MIN((long)t->cfg->micro_batch, t->val_hi - first);
            for (int i = 0; i < n; i++) ids[i] = t->ds->val[first + i];
            wc_reader_submit(t->rd, ids, n, 1, make_tag(t->cur_step, PHASE_VAL, t->cur_v));
            t->cur_v++;
            continue;
        }
        t->cur_step++;
        t->cur_phase = PHASE_TRAIN;
        t->cur_j = 0;
    }
}

static const wc_read_batch *take(train_ctx *t, long step, int phase, int j) {
    submit_ahead(t);
    const wc_read_batch *b;
    if (wc_reader_take(t->rd, &b) != WC_OK)
        wc_fatal("step %ld: reading %s patches failed (see the message above)", step + 1,
                 phase == PHASE_TRAIN ? "training" : "validation");
    WC_ASSERT(b->tag == make_tag(step, phase, j));
    return b;
}

/* Decodes the batch's patches into the network input and the label/validity buffers. */
static long decode_batch(train_ctx *t, const wc_read_batch *b, int with_oracle) {
    const size_t pp = (size_t)t->ds->P * t->ds->P;
    float *x = wc_net_input(t->net);
    long nvalid = 0;
    for (int i = 0; i < b->n; i++)
        nvalid += wc_dataset_decode(t->ds, b->raw + (size_t)i * b->patch_bytes, t->ds->mean,
                                    t->ds->std, x + (size_t)i * t->ds->nfeat * pp, t->y + i * pp,
                                    t->valid + i * pp, with_oracle ? t->oracle + i * pp : NULL);
    return nvalid;
}

/* ---- validation -------------------------------------------------------------------------- */

/* Validation micro-batches between two agreements on a stop signal: ranks validate their own
 * shares independently, so they agree at a cadence that is the same on every rank (every
 * VAL_AGREE_EVERY micro-batches of the largest share), never by time. A few tenths of a second
 * of work at the micro-batch sizes used; an 8-byte Allreduce costs microseconds. */
#define VAL_AGREE_EVERY 4

enum { VAL_DONE = 0, VAL_DIVERGED = 1, VAL_STOPPED = 2 };

/* Validation after `step`. Returns VAL_DIVERGED (on every rank alike: the decision is made from
 * the reduced counts) when the network's output was NaN on some pixel, VAL_STOPPED when the
 * ranks agreed on a stop signal before it finished (nothing of it is kept). */
static int validate(train_ctx *t, long step) {
    double t0 = wc_now();
    const size_t pp = (size_t)t->ds->P * t->ds->P;
    const int with_oracle = t->ds->oracle_path != NULL;
    wc_metrics_reset(t->acc);
    wc_metrics_reset(t->oracle_acc);
    const int mine = val_micro_batches(t);
    for (int v = 0; v < t->val_mb_max; v++) {
        if (v % VAL_AGREE_EVERY == VAL_AGREE_EVERY - 1) {
            int64_t stop = wc_stop_requested();
            wc_dist_sum_i64(&stop, 1);
            if (stop) {
                t->val_seconds += wc_now() - t0;
                return VAL_STOPPED;
            }
        }
        if (v >= mine) continue;
        const wc_read_batch *b = take(t, step, PHASE_VAL, v);
        decode_batch(t, b, with_oracle);
        wc_net_forward(t->net, b->n);
        wc_metrics_add_logits(t->acc, wc_net_output(t->net), t->y, t->valid, b->n * pp,
                              (float)t->cfg->pos_weight);
        if (with_oracle)
            wc_metrics_add_probs(t->oracle_acc, t->oracle, t->y, t->valid, b->n * pp,
                                 (float)t->cfg->pos_weight);
        wc_reader_release(t->rd);
    }
    /* integer sums: the result is the same for any number of ranks and any split */
    wc_dist_sum_i64((int64_t *)t->acc, wc_metrics_acc_words());
    wc_metrics_compute(&t->last_val, t->acc);
    t->have_val = t->ds->nval > 0;
    if (with_oracle) {
        wc_dist_sum_i64((int64_t *)t->oracle_acc, wc_metrics_acc_words());
        wc_metrics_compute(&t->last_oracle, t->oracle_acc);
        t->have_oracle = 1;
    }
    t->val_seconds += wc_now() - t0;
    if (t->last_val.bad_outputs > 0) {
        if (t->rank == 0)
            wc_error("validation after step %ld: the network's output is NaN on %lld pixels: "
                     "training diverged; nothing of this validation was logged or saved (the last "
                     "checkpoint in %s is intact). Lower --lr (now %.3g) and rerun with --fresh",
                     step + 1, (long long)t->last_val.bad_outputs, t->ckpt_dir, t->opt->cfg.lr);
        return VAL_DIVERGED;
    }
    if (t->rank != 0 || !t->have_val) return VAL_DONE;
    long epoch = step / t->sched.steps_per_epoch + 1;
    char line[2048];
    int n = snprintf(line, sizeof line, "{\"type\":\"val\",\"step\":%ld,\"epoch\":%ld,", step + 1,
                     epoch);
    n += wc_metrics_json(line + n, sizeof line - n, &t->last_val, "");
    if (t->have_oracle) {
        n += snprintf(line + n, sizeof line - n, ",");
        n += wc_metrics_json(line + n, sizeof line - n, &t->last_oracle, "oracle_");
    }
    snprintf(line + n, sizeof line - n, "}");
    log_json(t, "%s", line);
    if (t->tty) printf("\r\033[K");
    wc_info("validation after step %ld (epoch %ld): loss %.4f  AUC-PR %.4f  ROC-AUC %.4f  "
            "best F1 %.3f @ %.3f  Brier %.4f  (%lld pixels, %.1f%% burned)%s",
            step + 1, epoch, t->last_val.loss, t->last_val.auc_pr, t->last_val.roc_auc,
            t->last_val.best_f1, t->last_val.best_f1_threshold, t->last_val.brier,
            (long long)t->last_val.pixels, 100 * t->last_val.positive_rate, "");
    if (t->have_oracle)
        wc_info("  oracle on the same pixels: AUC-PR %.4f  ROC-AUC %.4f  (model at %.0f%% of "
                "the oracle's AUC-PR)",
                t->last_oracle.auc_pr, t->last_oracle.roc_auc,
                100 * t->last_val.auc_pr / t->last_oracle.auc_pr);
    return VAL_DONE;
}

/* ---- checkpoints ------------------------------------------------------------------------- */

static int save_checkpoint(train_ctx *t, long steps_done, const char *why) {
    if (t->rank != 0) return WC_OK;
    char meta[1024];
    char ts[32];
    wc_utc_timestamp(ts, sizeof ts);
    long epoch = steps_done / t->sched.steps_per_epoch;
    snprintf(meta, sizeof meta,
             "wildcpu=%s;step=%ld;epoch=%ld;epochs_total=%ld;ranks=%d;threads=%d;time=%s;"
             "arch=%s;nparams=%zu;loss=%.6g;rng=stateless (seed, stream, epoch)",
             WC_VERSION, steps_done, epoch,
             (t->total_steps + t->sched.steps_per_epoch - 1) / t->sched.steps_per_epoch,
             t->nranks, t->cfg->threads, ts, t->net->arch, t->net->nparams, t->last_loss);
    const char **names = WC_ALLOC(sizeof(char *) * t->ds->nfeat);
    for (int c = 0; c < t->ds->nfeat; c++)
        names[c] = t->ds->files.src.bands[t->ds->feat_bands[c] - 1].name;
    char metrics[2048] = "";
    if (t->have_val) {
        int n = wc_metrics_json(metrics, sizeof metrics, &t->last_val, "val_");
        if (t->have_oracle) {
            n += snprintf(metrics + n, sizeof metrics - n, ",");
            wc_metrics_json(metrics + n, sizeof metrics - n, &t->last_oracle, "oracle_");
        }
    }
    const wc_snapshot snap = {
        .meta = meta, .config = t->config_kv, .fingerprint = t->ds->fingerprint,
        .spec = t->net->spec, .metrics = metrics, .nfeat = t->ds->nfeat, .feat_names = names,
        .mean = t->ds->mean, .std = t->ds->std, .step = steps_done, .epoch = epoch,
        .epoch_pos = (steps_done % t->sched.steps_per_epoch) * t->cfg->batch,
        .optim_step = t->opt->step, .ranks = t->nranks, .calibrated = t->red->calibrated,
        .val_pending = t->val_pending,
        .ntensors = t->net->ntensors, .exponent = t->red->exponent, .nparams = t->net->nparams,
        .params = t->net->params, .optim_m = t->opt->m, .optim_v = t->opt->v};
    double secs = 0;
    size_t bytes = 0;
    int rc = wc_snapshot_write(t->ckpt_dir, &snap, t->cfg->keep, &secs, &bytes);
    free(names);
    if (rc != WC_OK) {
        wc_error("checkpoint at step %ld (%s) is not complete (see above); the previous "
                 "checkpoints are intact",
                 steps_done, why);
        return WC_ERR;
    }
    t->ckpt_seconds += secs;
    t->ckpts_written++;
    t->ckpt_bytes_last = bytes;
    char b[32];
    if (t->tty) printf("\r\033[K");
    wc_info("checkpoint %s/ckpt-%08ld.wcp (%s): %s in %.3f s", t->ckpt_dir, steps_done, why,
            wc_fmt_bytes(b, sizeof b, (double)bytes), secs);
    log_json(t,
             "{\"type\":\"checkpoint\",\"step\":%ld,\"bytes\":%zu,\"seconds\":%.4f,"
             "\"why\":\"%s\"}",
             steps_done, bytes, secs, why);
    return WC_OK;
}

/* Checkpoint rank 0 wrote; all ranks learn whether it worked. */
static int checkpoint_collective(train_ctx *t, long steps_done, const char *why) {
    int64_t failed = save_checkpoint(t, steps_done, why) != WC_OK;
    wc_dist_sum_i64(&failed, 1);
    t->t_last_ckpt = wc_now();
    return failed ? WC_ERR : WC_OK;
}

/* A checkpoint a resume can use: its sections decode and check out and, when it claims to be
 * of this run (same data and settings, which resume() then compares and refuses otherwise), its
 * network and optimizer state are the ones this run trains. Anything else is "not usable" and
 * the previous checkpoint is tried, as for a CRC mismatch. */
typedef struct {
    wc_snapshot snap;
    const train_ctx *t;
} resume_check_ctx;

static int resume_check(const wc_ckpt *ck, void *ctx, char *why, size_t why_size) {
    resume_check_ctx *c = ctx;
    if (wc_snapshot_check(ck, &c->snap, why, why_size) != WC_OK) return WC_ERR;
    const wc_snapshot *s = &c->snap;
    const train_ctx *t = c->t;
    char diff[8];
    if (wc_kv_differs(t->ds->fingerprint, s->fingerprint, diff, sizeof diff) ||
        wc_kv_differs(t->config_kv, s->config, diff, sizeof diff))
        return WC_OK; /* another run's: refused by resume() with the difference named */
    const wc_net *net = t->net;
    if (s->nparams != net->nparams || s->ntensors != net->ntensors) {
        snprintf(why, why_size, "it holds %zu parameters in %d tensors, this run's network has "
                                "%zu in %d",
                 s->nparams, s->ntensors, net->nparams, net->ntensors);
        return WC_ERR;
    }
    if (t->opt->v && !s->optim_v) {
        snprintf(why, why_size, "it holds no second moment (optim_v), which AdamW needs");
        return WC_ERR;
    }
    return WC_OK;
}

/* Resumes from the newest usable checkpoint, if any. Collective. Returns WC_OK (t->start_step
 * set, 0 for a fresh start) or WC_ERR. */
static int resume(train_ctx *t) {
    t->start_step = 0;
    if (t->rank == 0) wc_ckpt_remove_stale(t->ckpt_dir);
    if (t->cfg->fresh) return WC_OK;
    char *path = NULL;
    int found_any = 0;
    resume_check_ctx check = {.t = t};
    const wc_snapshot *s = &check.snap;
    int64_t status[2] = {0, 0}; /* [0]: error, [1]: resumed */
    if (t->rank == 0) {
        wc_ckpt ck;
        if (wc_ckpt_latest(t->ckpt_dir, resume_check, &check, &ck, &path, &found_any) != WC_OK) {
            if (found_any) {
                wc_error("%s holds checkpoints but none is usable (see above); refusing to "
                         "start over silently: use --fresh to start from scratch",
                         t->ckpt_dir);
                status[0] = 1;
            }
        } else {
            wc_ckpt_free(&ck);
            char why[2048];
            if (wc_kv_differs(t->ds->fingerprint, s->fingerprint, why, sizeof why)) {
                wc_error("checkpoint %s was trained on other data: %s (use another --out, or "
                         "--fresh)",
                         path, why);
                status[0] = 1;
            }
            if (!status[0] && wc_kv_differs(t->config_kv, s->config, why, sizeof why)) {
                wc_error("checkpoint %s was written with other settings: %s (rerun with the "
                         "same options, or use --fresh)",
                         path, why);
                status[0] = 1;
            }
            status[1] = !status[0];
        }
    }
    wc_dist_bcast(status, sizeof status, 0);
    if (status[0] || !status[1]) {
        wc_snapshot_free(&check.snap);
        free(path);
        return status[0] ? WC_ERR : WC_OK;
    }
    /* rank 0 holds the checked snapshot; everyone receives the state */
    const int nt = t->net->ntensors;
    const size_t pbytes = t->net->nparams * sizeof(float);
    int64_t counters[5] = {0, 0, 0, 0, 0};
    char prev_ranks[32] = "";
    if (t->rank == 0) {
        counters[0] = s->step, counters[1] = s->optim_step, counters[2] = s->calibrated;
        counters[3] = s->epoch, counters[4] = s->val_pending;
        memcpy(t->net->params, s->params, pbytes);
        memcpy(t->opt->m, s->optim_m, pbytes);
        if (t->opt->v) memcpy(t->opt->v, s->optim_v, pbytes);
        memcpy(t->red->exponent, s->exponent, sizeof(int32_t) * nt);
        wc_kv_get(s->meta, "ranks", prev_ranks, sizeof prev_ranks);
    }
    wc_dist_bcast(counters, sizeof counters, 0);
    wc_dist_bcast(t->net->params, pbytes, 0);
    wc_dist_bcast(t->opt->m, pbytes, 0);
    if (t->opt->v) wc_dist_bcast(t->opt->v, pbytes, 0);
    wc_dist_bcast(t->red->exponent, sizeof(int32_t) * nt, 0);
    t->start_step = counters[0];
    t->opt->step = counters[1];
    t->red->calibrated = (int)counters[2];
    t->val_pending = (int)counters[4];
    wc_info("resuming from %s: %ld of %ld steps done (epoch %lld)%s%s%s", path, t->start_step,
            t->total_steps, (long long)counters[3] + 1, *prev_ranks ? ", written by " : "",
            prev_ranks, *prev_ranks ? (strcmp(prev_ranks, "1") ? " ranks" : " rank") : "");
    wc_snapshot_free(&check.snap);
    free(path);
    return WC_OK;
}

/* metrics.jsonl of a resumed run: drop what the interrupted run logged after the checkpoint,
 * so the file reads as if the run had never stopped. */
static void trim_jsonl(const char *path, long keep_through_step) {
    char *text = wc_read_file(path);
    wc_atomic_file out;
    if (!text || wc_atomic_open(&out, path, "w") != WC_OK) {
        free(text);
        return; /* a missing log is fine; a failure was reported */
    }
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        const char *s = strstr(line, "\"step\":");
        long step = s && s < next ? atol(s + 7) : 0;
        if (step <= keep_through_step) fwrite(line, 1, (size_t)(next - line), out.f);
    }
    free(text);
    if (wc_atomic_commit(&out) != WC_OK)
        wc_warn("%s keeps lines logged after the checkpoint", path);
}

/* ---- the step ---------------------------------------------------------------------------- */

/* Divergence: a non-finite gradient, loss, or an update that made the state non-finite. Every
 * rank reaches this for the same step (it is decided from reduced values), so all return the
 * error together; nothing of the step was applied to anything that is saved or logged. */
static void report_divergence(const train_ctx *t, long step, const wc_step_totals *tot,
                              int bad_update_tensor) {
    char what[256];
    if (bad_update_tensor >= 0)
        snprintf(what, sizeof what, "the optimizer's update made %s non-finite",
                 t->net->tensors[bad_update_tensor].name);
    else if (tot->first_bad_tensor >= 0)
        snprintf(what, sizeof what, "the gradient of %s%s%.0d%s is not finite (NaN or infinite) "
                 "in %lld micro-batch%s",
                 t->net->tensors[tot->first_bad_tensor].name,
                 tot->bad_tensors > 1 ? " and " : "", tot->bad_tensors > 1 ? tot->bad_tensors - 1 : 0,
                 tot->bad_tensors > 1 ? " more tensors" : "", (long long)tot->nonfinite,
                 tot->nonfinite == 1 ? "" : "es");
    else
        snprintf(what, sizeof what, "the loss of %lld micro-batch%s is not finite or too large "
                 "to be summed exactly (beyond 2^%d nats)",
                 (long long)tot->bad_loss, tot->bad_loss == 1 ? "" : "es",
                 62 - WC_REDUCE_LOSS_FX_BITS);
    if (t->rank != 0) return;
    wc_error("step %ld: training diverged: %s; the step was not applied and nothing of it was "
             "saved (the last checkpoint in %s is intact). Lower --lr (now %.3g) or lengthen "
             "--warmup (now %ld) and rerun with --fresh, or resume from the last checkpoint with "
             "the same options",
             step + 1, what, t->ckpt_dir, t->opt->cfg.lr, t->opt->cfg.warmup_steps);
}

/* The test hook that proves divergence is caught on any rank: WILDCPU_TEST_POISON=STEP:RANK:WHAT
 * makes RANK's first micro-batch of step STEP (1-based) have a NaN gradient component (grad), an
 * infinite one (inf) or a NaN loss (loss). Parsed once at setup. */
static void parse_poison(train_ctx *t) {
    t->poison_step = -1;
    const char *s = getenv("WILDCPU_TEST_POISON");
    long step;
    int rank;
    char what[8];
    if (!s || sscanf(s, "%ld:%d:%7s", &step, &rank, what) != 3 || rank != t->rank) return;
    t->poison_step = step - 1;
    t->poison_kind = what[0];
}

static void poison(train_ctx *t, double *loss) {
    const size_t i = t->net->nparams / 2;
    if (t->poison_kind == 'l') *loss = NAN;
    else t->net->grads[i] = t->poison_kind == 'i' ? INFINITY : NAN;
}

/* One optimizer step: this rank's micro-batches, the exact reduction, the update. Returns
 * WC_ERR (on every rank alike) when training diverged. */
static int train_step(train_ctx *t, long step) {
    int lo, hi;
    wc_schedule_micro_batches(&t->sched, step, &lo, &hi);
    const size_t pp = (size_t)t->ds->P * t->ds->P;
    for (int j = lo; j < hi; j++) t->held[j - lo] = take(t, step, PHASE_TRAIN, j);
    wc_step_totals tot;
    int rc;
    for (;;) {
        double t0 = wc_now();
        wc_reducer_begin(t->red);
        /* a fresh run's scales: from micro-batch 0, which its owner computes first (lo == 0;
         * with fewer micro-batches than ranks that need not be rank 0) */
        const int calibrate = !t->red->calibrated;
        const int root = wc_schedule_rank_of(&t->sched, step, 0);
        if (calibrate && lo == hi) wc_reducer_calibrate(t->red, NULL, root);
        for (int j = lo; j < hi; j++) {
            const wc_read_batch *b = t->held[j - lo];
            long nvalid = decode_batch(t, b, 0);
            wc_net_forward(t->net, b->n);
            const float *z = wc_net_output(t->net);
            double loss = wc_bce_forward(z, t->y, t->valid, b->n * pp, (float)t->cfg->pos_weight);
            wc_bce_backward(wc_net_output_grad(t->net), z, t->y, t->valid, b->n * pp,
                            (float)t->cfg->pos_weight);
            memset(t->net->grads, 0, t->net->nparams * sizeof(float));
            wc_net_backward(t->net, b->n);
            if (calibrate && j == lo)
                wc_reducer_calibrate(t->red, j == 0 ? t->net->grads : NULL, root);
            if (step == t->poison_step && j == lo) poison(t, &loss);
            wc_reducer_add(t->red, t->net->grads, loss, nvalid, b->n);
        }
        double t1 = wc_now();
        /* a timed checkpoint: rank 0's clock decides, everyone follows */
        int ckpt_vote = t->rank == 0 && t->ckpt_interval > 0 &&
                        wc_now() - t->t_last_ckpt >= t->ckpt_interval;
        rc = wc_reducer_finish(t->red, t->net->grads, wc_stop_requested(), ckpt_vote, &tot);
        double t2 = wc_now();
        t->compute_seconds += t1 - t0;
        t->reduce_seconds += t2 - t1;
        if (rc != WC_REDUCE_REDO) break;
        if (step > t->start_step)
            wc_info("step %ld: a gradient outgrew its fixed-point scale; recomputing the step "
                    "with rescaled gradients",
                    step + 1);
        t->redo_count++;
    }
    for (int j = lo; j < hi; j++) wc_reader_release(t->rd);
    if (rc == WC_REDUCE_DIVERGED) {
        report_divergence(t, step, &tot, -1);
        return WC_ERR;
    }
    if (tot.valid_pixels == 0)
        wc_fatal("step %ld: the batch has no valid pixel", step + 1);
    double loss = tot.loss_sum / (double)tot.valid_pixels;
    int bad = wc_optim_step(t->opt, t->net->params, t->net->grads, t->net->tensors,
                            t->net->ntensors);
    if (bad >= 0) {
        report_divergence(t, step, &tot, bad);
        return WC_ERR;
    }
    t->last_loss = loss;
    t->loss_sum_since_log += loss;
    t->loss_steps_since_log++;
    t->samples_since_log += tot.samples;
    /* The decision is the vote, never this rank's own flag: a signal that lands after the
     * reduction is counted in the next step's vote, so all ranks stop at the same step. */
    t->stop_agreed = tot.stop_votes > 0;
    t->ckpt_time_due = tot.ckpt_votes > 0;
    return WC_OK;
}

static void fmt_duration(char *buf, size_t size, double s) {
    long v = (long)(s + 0.5);
    if (v >= 3600)
        snprintf(buf, size, "%ldh%02ldm", v / 3600, v / 60 % 60);
    else
        snprintf(buf, size, "%ldm%02lds", v / 60, v % 60);
}

static void log_progress(train_ctx *t, long step, int force_line) {
    if (t->rank != 0) return;
    double now = wc_now();
    long done = step + 1;
    int line_due = force_line || done % t->cfg->log_every == 0 || done == t->total_steps;
    double rate = t->steps_done_here > 0 ? (double)t->steps_done_here / (now - t->t_steps) : 0;
    char eta[32];
    fmt_duration(eta, sizeof eta, rate > 0 ? (double)(t->total_steps - done) / rate : 0);
    long epoch = step / t->sched.steps_per_epoch + 1;
    long epochs = (t->total_steps + t->sched.steps_per_epoch - 1) / t->sched.steps_per_epoch;
    if (t->tty && !line_due) {
        int width = 30, filled = (int)(width * (double)done / (double)t->total_steps);
        printf("\r\033[K[%.*s%*s] step %ld/%ld  loss %.4f  ETA %s", filled,
               "##############################", width - filled, "", done, t->total_steps,
               t->last_loss, eta);
        fflush(stdout);
        return;
    }
    if (!line_due) return;
    double dt = now - t->t_last_log;
    double sps = dt > 0 ? (double)t->samples_since_log / dt : 0;
    double loss = t->loss_sum_since_log / (double)WC_MAX(t->loss_steps_since_log, 1);
    double lr = wc_optim_lr(&t->opt->cfg, t->opt->step - 1);
    if (t->tty) printf("\r\033[K");
    wc_info("epoch %ld/%ld  step %ld/%ld  loss %.4f  lr %.2e  %.1f samples/s  ETA %s", epoch,
            epochs, done, t->total_steps, loss, lr, sps, eta);
    log_json(t,
             "{\"type\":\"train\",\"step\":%ld,\"epoch\":%ld,\"loss\":%.17g,\"lr\":%.9g,"
             "\"samples_per_s\":%.3f,\"elapsed_s\":%.3f}",
             done, epoch, loss, lr, sps, now - t->t_start);
    t->t_last_log = now;
    t->samples_since_log = 0;
    t->loss_sum_since_log = 0;
    t->loss_steps_since_log = 0;
}

/* ---- setup ------------------------------------------------------------------------------- */

/* What a run directory holds: what --fresh moves aside, and what no input may be. */
static const struct {
    const char *name, *what;
} RUN_FILES[] = {
    {"checkpoints", "the checkpoints"},
    {"metrics.jsonl", "the metrics log"},
    {"report.json", "the report"},
    {"report.md", "the report"},
    {"risk.tif", "the risk map"},
    {"risk.tif.aux.xml", "the risk map's sidecar"},
    {"risk.png", "the quick-look picture"},
    {WC_TRAIN_STOPPED_MARKER, "the stop marker"},
};
enum { NRUN_FILES = (int)(sizeof RUN_FILES / sizeof RUN_FILES[0]) };

static void run_file(char *buf, size_t size, const char *out, int i) {
    snprintf(buf, size, "%s/%s", out, RUN_FILES[i].name);
}

/* Nothing the run writes or moves may be one of its inputs (a --tiles D/risk.tif with --out D
 * would be replaced by the map, or moved aside by --fresh). Rank 0 checks, before any work. */
static int check_inputs(const wc_train_config *cfg) {
    int64_t bad = 0;
    if (wc_dist_rank() == 0) {
        char **lists[3] = {wc_gdal_file_list(cfg->data.tiles),
                           cfg->data.labels ? wc_gdal_file_list(cfg->data.labels) : NULL,
                           cfg->data.oracle ? wc_gdal_file_list(cfg->data.oracle) : NULL};
        size_t n = 0, cap = 8;
        const char **inputs = WC_ALLOC(sizeof(char *) * cap);
        for (int l = 0; l < 3; l++)
            for (size_t i = 0; lists[l] && lists[l][i]; i++) {
                if (n + 3 >= cap) {
                    const char **more = realloc(inputs, sizeof(char *) * (cap *= 2));
                    if (!more) wc_fatal("out of memory");
                    inputs = more;
                }
                inputs[n++] = lists[l][i];
            }
        if (!wc_net_builtin_spec(cfg->model)) inputs[n++] = cfg->model;
        if (cfg->baseline) inputs[n++] = cfg->baseline;
        inputs[n] = NULL;
        char paths[NRUN_FILES][4200], moved[4200];
        const char *outs[NRUN_FILES], *whats[NRUN_FILES], *moved_dirs[1] = {moved};
        for (int i = 0; i < NRUN_FILES; i++) {
            run_file(paths[i], sizeof paths[i], cfg->out_dir, i);
            outs[i] = paths[i], whats[i] = RUN_FILES[i].what;
        }
        run_file(moved, sizeof moved, cfg->out_dir, 0); /* the checkpoints directory */
        bad = wc_check_outputs_not_inputs(outs, whats, NRUN_FILES, moved_dirs, cfg->fresh,
                                          inputs) != WC_OK;
        free(inputs);
        for (int l = 0; l < 3; l++) wc_strv_free(lists[l]);
    }
    wc_dist_bcast(&bad, sizeof bad, 0);
    return bad ? WC_ERR : WC_OK;
}

/* --fresh: the previous run's files move to out/replaced-<time>/ (never deleted), so a later
 * resume cannot pick up the old run's checkpoints. Returns WC_ERR on a failed move. */
static int set_aside_previous_run(const char *out) {
    char ts[32], dir[4096], from[4200], to[4400];
    wc_utc_timestamp(ts, sizeof ts);
    snprintf(dir, sizeof dir, "%s/replaced-%s", out, ts);
    for (int k = 2; access(dir, F_OK) == 0; k++) /* two restarts within a second */
        snprintf(dir, sizeof dir, "%s/replaced-%s-%d", out, ts, k);
    int moved = 0;
    for (int i = 0; i < NRUN_FILES; i++) {
        run_file(from, sizeof from, out, i);
        if (access(from, F_OK) != 0) continue;
        if (!moved && mkdir(dir, 0777) != 0 && errno != EEXIST) {
            wc_error("--fresh: cannot create %s to keep the previous run: %s", dir, strerror(errno));
            return WC_ERR;
        }
        snprintf(to, sizeof to, "%s/%s", dir, RUN_FILES[i].name);
        if (rename(from, to) != 0) {
            wc_error("--fresh: cannot move %s to %s: %s", from, to, strerror(errno));
            return WC_ERR;
        }
        moved++;
    }
    if (moved) wc_info("--fresh: the previous run's files are kept in %s", dir);
    return WC_OK;
}

static int make_dirs(const char *out, int fresh, char *ckpt_dir, size_t size) {
    snprintf(ckpt_dir, size, "%s/checkpoints", out);
    int64_t failed = 0;
    if (wc_dist_rank() == 0) {
        if (fresh && access(out, F_OK) == 0 && set_aside_previous_run(out) != WC_OK) {
            failed = 1;
        } else if (wc_mkdir_p(out) != WC_OK) {
            wc_error("cannot create the run directory %s: %s", out, strerror(errno));
            failed = 1;
        } else if (mkdir(ckpt_dir, 0777) != 0 && errno != EEXIST) {
            wc_error("cannot create %s: %s", ckpt_dir, strerror(errno));
            failed = 1;
        }
    }
    wc_dist_sum_i64(&failed, 1);
    return failed ? WC_ERR : WC_OK;
}


static void print_plan(train_ctx *t, size_t baseline) {
    wc_memory_plan mp;
    wc_net_memory_plan(t->net, &mp);
    size_t opt_b = wc_optim_state_bytes(t->opt);
    size_t red_b = (t->net->nparams + 8) * (t->red->exact ? sizeof(int64_t) : sizeof(float));
    size_t data_b = wc_reader_bytes_held(t->rd) + wc_metrics_acc_words() * 16;
    /* the checkpoint is serialized (raw, then compressed) before it is written */
    size_t ckpt_b = (t->net->nparams * sizeof(float)) * (t->opt->v ? 3 : 2) * 2;
    size_t total = mp.params + mp.grads + opt_b + mp.activations + mp.workspace + red_b + data_b +
                   ckpt_b;
    char a[11][32];
    wc_info("memory plan per rank: parameters %s, gradients %s, optimizer state %s, activations "
            "%s (micro-batch %d of %dx%d), workspace %s, reducer %s, checkpoint buffers %s, data "
            "held %s (read-ahead %d slots of %d patches, validation histograms) = %s, plus "
            "%s runtime (libraries, metadata: measured) and GDAL's block cache (up to %s)",
            wc_fmt_bytes(a[0], 32, (double)mp.params), wc_fmt_bytes(a[1], 32, (double)mp.grads),
            wc_fmt_bytes(a[2], 32, (double)opt_b), wc_fmt_bytes(a[3], 32, (double)mp.activations),
            t->cfg->micro_batch, t->ds->P, t->ds->P, wc_fmt_bytes(a[4], 32, (double)mp.workspace),
            wc_fmt_bytes(a[5], 32, (double)red_b), wc_fmt_bytes(a[9], 32, (double)ckpt_b),
            wc_fmt_bytes(a[6], 32, (double)data_b), t->cfg->prefetch, t->cfg->micro_batch,
            wc_fmt_bytes(a[7], 32, (double)total), wc_fmt_bytes(a[8], 32, (double)baseline),
            wc_fmt_bytes(a[10], 32, (double)wc_raster_cache_max()));
    t->planned_bytes = total;
    t->baseline_bytes = baseline;
}

int wc_train_run(const wc_train_config *cfg_in) {
    wc_train_config cfgv = *cfg_in;
    const wc_train_config *cfg = &cfgv;
    train_ctx tc;
    memset(&tc, 0, sizeof tc);
    train_ctx *t = &tc;
    t->cfg = cfg;
    t->rank = wc_dist_rank();
    t->nranks = wc_dist_size();
    t->t_start = wc_now();
    /* A live progress bar only on a real terminal: Open MPI gives every rank a pseudo-terminal
     * even when mpirun's output goes to a file, so under a launcher progress goes in lines. */
    t->tty = t->rank == 0 && isatty(STDOUT_FILENO) && !getenv("OMPI_COMM_WORLD_SIZE") &&
             !getenv("SLURM_STEP_ID") && !getenv("PMIX_RANK");
    openblas_set_num_threads(cfg->threads);
    wc_stop_install(); /* main installs it before MPI starts; idempotent */

    if (cfg->micro_batch < 1 || cfg->batch < cfg->micro_batch) {
        wc_error("--micro-batch (%d) must be between 1 and --batch (%d)", cfg->micro_batch,
                 cfg->batch);
        return WC_EXIT_USAGE;
    }
    if (check_inputs(cfg) != WC_OK) return WC_EXIT_USAGE;
    if (make_dirs(cfg->out_dir, cfg->fresh, t->ckpt_dir, sizeof t->ckpt_dir) != WC_OK)
        return WC_EXIT_RUNTIME;
    wc_data_config dcfg = cfg->data;
    dcfg.work_dir = cfg->out_dir;
    dcfg.seed = cfg->seed;
    int stopped = 0;
    t->ds = wc_dataset_open(&dcfg, &stopped);
    if (!t->ds && !stopped) return WC_EXIT_RUNTIME;
    wc_dataset *ds = t->ds;
    /* Planning reads every patch's label once and may take minutes on a large mosaic: a stop
     * signal during it (it stops planning on every rank) ends the run here, with nothing new to
     * save. */
    int64_t stop_votes = stopped || wc_stop_requested();
    wc_dist_sum_i64(&stop_votes, 1);
    if (stop_votes) {
        wc_info("stopped by a signal while planning the data, before any step: nothing new to "
                "save; rerun the same command to continue");
        wc_stop_ignore_further();
        wc_dataset_close(ds);
        return WC_EXIT_STOPPED;
    }
    /* The runtime baseline: MPI, GDAL's drivers and PROJ's database, OpenBLAS, the dataset's
     * metadata; measured here, after planning released its GDAL handles, before any training
     * buffer is allocated (and after returning the planning pass's freed heap to the system). */
    malloc_trim(0);
    size_t baseline = wc_current_rss_bytes();
    if (ds->ntrain < cfg->batch) {
        wc_error("%s has %ld valid training patches of %dx%d, fewer than one batch (--batch %d): "
                 "lower --batch or --patch, or give more data",
                 cfg->data.tiles, ds->ntrain, ds->P, ds->P, cfg->batch);
        wc_dataset_close(ds);
        return WC_EXIT_RUNTIME;
    }

    /* the network */
    const char *spec = wc_net_builtin_spec(cfg->model);
    char *spec_file = NULL;
    const char *arch = cfg->model;
    if (!spec) {
        spec = spec_file = wc_read_file(cfg->model);
        if (!spec) {
            wc_error("--model %s: %s (the built-in models are unet-lite and logistic)",
                     cfg->model, strerror(errno));
            wc_dataset_close(ds);
            return WC_EXIT_USAGE;
        }
    }
    t->net = wc_net_create(arch, spec, ds->nfeat, cfg->micro_batch, ds->P, ds->P, WC_NET_TRAIN);
    free(spec_file);
    if (!t->net) {
        wc_dataset_close(ds);
        return WC_EXIT_USAGE;
    }

    /* the schedule and the optimizer */
    long spe = wc_schedule_steps_per_epoch(ds->ntrain, cfg->batch);
    t->total_steps = cfg->steps > 0 ? cfg->steps : cfg->epochs * spe;
    wc_optim_config oc = cfg->optim;
    if (cfg->lr_scaling_linear) oc.lr *= (double)cfg->batch / (double)cfg->lr_ref_batch;
    oc.total_steps = t->total_steps;
    if (oc.warmup_steps < 0) oc.warmup_steps = WC_MIN(100, t->total_steps / 10);
    t->opt = wc_optim_create(&oc, t->net->nparams);
    int max_micro = (cfg->batch + cfg->micro_batch - 1) / cfg->micro_batch;
    t->max_local = (max_micro + t->nranks - 1) / t->nranks;
    t->red = wc_reducer_create(t->net, !cfg->fast_reduce, max_micro);
    wc_schedule_init(&t->sched, ds->train, ds->ntrain, cfg->batch, cfg->micro_batch, t->rank,
                     t->nranks, cfg->seed, t->total_steps);
    wc_dist_share(ds->nval, t->rank, t->nranks, &t->val_lo, &t->val_hi);
    long largest = (ds->nval + t->nranks - 1) / t->nranks;
    t->val_mb_max = (int)((largest + cfg->micro_batch - 1) / cfg->micro_batch);
    build_config_kv(t);

    double prior = ds->train_pixels > 0 ? (double)ds->train_positives / ds->train_pixels : 0.05;
    wc_net_init_params(t->net, cfg->seed, prior);
    int status = WC_EXIT_OK, ran_pending = 0;
    if (resume(t) != WC_OK) {
        status = WC_EXIT_RUNTIME;
        goto done;
    }

    /* buffers and the reader */
    const size_t pp = (size_t)ds->P * ds->P;
    t->y = WC_ALLOC(sizeof(float) * cfg->micro_batch * pp);
    t->oracle = WC_ALLOC(sizeof(float) * cfg->micro_batch * pp);
    t->valid = WC_ALLOC(cfg->micro_batch * pp);
    t->ids = WC_ALLOC(sizeof(uint32_t) * cfg->micro_batch);
    t->held = WC_CALLOC(t->max_local + 1, sizeof(*t->held));
    t->acc = WC_CALLOC(1, sizeof(wc_metrics_acc));
    t->oracle_acc = WC_CALLOC(1, sizeof(wc_metrics_acc));
    /* a step's own batches stay held for a recomputation, plus as many to read ahead */
    if (cfgv.prefetch <= 0) cfgv.prefetch = 2 * t->max_local + 1;
    if (cfgv.prefetch < t->max_local + 1) cfgv.prefetch = t->max_local + 1;
    t->rd = wc_reader_create(ds, cfg->prefetch, cfg->micro_batch);
    int64_t reader_failed = t->rd == NULL;
    wc_dist_sum_i64(&reader_failed, 1);
    if (reader_failed) {
        status = WC_EXIT_RUNTIME;
        goto done;
    }

    if (t->rank == 0) {
        char jpath[4200];
        snprintf(jpath, sizeof jpath, "%s/metrics.jsonl", cfg->out_dir);
        if (t->start_step > 0)
            trim_jsonl(jpath, t->start_step);
        else
            unlink(jpath);
        t->jsonl = fopen(jpath, "a");
        if (!t->jsonl) wc_fatal("cannot write %s: %s", jpath, strerror(errno));
        char crs[64];
        wc_raster_crs_name(ds->files.src.wkt, crs, sizeof crs);
        wc_info("data: %s, %dx%d px, %s, %d features (%s), labels from %s", cfg->data.tiles,
                ds->width, ds->height, crs, ds->nfeat, wc_dtype_name(ds->read_type),
                ds->label_path ? ds->label_path : ds->files.src.bands[ds->label_band - 1].name);
        wc_info("patches: %ld of %dx%d on a %dx%d grid, %ld kept; %ld training, %ld validation "
                "(%ld of %ld blocks of %dx%d patches); %.2f%% of training pixels burned",
                ds->npatches, ds->P, ds->P, ds->cols, ds->rows, ds->ntrain + ds->nval, ds->ntrain,
                ds->nval, ds->nval_blocks, ds->nblocks, ds->val_block, ds->val_block,
                100.0 * prior);
        wc_info("model %s: %zu parameters, %.3f GFLOP per sample per step; %d rank%s x %d "
                "thread%s; batch %d = %d micro-batches of %d; %ld steps (%ld per epoch); %s "
                "lr %.3g, warmup %ld; %s reduction",
                t->net->arch, t->net->nparams, 3 * t->net->flops_forward / 1e9, t->nranks,
                t->nranks > 1 ? "s" : "", cfg->threads, cfg->threads > 1 ? "s" : "", cfg->batch,
                max_micro, cfg->micro_batch, t->total_steps, spe,
                oc.kind == WC_OPTIM_ADAMW ? "AdamW" : "SGD", oc.lr, oc.warmup_steps,
                cfg->fast_reduce ? "fast (float)" : "exact (fixed-point)");
    }
    print_plan(t, baseline);

    /* the loop */
    t->ckpt_interval = cfg->ckpt_minutes > 0 ? cfg->ckpt_minutes * 60
                       : cfg->ckpt_every > 0 ? 0
                                             : 600;
    t->cur_step = t->start_step;
    parse_poison(t);
    t->t_steps = t->t_last_log = t->t_last_ckpt = wc_now();
    /* A stop during the validation after the checkpoint's step left it undone: run it first
     * (the read-ahead cursor starts at that validation), as the uninterrupted run did. */
    if (t->val_pending) {
        t->cur_step = t->start_step - 1;
        t->cur_phase = PHASE_VAL;
        t->cur_v = 0;
        int v = validate(t, t->start_step - 1);
        if (v != VAL_DONE) {
            status = v == VAL_DIVERGED ? WC_EXIT_RUNTIME : WC_EXIT_STOPPED;
            if (v == VAL_STOPPED)
                wc_info("stopped by a signal during the pending validation: the checkpoint is "
                        "unchanged; rerun the same command to resume");
            goto done;
        }
        t->val_pending = 0;
        ran_pending = 1;
    }
    long step;
    for (step = t->start_step; step < t->total_steps; step++) {
        if (train_step(t, step) != WC_OK) {
            status = WC_EXIT_RUNTIME;
            goto done;
        }
        t->steps_done_here++;
        log_progress(t, step, 0);
        if (wc_schedule_ends_epoch(&t->sched, step)) {
            int v = validate(t, step);
            if (v == VAL_DIVERGED) {
                status = WC_EXIT_RUNTIME;
                goto done;
            }
            t->val_pending = v == VAL_STOPPED;
            t->stop_agreed |= t->val_pending;
        }
        if (t->stop_agreed) {
            int ok = checkpoint_collective(t, step + 1, "stop signal") == WC_OK;
            if (t->tty) printf("\n");
            wc_info("stopped by %s after step %ld: %s (%.1f s from the signal to the end of "
                    "the checkpoint); rerun the same command to resume",
                    wc_stop_signal() ? strsignal(wc_stop_signal()) : "a signal on another rank",
                    step + 1, ok ? "checkpoint written" : "CHECKPOINT FAILED",
                    wc_stop_seconds_since());
            status = ok ? WC_EXIT_STOPPED : WC_EXIT_RUNTIME;
            wc_stop_ignore_further();
            step++;
            goto done;
        }
        int due = (cfg->ckpt_every > 0 && (step + 1) % cfg->ckpt_every == 0) || t->ckpt_time_due;
        if (due && step + 1 < t->total_steps &&
            checkpoint_collective(t, step + 1, "interval") != WC_OK)
            wc_warn("continuing without this checkpoint");
    }
    if (t->tty) printf("\n");
    /* A rerun of a finished training has nothing to add: its checkpoint and report stay as
     * they are (only the map is drawn again, below). */
    if (t->start_step >= t->total_steps && !ran_pending)
        wc_info("training already finished (%ld steps): keeping its checkpoint and report",
                t->total_steps);
    else if (checkpoint_collective(t, t->total_steps, "end of training") != WC_OK)
        status = WC_EXIT_RUNTIME;

done:;
    wc_run_summary sum = {
        .ranks = t->nranks, .threads = cfg->threads, .batch = cfg->batch,
        .micro_batch = cfg->micro_batch, .steps_total = t->total_steps,
        .steps_done = t->steps_done_here, .start_step = t->start_step,
        .steps_per_epoch = t->sched.steps_per_epoch, .wall_seconds = wc_now() - t->t_start,
        .train_seconds = t->steps_done_here > 0 ? wc_now() - t->t_steps : 0,
        .compute_seconds = t->compute_seconds, .reduce_seconds = t->reduce_seconds,
        .val_seconds = t->val_seconds, .io_wait_seconds = t->rd ? wc_reader_wait_seconds(t->rd) : 0,
        .ckpt_seconds = t->ckpt_seconds, .ckpts_written = t->ckpts_written,
        .ckpt_bytes = t->ckpt_bytes_last, .redo_steps = t->redo_count, .last_loss = t->last_loss,
        .have_val = t->have_val, .have_oracle = t->have_oracle, .val = t->last_val,
        .oracle = t->last_oracle, .flops_per_sample = t->net ? 3 * t->net->flops_forward : 0,
        .planned_bytes = t->planned_bytes, .baseline_bytes = t->baseline_bytes,
        .data_bytes = t->rd ? wc_reader_bytes_held(t->rd) : 0,
        .gdal_cache_bytes = wc_raster_cache_used(), .status = status};
    snprintf(sum.arch, sizeof sum.arch, "%s", t->net ? t->net->arch : cfg->model);
    if (t->rd) wc_reader_counts(t->rd, &sum.patches_read, &sum.bytes_read);
    if (t->start_step < t->total_steps ? t->steps_done_here > 0 : ran_pending)
        wc_report_finish(&sum, cfg->out_dir, cfg->baseline);
    if (t->jsonl) fclose(t->jsonl);
    wc_reader_destroy(t->rd);
    wc_schedule_free(&t->sched);
    free(t->y), free(t->oracle), free(t->valid), free(t->ids), free((void *)t->held);
    free(t->acc), free(t->oracle_acc);
    wc_reducer_destroy(t->red);
    wc_optim_destroy(t->opt);
    wc_net_destroy(t->net);
    wc_dataset_close(ds);
    (void)step;
    return status;
}
