/* snapshot.h: what a checkpoint holds, and the one module that writes and reads it.
 *
 * A snapshot is a training run's whole state at a step boundary: its provenance, the settings
 * and the data it must be resumed with, the network, the input channels and their
 * normalization, the parameters, the optimizer's moments and the counters that make a resume
 * exact. The container (ckpt.h) stores it as named sections; this module owns the section
 * names, encodes every field explicitly little-endian with fixed widths (docs/checkpoint.md
 * describes this code, not a compiler's struct layout), and checks every field of a file it
 * reads against its bounds and against the sizes the file really has before anything is
 * allocated or copied. A snapshot that fails a check is "not usable: <reason>", exactly like a
 * CRC mismatch, and a resume falls back to the previous checkpoint.
 *
 * Ownership: a snapshot filled by the trainer for writing borrows its buffers (the network's
 * parameters, the optimizer's moments); one decoded from a file owns copies of them and is
 * released with wc_snapshot_free.
 *
 * Not here: the container's format and atomic writing (ckpt.c), what the trainer does with the
 * state (train.c), MPI. */
#ifndef WILDCPU_SNAPSHOT_H
#define WILDCPU_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <float.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/net.h"
#include "wildcpu/reduce.h"

/* Bounds a readable snapshot respects (a file beyond them is corrupt or hostile). */
#define WC_SNAPSHOT_MAX_TEXT     (1 << 20) /* bytes of any text section */
#define WC_SNAPSHOT_MAX_FEATURES 65536     /* input channels */
#define WC_SNAPSHOT_MAX_TENSORS  65536
/* The reducer's fixed-point exponents: all exponent_for (reduce.c) can produce, 62 -
 * WC_REDUCE_HEADROOM_BITS - ceil(log2(micro-batches)) - k for a largest |gradient| below 2^k,
 * a float's: k from -148 (the least subnormal, 2^-149) to FLT_MAX_EXP (128), and at most 31
 * for the micro-batches, an int. So [-113, 194]: an exponent beyond it is no state of a run,
 * and one far below it (a crafted -1100) unscales a sum by 2^1100, an infinity that stopped the
 * run as "diverged" and blamed the learning rate. */
#define WC_SNAPSHOT_EXPONENT_MIN (62 - WC_REDUCE_HEADROOM_BITS - 31 - FLT_MAX_EXP)
#define WC_SNAPSHOT_EXPONENT_MAX (62 - WC_REDUCE_HEADROOM_BITS - (FLT_MIN_EXP - FLT_MANT_DIG + 1))

/* The meta record's key marking a checkpoint whose normalization is of band values, packed
 * bands unpacked (raster.h, wc_band_value): "band_values=unpacked". Earlier versions normalized
 * the stored values, so their checkpoints are refused for packed bands (bandmap.c); for
 * unpacked bands the two are the same. */
#define WC_META_BAND_VALUES "band_values"
/* The meta record's key of the kernels the run's steps were computed with, session after
 * session (wc_run_summary.kernels): a resume on other kernels is warned about, as it is not
 * bitwise the run that never stopped. Absent from checkpoints before 2026-12-05. */
#define WC_META_KERNELS "kernels"
/* The meta record's key of the input channels (1-based, in order, separated by ':') that were
 * constant over the training pixels, which every map then feeds as 0 (wc_feature_inv_std):
 * "constant=3:7"; absent when none was, and from checkpoints before 2026-12-06 (whose maps fed
 * such a channel's values to weights that never learned). */
#define WC_META_CONSTANT "constant"

typedef struct wc_snapshot {
    /* texts, NUL-terminated: key=value records (util.h) but for spec and metrics */
    const char *meta;        /* provenance: version, time, ranks, threads, arch, loss, ... */
    const char *config;      /* the settings a resume must be run with */
    const char *fingerprint; /* the training data */
    const char *spec;        /* the network spec (net.h) */
    const char *metrics;     /* the last validation's JSON members ("" when none) */
    /* input channels */
    int nfeat;
    const char *const *feat_names; /* (nfeat) band descriptions, in input-channel order */
    const double *mean, *std;      /* (nfeat) */
    /* training state */
    int64_t step;        /* optimizer steps done; equals the container's header step */
    int64_t epoch;       /* completed epochs */
    int64_t epoch_pos;   /* samples of the current epoch already used */
    int64_t optim_step;  /* optimizer updates applied */
    int64_t ranks;       /* of the run that wrote it (for information) */
    int calibrated;      /* the reducer's scales are set */
    int val_pending;     /* the validation after step `step` did not run (a stop during
                          * it): a resume runs it first */
    double best_auc_pr;  /* the best validation AUC-PR so far (-1: none yet) ... */
    int64_t best_step;   /* ... and the step it came after (best.wcp holds that state) */
    double log_loss_sum; /* the progress line's pending loss (meta; 0 when absent): */
    long log_loss_steps; /* its sum, finite, over this many steps, 0 to step */
    int ntensors;
    const int32_t *exponent; /* (ntensors) the reducer's per-tensor fixed-point exponents */
    size_t nparams;
    const float *params;  /* (nparams) */
    const float *optim_m; /* (nparams) AdamW's first moment or SGD's momentum */
    const float *optim_v; /* (nparams) AdamW's second moment; NULL for SGD */
    void *owned;          /* a decoded snapshot's allocations (private) */
} wc_snapshot;

/* Writes s as DIR/ckpt-<step>.wcp (atomically, see ckpt.h), keeping the newest `keep`, or as
 * DIR/name when name is not NULL (WC_CKPT_BEST, never pruned). Refuses,
 * with a message, a snapshot with non-finite parameters, moments or normalization: a diverged
 * state is never checkpointed. seconds and bytes (may be NULL) receive the write's time and
 * size. */
int wc_snapshot_write(const char *dir, const char *name, const wc_snapshot *s, int keep,
                      double *seconds, size_t *bytes);

/* Decodes and checks ck's sections into s (owned; free with wc_snapshot_free). Every section is
 * checked, also those a reader does not use (prediction has no use for the optimizer's moments):
 * a checkpoint is valid or not, for every command alike. Returns WC_ERR with the reason in why: a
 * missing or oversized section, text with a NUL byte, an empty or oversized feature name, a feature
 * count that disagrees with the normalization, a non-finite mean, a std that is not finite and
 * positive, a step that disagrees with the header, an optimizer step that is not the step,
 * counters or exponents out of their bounds, a pending loss that is not finite or over more
 * steps than done, a parameter or moment section whose size is not the parameters',
 * non-finite parameters or moments, a negative second moment. */
int wc_snapshot_decode(const wc_ckpt *ck, wc_snapshot *s, char *why, size_t why_size);
void wc_snapshot_free(wc_snapshot *s);

/* The network a snapshot describes, built from its spec for micro-batches of max_N samples of
 * H x W (0: the training patch size) in `mode` (net.h), with the snapshot's parameters. NULL
 * with the reason in why when the spec does not build or its parameter count is not the
 * snapshot's. */
wc_net *wc_snapshot_build_net(const wc_snapshot *s, int max_N, int H, int W, int mode, char *why,
                              size_t why_size);

/* The training patch side the snapshot's config records (0 when absent or invalid). */
int wc_snapshot_patch(const wc_snapshot *s);

/* A wc_ckpt_check (ckpt.h) for wc_ckpt_latest / wc_ckpt_resolve: decodes and builds the network
 * to check the parameter count, leaving the decoded snapshot in *(wc_snapshot *)ctx (freed and
 * replaced on every call; the caller frees the last one). */
int wc_snapshot_check(const wc_ckpt *ck, void *ctx, char *why, size_t why_size);

/* The input channels the meta record's WC_META_CONSTANT list names, into constant (nfeat flags,
 * all 0 when it names none). WC_ERR, with the reason in why, for an entry that is not an input
 * channel. */
int wc_snapshot_constant(const wc_snapshot *s, uint8_t *constant, char *why, size_t size);

/* Whether a best.wcp holding the state after step held_step, whose best AUC-PR is held_auc, is an
 * older best than a run knows of (its best after known_step, AUC-PR known_auc; known_step < 0:
 * none yet): a run only ever replaces best.wcp by a better validation, so an older one is a copy
 * put back from outside (a backup); a better one was written after what the run knows (the
 * checkpoints since were lost) and is its best. */
static inline int wc_best_is_older(int64_t held_step, double held_auc, int64_t known_step,
                                   double known_auc) {
    return known_step >= 0 && !(held_auc > known_auc) &&
           (held_step != known_step || held_auc != known_auc);
}

/* Whether a run directory's best.wcp (best) is not the best of the run its newest usable
 * checkpoint (newest) belongs to: trained on other data, written with other settings, holding
 * another network, or an older best than newest knows of (a copy put back from outside; a
 * better one, written after newest, is the run's). 1 with the reason in why, else 0. What
 * training refuses at a resume, for `predict` and `evaluate` given the directory. */
int wc_snapshot_best_foreign(const wc_snapshot *best, const wc_snapshot *newest, char *why,
                             size_t size);

/* What a checkpoint must match to be resumed by a run: the run's data fingerprint and settings
 * record (util.h's key=value records), its network's parameter and tensor counts, and whether
 * its optimizer keeps a second moment. */
typedef struct wc_resume_match {
    const char *fingerprint, *config;
    size_t nparams;
    int ntensors;
    int need_optim_v;
    long total_steps; /* the run's: a checkpoint beyond them is of no run with these settings */
    /* the run's input channels, named in a message about vector pairs (augment=8:2/3 counts
     * channels from 0) */
    const char *const *feat_names;
    int nfeat;
} wc_resume_match;

/* The newest checkpoint of dir a resume can use (docs/checkpoint.md, "Which checkpoint a resume
 * takes"): one that fails a check, or claims this run's data and settings but holds another
 * network or optimizer state, is "not usable" and the previous one is tried. Returns 1 with s
 * (owned) and *path (caller frees) filled; 0 when dir holds no checkpoint (a fresh start); -1
 * after a message when checkpoints exist but none is usable (never a silent fresh start) or
 * when the newest usable one is of other data or settings (the difference named). */
int wc_snapshot_find_resume(const char *dir, const wc_resume_match *m, wc_snapshot *s, char **path);

/* Whether a run matching m can resume from s, a checked snapshot (wc_snapshot_check): WC_OK
 * when it holds m's network and optimizer state at a step within m's run, or when it claims
 * other data or settings (wc_snapshot_find_resume then refuses it, naming the difference);
 * WC_ERR with why when a resume passes it over as not usable. The one rule of both the resume
 * and `wildcpu info`'s "a rerun resumes from" (with wc_snapshot_own_match). */
int wc_snapshot_resumable(const wc_snapshot *s, const wc_resume_match *m, char *why,
                          size_t why_size);

/* The match of a rerun of the command that wrote s (its data, settings and network as s records
 * them; AdamW's second moment needed when its config says optimizer=adamw; its config's
 * total_steps), for saying what such a rerun does without running it. */
void wc_snapshot_own_match(const wc_snapshot *s, wc_resume_match *m);

/* The sections a snapshot is stored in, for tools that list them (wildcpu info). */
#define WC_SECTION_META        "meta"
#define WC_SECTION_CONFIG      "config"
#define WC_SECTION_FINGERPRINT "fingerprint"
#define WC_SECTION_SPEC        "spec"
#define WC_SECTION_FEATURES    "features"
#define WC_SECTION_NORM        "norm"
#define WC_SECTION_STATE       "state"
#define WC_SECTION_PARAMS      "params"
#define WC_SECTION_OPTIM_M     "optim_m"
#define WC_SECTION_OPTIM_V     "optim_v"
#define WC_SECTION_METRICS     "metrics"
#define WC_SECTION_PROGRESS    "progress"

#endif
