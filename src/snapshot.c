/* snapshot.c: a checkpoint's sections, written and read in one place; see snapshot.h and
 * docs/checkpoint.md for the layout of every section. */
#include "wildcpu/snapshot.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wildcpu/augment.h"
#include "wildcpu/dataset.h"
#include "wildcpu/files.h"
#include "wildcpu/le.h"
#include "wildcpu/raster.h"
#include "wildcpu/util.h"

/* The `state` section: 8 int64 then ntensors int32, little-endian. */
enum {
    ST_STEP,
    ST_EPOCH,
    ST_EPOCH_POS,
    ST_OPTIM_STEP,
    ST_CALIBRATED,
    ST_NTENSORS,
    ST_NFEAT,
    ST_RANKS,
    ST_COUNT
};
#define STATE_BYTES(nt) (8 * (size_t)ST_COUNT + 4 * (size_t)(nt))

/* Index of the first non-finite value, or n. */
static size_t first_nonfinite_f32(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return i;
    return n;
}

/* ---- writing ----------------------------------------------------------------------------- */

static int check_finite(const char *what, const float *v, size_t n) {
    size_t bad = v ? first_nonfinite_f32(v, n) : n;
    if (bad == n) return WC_OK;
    wc_error("refusing to write a checkpoint whose %s are not finite (element %zu is %g): the "
             "previous checkpoints are kept",
             what, bad, (double)v[bad]);
    return WC_ERR;
}

int wc_snapshot_write(const char *dir, const char *name, const wc_snapshot *s, int keep,
                      double *seconds, size_t *bytes) {
    WC_ASSERT(s->nfeat >= 1 && s->ntensors >= 0 && s->params && s->optim_m);
    for (int c = 0; c < s->nfeat; c++)
        if (!isfinite(s->mean[c]) || !(s->std[c] > 0) || !isfinite(s->std[c])) {
            wc_error("refusing to write a checkpoint: feature %d (%s) has mean %g, std %g", c + 1,
                     s->feat_names[c], s->mean[c], s->std[c]);
            return WC_ERR;
        }
    if (check_finite("parameters", s->params, s->nparams) != WC_OK ||
        check_finite("optimizer moments", s->optim_m, s->nparams) != WC_OK ||
        (s->optim_v && check_finite("optimizer moments", s->optim_v, s->nparams) != WC_OK))
        return WC_ERR;

    size_t names_size = 1;
    for (int c = 0; c < s->nfeat; c++) names_size += strlen(s->feat_names[c]) + 1;
    char *names = WC_ALLOC(names_size);
    size_t used = 0;
    for (int c = 0; c < s->nfeat; c++)
        used += (size_t)snprintf(names + used, names_size - used, "%s%s", c ? "," : "",
                                 s->feat_names[c]);
    unsigned char *norm = WC_ALLOC(16 * (size_t)s->nfeat);
    wc_le_put_f64s(norm, s->mean, (size_t)s->nfeat);
    wc_le_put_f64s(norm + 8 * (size_t)s->nfeat, s->std, (size_t)s->nfeat);
    unsigned char *state = WC_ALLOC(STATE_BYTES(s->ntensors));
    const int64_t st[ST_COUNT] = {[ST_STEP] = s->step,
                                  [ST_EPOCH] = s->epoch,
                                  [ST_EPOCH_POS] = s->epoch_pos,
                                  [ST_OPTIM_STEP] = s->optim_step,
                                  [ST_CALIBRATED] = s->calibrated,
                                  [ST_NTENSORS] = s->ntensors,
                                  [ST_NFEAT] = s->nfeat,
                                  [ST_RANKS] = s->ranks};
    for (int i = 0; i < ST_COUNT; i++) wc_le_put_u64(state + 8 * i, (uint64_t)st[i]);
    for (int t = 0; t < s->ntensors; t++)
        wc_le_put_u32(state + 8 * ST_COUNT + 4 * (size_t)t, (uint32_t)s->exponent[t]);
    const size_t pbytes = 4 * s->nparams;
    unsigned char *params = WC_ALLOC_FOR(pbytes, "a checkpoint's parameters"),
                  *m = WC_ALLOC_FOR(pbytes, "a checkpoint's moments");
    unsigned char *v = s->optim_v ? WC_ALLOC_FOR(pbytes, "a checkpoint's moments") : NULL;
    wc_le_put_f32s(params, s->params, s->nparams);
    wc_le_put_f32s(m, s->optim_m, s->nparams);
    if (v) wc_le_put_f32s(v, s->optim_v, s->nparams);
    const char *metrics = s->metrics ? s->metrics : "";
    char progress[160];
    /* %.17g: the best AUC-PR reads back to the same bits, so a resumed run selects exactly as
     * the uninterrupted one */
    snprintf(progress, sizeof progress, "val_pending=%d;best_auc_pr=%.17g;best_step=%lld",
             s->val_pending ? 1 : 0, s->best_auc_pr, (long long)s->best_step);
    wc_ckpt_section sec[] = {
        {WC_SECTION_META, s->meta, strlen(s->meta)},
        {WC_SECTION_CONFIG, s->config, strlen(s->config)},
        {WC_SECTION_FINGERPRINT, s->fingerprint, strlen(s->fingerprint)},
        {WC_SECTION_SPEC, s->spec, strlen(s->spec)},
        {WC_SECTION_FEATURES, names, used},
        {WC_SECTION_NORM, norm, 16 * (size_t)s->nfeat},
        {WC_SECTION_STATE, state, STATE_BYTES(s->ntensors)},
        {WC_SECTION_PARAMS, params, pbytes},
        {WC_SECTION_OPTIM_M, m, pbytes},
        {WC_SECTION_OPTIM_V, v, v ? pbytes : 0},
        {WC_SECTION_METRICS, metrics, strlen(metrics)},
        {WC_SECTION_PROGRESS, progress, strlen(progress)},
    };
    int rc = wc_ckpt_write(dir, name, (long)s->step, sec, (int)(sizeof sec / sizeof sec[0]), keep,
                           seconds, bytes);
    free(names), free(norm), free(state), free(params), free(m), free(v);
    return rc;
}

/* ---- reading ----------------------------------------------------------------------------- */

/* Everything a decoded snapshot owns. */
typedef struct owned {
    char *meta, *config, *fingerprint, *spec, *metrics, *names_text, *progress;
    char **names;
    int nnames; /* entries of names (calloc'ed: those not filled yet are NULL) */
    double *mean, *std;
    int32_t *exponent;
    float *params, *optim_m, *optim_v;
} owned;

/* A text section as a NUL-terminated copy: present (unless optional), at most
 * WC_SNAPSHOT_MAX_TEXT bytes, without NUL bytes. Its control characters and bytes that are not
 * UTF-8 read as '?' (wc_text_sanitize), here, once, so that no reader prints a crafted file's
 * escape sequences or writes them into a map's metadata; wildcpu writes none (the records of a
 * run are sanitized alike before they are written or compared). Not the spec, which keeps its
 * CR-LF line ends and its comments (anything): net.h's parser refuses any other byte, and
 * nothing shows it. */
static int text(const wc_ckpt *ck, const char *name, int optional, char **out, char *why,
                size_t why_size) {
    const wc_ckpt_section *s = wc_ckpt_find(ck, name);
    if (!s && !optional) return wc_reason(why, why_size, "section '%s' is missing", name);
    size_t n = s ? s->size : 0;
    if (n > WC_SNAPSHOT_MAX_TEXT)
        return wc_reason(why, why_size, "section '%s' is %zu bytes, more than a text may hold (%d)",
                         name, n, WC_SNAPSHOT_MAX_TEXT);
    if (n && memchr(s->data, '\0', n))
        return wc_reason(why, why_size, "section '%s' holds a NUL byte", name);
    *out = WC_ALLOC(n + 1);
    if (n) memcpy(*out, s->data, n);
    (*out)[n] = '\0';
    /* the feature names are refused for a control character first (feature_names) */
    if (strcmp(name, WC_SECTION_SPEC) != 0 && strcmp(name, WC_SECTION_FEATURES) != 0)
        wc_text_sanitize(*out);
    return WC_OK;
}

/* The feature names: comma-separated, each non-empty, shorter than a band name may be, without
 * control characters (raster.c cleans band descriptions the same way when it opens them). */
static int feature_names(owned *o, int *nfeat, char *why, size_t why_size) {
    const char *t = o->names_text;
    int n = 1;
    for (const char *p = t; *p; p++) n += *p == ',';
    if (!*t || n > WC_SNAPSHOT_MAX_FEATURES)
        return wc_reason(why, why_size, "section 'features' lists %d names (1 to %d expected)",
                         *t ? n : 0, WC_SNAPSHOT_MAX_FEATURES);
    o->names = WC_CALLOC((size_t)n, sizeof(char *));
    o->nnames = n; /* freed by this count, also when a later name is refused */
    const char *p = t;
    for (int i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || len >= WC_BAND_NAME_MAX)
            return wc_reason(why, why_size, "feature %d's name is %zu bytes (1 to %d expected)",
                             i + 1, len, WC_BAND_NAME_MAX - 1);
        for (size_t k = 0; k < len; k++)
            if (wc_band_name_control((unsigned char)p[k]))
                return wc_reason(why, why_size, "feature %d's name holds a control character",
                                 i + 1);
        o->names[i] = WC_ALLOC(len + 1);
        memcpy(o->names[i], p, len);
        o->names[i][len] = '\0';
        /* C1 controls and bytes that are not UTF-8, as raster.c reads band descriptions */
        wc_text_sanitize(o->names[i]);
        p += len + 1;
    }
    *nfeat = n;
    return WC_OK;
}

static int normalization(const wc_ckpt *ck, owned *o, int nfeat, char *why, size_t why_size) {
    const wc_ckpt_section *s = wc_ckpt_find(ck, WC_SECTION_NORM);
    if (!s || s->size != 16 * (size_t)nfeat)
        return wc_reason(why, why_size, "section 'norm' is %zu bytes, %d features need %zu",
                         s ? s->size : 0, nfeat, 16 * (size_t)nfeat);
    o->mean = WC_ALLOC(sizeof(double) * nfeat);
    o->std = WC_ALLOC(sizeof(double) * nfeat);
    wc_le_get_f64s(o->mean, s->data, (size_t)nfeat);
    wc_le_get_f64s(o->std, (const unsigned char *)s->data + 8 * (size_t)nfeat, (size_t)nfeat);
    for (int c = 0; c < nfeat; c++)
        if (!isfinite(o->mean[c]) || !isfinite(o->std[c]) || !(o->std[c] > 0))
            return wc_reason(why, why_size, "feature %d (%s) has mean %g and std %g", c + 1,
                             o->names[c], o->mean[c], o->std[c]);
    return WC_OK;
}

/* A float32 array section of exactly n values (n = 0: any multiple of 4, which sets n), all
 * finite, and >= 0 when nonneg. */
static int floats(const wc_ckpt *ck, const char *name, size_t *n, int nonneg, float **out,
                  char *why, size_t why_size) {
    const wc_ckpt_section *s = wc_ckpt_find(ck, name);
    if (!s) return wc_reason(why, why_size, "section '%s' is missing", name);
    if (*n == 0 && (s->size == 0 || s->size % 4))
        return wc_reason(why, why_size, "section '%s' is %zu bytes, not a whole number of float32",
                         name, s->size);
    if (*n == 0) *n = s->size / 4;
    if (s->size != 4 * *n)
        return wc_reason(why, why_size, "section '%s' is %zu bytes, the parameters need %zu", name,
                         s->size, 4 * *n);
    *out = WC_ALLOC(s->size);
    wc_le_get_f32s(*out, s->data, *n);
    size_t bad = first_nonfinite_f32(*out, *n);
    if (bad < *n)
        return wc_reason(why, why_size, "section '%s' holds a non-finite value at element %zu",
                         name, bad);
    for (size_t i = 0; nonneg && i < *n; i++)
        if ((*out)[i] < 0)
            return wc_reason(why, why_size, "section '%s' holds a negative value at element %zu",
                             name, i);
    return WC_OK;
}

/* The training counters, against each other and the header. */
static int state(const wc_ckpt *ck, wc_snapshot *s, owned *o, char *why, size_t why_size) {
    const wc_ckpt_section *sec = wc_ckpt_find(ck, WC_SECTION_STATE);
    if (!sec || sec->size < STATE_BYTES(0) || (sec->size - STATE_BYTES(0)) % 4)
        return wc_reason(why, why_size, "section 'state' is %zu bytes (64 + 4 per tensor expected)",
                         sec ? sec->size : 0);
    const unsigned char *p = sec->data;
    int64_t v[ST_COUNT];
    for (int i = 0; i < ST_COUNT; i++) v[i] = (int64_t)wc_le_get_u64(p + 8 * i);
    const int64_t nt = (int64_t)((sec->size - STATE_BYTES(0)) / 4);
    if (v[ST_NTENSORS] != nt || nt > WC_SNAPSHOT_MAX_TENSORS)
        return wc_reason(why, why_size, "section 'state' records %lld tensors but holds %lld",
                         (long long)v[ST_NTENSORS], (long long)nt);
    if (v[ST_STEP] != (int64_t)ck->step)
        return wc_reason(why, why_size, "section 'state' says step %lld, the header %ld",
                         (long long)v[ST_STEP], ck->step);
    /* Every step applies one update (a recomputed step is applied once), so the two are equal
     * in every checkpoint wildcpu writes; a smaller one would restart the learning-rate
     * schedule and AdamW's bias correction on the resumed run without a word. */
    if (v[ST_OPTIM_STEP] != v[ST_STEP])
        return wc_reason(why, why_size,
                         "section 'state' says optimizer step %lld at step %lld "
                         "(the two are equal in every checkpoint)",
                         (long long)v[ST_OPTIM_STEP], (long long)v[ST_STEP]);
    if (v[ST_EPOCH] < 0 || v[ST_EPOCH] > v[ST_STEP] || v[ST_EPOCH_POS] < 0 || v[ST_RANKS] < 1 ||
        v[ST_RANKS] > (1 << 24) || (v[ST_CALIBRATED] != 0 && v[ST_CALIBRATED] != 1))
        return wc_reason(why, why_size,
                         "section 'state' holds counters out of their bounds (epoch %lld, "
                         "position %lld, ranks %lld, calibrated %lld at step %lld)",
                         (long long)v[ST_EPOCH], (long long)v[ST_EPOCH_POS], (long long)v[ST_RANKS],
                         (long long)v[ST_CALIBRATED], (long long)v[ST_STEP]);
    if (v[ST_NFEAT] != s->nfeat)
        return wc_reason(why, why_size, "section 'state' says %lld features, 'features' lists %d",
                         (long long)v[ST_NFEAT], s->nfeat);
    o->exponent = WC_ALLOC(sizeof(int32_t) * (size_t)(nt ? nt : 1));
    for (int64_t t = 0; t < nt; t++) {
        o->exponent[t] = (int32_t)wc_le_get_u32(p + 8 * ST_COUNT + 4 * t);
        if (o->exponent[t] < WC_SNAPSHOT_EXPONENT_MIN || o->exponent[t] > WC_SNAPSHOT_EXPONENT_MAX)
            return wc_reason(why, why_size,
                             "section 'state': tensor %lld's exponent %d is out of [%d, %d], "
                             "the reducer's range",
                             (long long)t, o->exponent[t], WC_SNAPSHOT_EXPONENT_MIN,
                             WC_SNAPSHOT_EXPONENT_MAX);
    }
    s->epoch = v[ST_EPOCH], s->epoch_pos = v[ST_EPOCH_POS], s->optim_step = v[ST_OPTIM_STEP];
    s->ranks = v[ST_RANKS], s->calibrated = (int)v[ST_CALIBRATED], s->ntensors = (int)nt;
    s->exponent = o->exponent;
    return WC_OK;
}

/* The progress line's pending loss in `meta` (absent in files of earlier versions: none): a
 * finite sum over 0 to step steps. A resume prints their mean on its first progress line and
 * logs it to metrics.jsonl, where a NaN became "loss":null and a negative count a wrong mean. */
static int pending_loss(const char *meta, wc_snapshot *s, char *why, size_t why_size) {
    char sum[64], steps[32];
    wc_kv_get(meta, "log_loss_sum", sum, sizeof sum);
    wc_kv_get(meta, "log_loss_steps", steps, sizeof steps);
    char *e1 = NULL, *e2 = NULL;
    s->log_loss_sum = *sum ? strtod(sum, &e1) : 0;
    const long long n = *steps ? strtoll(steps, &e2, 10) : 0;
    if ((e1 && *e1) || !isfinite(s->log_loss_sum))
        return wc_reason(why, why_size,
                         "section 'meta' says log_loss_sum=%s (a finite number expected)", sum);
    if ((e2 && *e2) || n < 0 || n > s->step)
        return wc_reason(why, why_size,
                         "section 'meta' says log_loss_steps=%s at step %lld (0 to the step "
                         "expected)",
                         steps, (long long)s->step);
    s->log_loss_steps = (long)n;
    return WC_OK;
}

/* The counts `meta` repeats for a reader of its record (info prints it): each, when there,
 * must be the one the sections hold, or info showed a forged nparams=999 beside 13 parameters
 * and called the file valid. */
static int meta_counts(const char *meta, const wc_snapshot *s, char *why, size_t why_size) {
    const struct {
        const char *key, *held_by;
        long long value;
    } counts[] = {{"step", "the header", (long long)s->step},
                  {"epoch", "section 'state'", (long long)s->epoch},
                  {"ranks", "section 'state'", (long long)s->ranks},
                  {"nparams", "section 'params'", (long long)s->nparams}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        char v[32];
        wc_kv_get(meta, counts[i].key, v, sizeof v);
        if (!*v) continue; /* a record of another version may lack it */
        char *end;
        errno = 0;
        const long long n = strtoll(v, &end, 10);
        if (*end || end == v || errno || n != counts[i].value)
            return wc_reason(why, why_size, "section 'meta' says %s=%s, %s holds %lld",
                             counts[i].key, v, counts[i].held_by, counts[i].value);
    }
    return WC_OK;
}

/* The `progress` record and the pending loss in `meta`, both bounded by the step. Checked after
 * `state`: a header whose step alone is wrong is reported as such, not as a best model or a
 * pending loss beyond it (a header of step 2 over a state of step 3 was "an impossible best
 * model (... at 3)"). */
static int progress(owned *o, wc_snapshot *s, char *why, size_t why_size) {
    /* `progress` came with a later version of the trainer: absent means nothing pending */
    char pending[8];
    wc_kv_get(o->progress, "val_pending", pending, sizeof pending);
    if (*pending && strcmp(pending, "0") != 0 && strcmp(pending, "1") != 0) {
        wc_reason(why, why_size, "section 'progress' says val_pending=%s", pending);
        return WC_ERR;
    }
    s->val_pending = strcmp(pending, "1") == 0;
    char best[64], best_step[32];
    wc_kv_get(o->progress, "best_auc_pr", best, sizeof best);
    wc_kv_get(o->progress, "best_step", best_step, sizeof best_step);
    char *e1 = NULL, *e2 = NULL;
    s->best_auc_pr = *best ? strtod(best, &e1) : -1;
    s->best_step = *best_step ? strtoll(best_step, &e2, 10) : -1;
    if ((e1 && *e1) || (e2 && *e2) ||
        !(s->best_auc_pr == -1 || (s->best_auc_pr >= 0 && s->best_auc_pr <= 1)) ||
        s->best_step < -1 || s->best_step > s->step) {
        wc_reason(why, why_size, "section 'progress' holds an impossible best model (%s at %s)",
                  best, best_step);
        return WC_ERR;
    }
    if (pending_loss(o->meta, s, why, why_size) != WC_OK) return WC_ERR;
    return meta_counts(o->meta, s, why, why_size);
}

int wc_snapshot_decode(const wc_ckpt *ck, wc_snapshot *s, char *why, size_t why_size) {
    memset(s, 0, sizeof *s);
    owned *o = WC_CALLOC(1, sizeof *o);
    s->owned = o;
    s->step = ck->step;
    int rc = WC_ERR;
    if (text(ck, WC_SECTION_META, 0, &o->meta, why, why_size) != WC_OK ||
        text(ck, WC_SECTION_CONFIG, 0, &o->config, why, why_size) != WC_OK ||
        text(ck, WC_SECTION_FINGERPRINT, 0, &o->fingerprint, why, why_size) != WC_OK ||
        text(ck, WC_SECTION_SPEC, 0, &o->spec, why, why_size) != WC_OK ||
        text(ck, WC_SECTION_METRICS, 1, &o->metrics, why, why_size) != WC_OK ||
        text(ck, WC_SECTION_FEATURES, 0, &o->names_text, why, why_size) != WC_OK ||
        text(ck, WC_SECTION_PROGRESS, 1, &o->progress, why, why_size) != WC_OK)
        goto out;
    s->meta = o->meta, s->config = o->config, s->fingerprint = o->fingerprint;
    s->spec = o->spec, s->metrics = o->metrics;
    if (feature_names(o, &s->nfeat, why, why_size) != WC_OK) goto out;
    s->feat_names = (const char *const *)o->names;
    if (normalization(ck, o, s->nfeat, why, why_size) != WC_OK) goto out;
    s->mean = o->mean, s->std = o->std;
    if (wc_snapshot_patch(s) == 0) {
        wc_reason(why, why_size, "section 'config' has no valid patch size");
        goto out;
    }
    s->nparams = 0;
    if (floats(ck, WC_SECTION_PARAMS, &s->nparams, 0, &o->params, why, why_size) != WC_OK) goto out;
    s->params = o->params;
    if (state(ck, s, o, why, why_size) != WC_OK ||
        floats(ck, WC_SECTION_OPTIM_M, &s->nparams, 0, &o->optim_m, why, why_size) != WC_OK)
        goto out;
    s->optim_m = o->optim_m;
    const wc_ckpt_section *v = wc_ckpt_find(ck, WC_SECTION_OPTIM_V);
    if (v && v->size) { /* SGD keeps no second moment: the section is empty */
        if (floats(ck, WC_SECTION_OPTIM_V, &s->nparams, 1, &o->optim_v, why, why_size) != WC_OK)
            goto out;
        s->optim_v = o->optim_v;
    }
    if (progress(o, s, why, why_size) != WC_OK) goto out;
    rc = WC_OK;
out:
    if (rc != WC_OK) wc_snapshot_free(s);
    return rc;
}

void wc_snapshot_free(wc_snapshot *s) {
    if (!s) return;
    owned *o = s->owned;
    if (o) {
        free(o->meta), free(o->config), free(o->fingerprint), free(o->spec), free(o->metrics);
        free(o->progress);
        for (int i = 0; o->names && i < o->nnames; i++) free(o->names[i]);
        free(o->names), free(o->names_text);
        free(o->mean), free(o->std), free(o->exponent);
        free(o->params), free(o->optim_m), free(o->optim_v);
        free(o);
    }
    memset(s, 0, sizeof *s);
}

int wc_snapshot_patch(const wc_snapshot *s) {
    char buf[32];
    wc_kv_get(s->config, "patch", buf, sizeof buf);
    char *end;
    long p = strtol(buf, &end, 10);
    return *buf && !*end && p >= 4 && p <= 4096 ? (int)p : 0;
}

/* The network's name (meta arch=: a --model path as typed, escaped as a record's value). */
static void snapshot_arch(const wc_snapshot *s, char *arch, size_t size) {
    wc_kv_get_path(s->meta, "arch", arch, size);
    wc_text_sanitize(arch); /* a character cut at the last byte, or an escaped control byte */
}

wc_net *wc_snapshot_build_net(const wc_snapshot *s, int max_N, int H, int W, int mode, char *why,
                              size_t why_size) {
    char arch[64];
    snapshot_arch(s, arch, sizeof arch);
    const int patch = wc_snapshot_patch(s);
    wc_net *net = wc_net_create(*arch ? arch : "model", s->spec, s->nfeat, max_N, H ? H : patch,
                                W ? W : patch, mode);
    if (!net) {
        wc_reason(why, why_size,
                  "its network spec does not build for %d inputs of %dx%d (see above)", s->nfeat,
                  W ? W : patch, H ? H : patch);
        return NULL;
    }
    if (net->nparams != s->nparams || net->ntensors != s->ntensors) {
        wc_reason(why, why_size,
                  "its network has %zu parameters in %d tensors, the checkpoint holds "
                  "%zu in %d",
                  net->nparams, net->ntensors, s->nparams, s->ntensors);
        wc_net_destroy(net);
        return NULL;
    }
    memcpy(net->params, s->params, sizeof(float) * s->nparams);
    return net;
}

int wc_snapshot_check(const wc_ckpt *ck, void *ctx, char *why, size_t why_size) {
    wc_snapshot *s = ctx;
    wc_snapshot_free(s);
    if (wc_snapshot_decode(ck, s, why, why_size) != WC_OK) return WC_ERR;
    /* the spec is checked without building the network: a reader that only inspects the file
     * (info, a resume's choice) should not allocate activations for it */
    char arch[64], where[96];
    snapshot_arch(s, arch, sizeof arch);
    /* The parser names the spec's source in its messages: here the section, not the --model
     * the run was given (a file the user would look into in vain) */
    snprintf(where, sizeof where, "section 'spec' (%s)", *arch ? arch : "model");
    const int patch = wc_snapshot_patch(s);
    wc_net_facts f;
    int rc = WC_OK;
    if (!*s->spec)
        rc = wc_reason(why, why_size,
                       "section 'spec' is empty (a network needs an input and at "
                       "least one layer)");
    else if (wc_net_describe(where, s->spec, s->nfeat, patch, patch, &f) != WC_OK)
        rc = wc_reason(why, why_size,
                       "its network spec does not build for %d inputs of %dx%d "
                       "(see above)",
                       s->nfeat, patch, patch);
    else if (f.nparams != s->nparams || f.ntensors != s->ntensors)
        rc = wc_reason(why, why_size,
                       "its network has %zu parameters in %d tensors, the "
                       "checkpoint holds %zu in %d",
                       f.nparams, f.ntensors, s->nparams, s->ntensors);
    if (rc != WC_OK) wc_snapshot_free(s);
    return rc;
}

/* ---- resuming ---------------------------------------------------------------------------- */

typedef struct {
    wc_snapshot *snap;
    const wc_resume_match *m;
} resume_ctx;

static int compare_texts(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A training configuration record in the form two are compared in: the vector pairs of augment=
 * and rotate= ("8:8/9,2/3") in one order, since the order --vector-bands lists them in changes
 * nothing, and without model= when drop_model (the spec's hash says what the network is; the
 * name is a path as typed, ./small.spec or /runs/small.spec). Caller frees. */
static char *canonical_config(const char *kv, int drop_model) {
    /* model= is the first record and spec_hash= the second: the --model path is all that lies
     * between, also as written before it was escaped (before 2026-12-06: "model=a;b=1/s.spec"
     * read as model=a and a setting b, which the escaped record of a resume does not have) */
    const char *spec = strncmp(kv, "model=", 6) == 0 ? strstr(kv, ";spec_hash=") : NULL;
    char *escaped = NULL;
    if (spec && drop_model) {
        kv = spec + 1;
    } else if (spec && strcspn(kv + 6, ";=") < (size_t)(spec - kv - 6)) {
        char *path = wc_strdup(kv + 6);
        path[spec - kv - 6] = '\0';
        char *e = wc_kv_escape(path);
        escaped = WC_ALLOC(strlen(e) + strlen(spec) + 8);
        sprintf(escaped, "model=%s%s", e, spec);
        free(path), free(e);
        kv = escaped;
    }
    const size_t n = strlen(kv);
    char *out = WC_ALLOC(n + 1), *copy = wc_strdup(kv);
    out[0] = '\0';
    char *save = NULL;
    for (char *rec = strtok_r(copy, ";", &save); rec; rec = strtok_r(NULL, ";", &save)) {
        if (drop_model && strncmp(rec, "model=", 6) == 0) continue;
        char *colon = strchr(rec, ':');
        const int pairs = (strncmp(rec, "augment=", 8) == 0 || strncmp(rec, "rotate=", 7) == 0) &&
                          colon && colon[1];
        if (*out) strcat(out, ";");
        if (!pairs) {
            strcat(out, rec);
            continue;
        }
        char *list[WC_AUGMENT_MAX_PAIRS], *psave = NULL;
        int k = 0;
        *colon = '\0';
        for (char *p = strtok_r(colon + 1, ",", &psave); p && k < WC_AUGMENT_MAX_PAIRS;
             p = strtok_r(NULL, ",", &psave))
            list[k++] = p;
        qsort(list, (size_t)k, sizeof *list, compare_texts);
        strcat(out, rec);
        strcat(out, ":");
        for (int i = 0; i < k; i++) {
            if (i) strcat(out, ",");
            strcat(out, list[i]);
        }
    }
    free(copy), free(escaped);
    return out;
}

/* wc_kv_differs for two training configurations, as canonical_config puts them: a resume is
 * refused for a difference that changes the training, not for a spelling of the same one. */
static int config_differs(const char *now, const char *then, char *why, size_t size) {
    char a[64], b[64];
    wc_kv_get(now, "spec_hash", a, sizeof a);
    wc_kv_get(then, "spec_hash", b, sizeof b);
    const int same_spec = *a && strcmp(a, b) == 0;
    char *cn = canonical_config(now, same_spec), *ct = canonical_config(then, same_spec);
    const int differs = wc_kv_differs(cn, ct, why, size);
    free(cn);
    free(ct);
    return differs;
}

/* rec without the records of key (caller frees). */
static char *kv_without(const char *rec, const char *key) {
    char *out = WC_ALLOC(strlen(rec) + 1), *o = out;
    const size_t k = strlen(key);
    for (const char *p = rec; *p;) {
        const size_t n = strcspn(p, ";");
        if (!(n > k && strncmp(p, key, k) == 0 && p[k] == '=')) {
            if (o > out) *o++ = ';';
            memcpy(o, p, n), o += n;
        }
        p += n + (p[n] == ';');
    }
    *o = '\0';
    return out;
}

/* The value of key in a record, with the %XX escapes of a path undone (caller frees). */
static char *kv_path(const char *rec, const char *key) {
    char *v = WC_ALLOC(strlen(rec) + 1);
    wc_kv_get_path(rec, key, v, strlen(rec) + 1);
    return v;
}

/* wc_kv_differs for two data fingerprints. A label file is recorded as typed (labels=file:PATH,
 * relative to where the run started), which a resume started in another directory must type
 * otherwise: its labels_file (the path made absolute) says whether the two name one file, and
 * then the spelling is no difference. labels_file itself differs only where both files are
 * there and are two: a run directory moved with its data (the old absolute path gone) resumes
 * by the path as typed, as before labels_file; a checkpoint without one compares by it too. */
static int fingerprint_differs(const char *now, const char *then, char *why, size_t size) {
    char *file_now = kv_path(now, WC_FINGERPRINT_LABELS_FILE);
    char *file_then = kv_path(then, WC_FINGERPRINT_LABELS_FILE);
    char *labels_now = kv_path(now, "labels"), *labels_then = kv_path(then, "labels");
    const char *band_now = strstr(labels_now, ",band:"), *band_then = strstr(labels_then, ",band:");
    struct stat a, b;
    const int both_there =
        *file_now && *file_then && stat(file_now, &a) == 0 && stat(file_then, &b) == 0;
    const int one_file = *file_now && *file_then &&
                         (strcmp(file_now, file_then) == 0 || wc_same_file(file_now, file_then));
    const int same_band = strcmp(band_now ? band_now : "", band_then ? band_then : "") == 0;
    /* labels_file is compared only where it tells two files apart, labels (the path as typed)
     * only where it does not spell one file twice */
    const int keep_file = !one_file && both_there, keep_labels = !(one_file && same_band);
    char *file_kept_now = keep_file ? wc_strdup(now) : kv_without(now, WC_FINGERPRINT_LABELS_FILE);
    char *file_kept_then =
        keep_file ? wc_strdup(then) : kv_without(then, WC_FINGERPRINT_LABELS_FILE);
    char *cmp_now = keep_labels ? wc_strdup(file_kept_now) : kv_without(file_kept_now, "labels");
    char *cmp_then = keep_labels ? wc_strdup(file_kept_then) : kv_without(file_kept_then, "labels");
    const int differs = wc_kv_differs(cmp_now, cmp_then, why, size);
    free(file_now), free(file_then), free(labels_now), free(labels_then);
    free(file_kept_now), free(file_kept_then), free(cmp_now), free(cmp_then);
    return differs;
}

/* A wc_ckpt_check: the snapshot checks out and, when it claims the run's data and settings
 * (which wc_snapshot_find_resume then compares, refusing a difference), holds the run's network
 * and optimizer state. */
static int resume_check(const wc_ckpt *ck, void *ctx, char *why, size_t why_size) {
    const resume_ctx *c = ctx;
    if (wc_snapshot_check(ck, c->snap, why, why_size) != WC_OK) return WC_ERR;
    return wc_snapshot_resumable(c->snap, c->m, why, why_size);
}

void wc_snapshot_own_match(const wc_snapshot *s, wc_resume_match *m) {
    char optimizer[16], total[32];
    wc_kv_get(s->config, "optimizer", optimizer, sizeof optimizer);
    wc_kv_get(s->config, "total_steps", total, sizeof total);
    char *end;
    const long steps = strtol(total, &end, 10);
    *m = (wc_resume_match){.fingerprint = s->fingerprint,
                           .config = s->config,
                           .nparams = s->nparams,
                           .ntensors = s->ntensors,
                           .need_optim_v = strcmp(optimizer, "adamw") == 0,
                           /* a config without it (none wildcpu writes) bounds no step */
                           .total_steps = *total && !*end ? steps : LONG_MAX,
                           .feat_names = s->feat_names,
                           .nfeat = s->nfeat};
}

/* Whether s's inputs (its features section) are not m's features, in order: 1 with the first
 * difference said in out ("its input 'Fire' is no feature of this run"). */
static int inputs_differ(const wc_snapshot *s, const wc_resume_match *m, char *out, size_t size) {
    for (int c = 0; c < s->nfeat; c++) {
        int found = 0;
        for (int k = 0; k < m->nfeat && !found; k++)
            found = strcmp(s->feat_names[c], m->feat_names[k]) == 0;
        if (!found) {
            snprintf(out, size, "its input '%.63s' is no feature of this run", s->feat_names[c]);
            return 1;
        }
    }
    for (int k = 0; k < m->nfeat; k++) {
        int found = 0;
        for (int c = 0; c < s->nfeat && !found; c++)
            found = strcmp(s->feat_names[c], m->feat_names[k]) == 0;
        if (!found) {
            snprintf(out, size, "this run's feature '%.63s' is none of its inputs",
                     m->feat_names[k]);
            return 1;
        }
    }
    return 0;
}

int wc_snapshot_resumable(const wc_snapshot *s, const wc_resume_match *m, char *why,
                          size_t why_size) {
    char diff[8];
    if (fingerprint_differs(m->fingerprint, s->fingerprint, diff, sizeof diff) ||
        config_differs(m->config, s->config, diff, sizeof diff))
        return WC_OK; /* another run's: refused with the difference named */
    /* The same bands and settings, other inputs: the features were chosen by another rule than
     * this wildcpu's (since 2026-12-07 a band named like the labels but for case or blanks,
     * `Fire` beside `fire`, is left out). Only the parameter counts were named, which says
     * nothing of why a rerun of the same command cannot resume. Only where the counts differ,
     * which the parameters' check below refuses all the same: the message alone changes. */
    char input[160];
    if (m->feat_names && s->nfeat != m->nfeat && inputs_differ(s, m, input, sizeof input))
        return wc_reason(why, why_size,
                         "%s, on the same bands and settings: the wildcpu that "
                         "wrote it chose the features otherwise (a band named "
                         "like the labels but for case or blanks is a label band "
                         "since 2026-12-07); rerun with --fresh",
                         input);
    if (s->nparams != m->nparams || s->ntensors != m->ntensors)
        return wc_reason(why, why_size,
                         "it holds %zu parameters in %d tensors, this run's "
                         "network has %zu in %d",
                         s->nparams, s->ntensors, m->nparams, m->ntensors);
    if (m->need_optim_v && !s->optim_v)
        return wc_reason(why, why_size, "it holds no second moment (optim_v), which AdamW needs");
    /* Its config records the total steps and matched this run's, so a run with these settings
     * ends at them: a step beyond is no state of such a run (resumed, it said "100 of 8 steps
     * done" and stopped as finished, status 0). A rerun with fewer --steps on purpose differs
     * in total_steps and is refused above as other settings, naming it. */
    if (s->step > m->total_steps)
        return wc_reason(why, why_size,
                         "it is at step %lld, beyond the %ld steps of this run "
                         "(which its config records as its own total_steps)",
                         (long long)s->step, m->total_steps);
    return WC_OK;
}

int wc_snapshot_constant(const wc_snapshot *s, uint8_t *constant, char *why, size_t size) {
    memset(constant, 0, (size_t)s->nfeat);
    const size_t len = strlen(s->meta) + 1;
    char *list = WC_ALLOC(len);
    wc_kv_get(s->meta, WC_META_CONSTANT, list, len);
    int ok = 1;
    for (char *p = list; *p && ok;) {
        char *end;
        const long c = strtol(p, &end, 10);
        ok = end != p && c >= 1 && c <= s->nfeat && (*end == ':' || *end == '\0');
        if (ok) constant[c - 1] = 1, p = *end ? end + 1 : end;
    }
    if (!ok) {
        memset(constant, 0, (size_t)s->nfeat);
        snprintf(why, size,
                 "its meta record's " WC_META_CONSTANT "=%.40s names no input channel "
                 "of 1..%d",
                 list, s->nfeat);
    }
    free(list);
    return ok ? WC_OK : WC_ERR;
}

int wc_snapshot_best_foreign(const wc_snapshot *best, const wc_snapshot *newest, char *why,
                             size_t size) {
    char d[2048];
    if (fingerprint_differs(newest->fingerprint, best->fingerprint, d, sizeof d))
        snprintf(why, size, "it was trained on other data than the newest checkpoint (%s)", d);
    else if (config_differs(newest->config, best->config, d, sizeof d))
        snprintf(why, size, "it was written with other settings than the newest checkpoint (%s)",
                 d);
    else if (best->nparams != newest->nparams || best->ntensors != newest->ntensors)
        snprintf(why, size,
                 "it holds another network than the newest checkpoint (%zu parameters "
                 "in %d tensors against %zu in %d)",
                 best->nparams, best->ntensors, newest->nparams, newest->ntensors);
    else if (wc_best_is_older(best->step, best->best_auc_pr, newest->best_step,
                              newest->best_auc_pr))
        snprintf(why, size,
                 "it holds step %lld (AUC-PR %.4f), but the newest checkpoint (step "
                 "%lld) knows the best validation after step %lld (AUC-PR %.4f): an older copy "
                 "put back from outside the run",
                 (long long)best->step, best->best_auc_pr, (long long)newest->step,
                 (long long)newest->best_step, newest->best_auc_pr);
    else
        return 0;
    return 1;
}

/* No usable ckpt-*.wcp, but a best.wcp (the others deleted to save space, say): it is a whole
 * checkpoint, so the run resumes from it under the same checks, rather than start over and
 * replace it with another model. */
static int resume_from_best(const char *dir, resume_ctx *ctx, wc_ckpt *ck, char **path,
                            int *found_any) {
    char best[4200], why[512];
    snprintf(best, sizeof best, "%s/%s", dir, WC_CKPT_BEST);
    if (access(best, F_OK) != 0) return WC_ERR;
    *found_any = 1;
    if (wc_ckpt_read(best, ck, why, sizeof why) != WC_OK ||
        resume_check(ck, ctx, why, sizeof why) != WC_OK) {
        wc_ckpt_free(ck);
        wc_warn("checkpoint %s is not usable: %s", best, why);
        return WC_ERR;
    }
    wc_warn("%s holds no usable ckpt-*.wcp: resuming from %s (step %ld), the best validation's "
            "checkpoint",
            dir, best, ck->step);
    *path = wc_strdup(best);
    return WC_OK;
}

/* best.wcp beside the resumed checkpoint is what the end-of-run map and `predict --checkpoint
 * DIR` use, so it must be this run's: one of other data, settings or network (copied in, or
 * left by another run) is refused rather than mapped under this run's name. A damaged one is
 * the resume's to say (it tracks the best afresh, and the next validation replaces it).
 * Returns WC_OK, or WC_ERR after a message. */
static int check_best_is_this_runs(const char *dir, const wc_resume_match *m, const char *resumed) {
    char best[4200], why[2048];
    snprintf(best, sizeof best, "%s/%s", dir, WC_CKPT_BEST);
    if (access(best, F_OK) != 0 || wc_same_file(best, resumed)) return WC_OK;
    wc_ckpt ck;
    wc_snapshot b = {0};
    if (wc_ckpt_read(best, &ck, why, sizeof why) != WC_OK ||
        wc_snapshot_check(&ck, &b, why, sizeof why) != WC_OK) {
        wc_ckpt_free(&ck);
        return WC_OK; /* said by the resume, which tracks the best afresh */
    }
    wc_ckpt_free(&ck);
    const char *what = NULL;
    if (fingerprint_differs(m->fingerprint, b.fingerprint, why, sizeof why))
        what = "was trained on other data";
    else if (config_differs(m->config, b.config, why, sizeof why))
        what = "was written with other settings";
    else if (b.nparams != m->nparams || b.ntensors != m->ntensors) {
        what = "holds another network";
        snprintf(why, sizeof why, "%zu parameters in %d tensors, this run's network has %zu in %d",
                 b.nparams, b.ntensors, m->nparams, m->ntensors);
    }
    wc_snapshot_free(&b);
    if (!what) return WC_OK;
    wc_error("%s %s than the run it is kept for (%s): %s; the map of this run would be drawn "
             "from it. Move it out of %s (or use --fresh, which moves the run's files aside)",
             best, what, resumed, why, dir);
    return WC_ERR;
}

/* Where the settings a run computes come from, when they are among the differences: they are
 * named as the checkpoint records them, and a rerun with another --epochs, the usual way to
 * "train longer", was told "warmup: now 4, checkpoint 0; total_steps: now 40, checkpoint 2"
 * of settings the user never typed. */
static void schedule_note(const char *why, const char *then, char *buf, size_t size) {
    const int total = strstr(why, "total_steps:") != NULL;
    const int warmup = strstr(why, "warmup:") != NULL;
    const int lr = strncmp(why, "lr:", 3) == 0 || strstr(why, "; lr:") != NULL;
    size_t n = 0;
    buf[0] = '\0';
    if (total)
        n += (size_t)snprintf(buf + n, size - n,
                              "total_steps is --steps, or --epochs times the steps of an epoch; ");
    if (warmup && n < size)
        n += (size_t)snprintf(buf + n, size - n,
                              "warmup is --warmup, by default min(100, total_steps / 10); ");
    if (lr && n < size) n += (size_t)snprintf(buf + n, size - n, "lr is --lr after --lr-scaling; ");
    if (strstr(why, "lr_end:") && n < size) {
        /* the value to resume with is the checkpoint's, named here rather than the defaults (which
         * the start-up line's "cosine to F x lr" gives): a checkpoint without lr_end ended its
         * decay at 0.05 (train_ckpt.c), as every version before --lr-end did */
        char recorded[64];
        wc_kv_get(then, "lr_end", recorded, sizeof recorded);
        const int earlier = recorded[0] == '\0';
        n += (size_t)snprintf(buf + n, size - n,
                              "lr_end is --lr-end; the checkpoint's decay ends at %s x lr%s: "
                              "resume it with --lr-end %s; ",
                              earlier ? "0.05" : recorded,
                              earlier ? ", as every version before --lr-end ended it" : "",
                              earlier ? "0.05" : recorded);
    }
    if ((total || warmup) && n < size)
        snprintf(buf + n, size - n,
                 "a run of another length has another learning-rate schedule (its decay ends at "
                 "its own last step), so it cannot go on from this one's: ");
}

int wc_snapshot_find_resume(const char *dir, const wc_resume_match *m, wc_snapshot *s,
                            char **path) {
    memset(s, 0, sizeof *s);
    wc_ckpt ck;
    int found_any = 0;
    resume_ctx ctx = {.snap = s, .m = m};
    if (wc_ckpt_latest(dir, resume_check, &ctx, &ck, path, &found_any) != WC_OK &&
        resume_from_best(dir, &ctx, &ck, path, &found_any) != WC_OK) {
        wc_snapshot_free(s);
        if (!found_any) return 0;
        char note[400];
        if (wc_ckpt_unreadable(dir) > 0)
            wc_error("%s holds checkpoints but none is usable (see above)%s", dir,
                     wc_ckpt_unreadable_note(dir, note, sizeof note));
        else
            wc_error("%s holds checkpoints but none is usable (see above); refusing to start "
                     "over silently: use --fresh to start from scratch",
                     dir);
        return -1;
    }
    wc_ckpt_free(&ck);
    char why[2048];
    int rc = 1;
    if (fingerprint_differs(m->fingerprint, s->fingerprint, why, sizeof why)) {
        wc_error("checkpoint %s was trained on other data: %s (use another --out, or --fresh)",
                 *path, why);
        rc = -1;
    } else if (config_differs(m->config, s->config, why, sizeof why)) {
        /* --augment and --rotate record their vector pairs as input channels, from 0 */
        char channels[1024] = "";
        size_t n = 0;
        if ((strstr(why, "augment:") || strstr(why, "rotate:")) && m->feat_names)
            for (int c = 0; c < m->nfeat && n + 80 < sizeof channels; c++)
                n += (size_t)snprintf(channels + n, sizeof channels - n, "%s%d %s",
                                      c ? ", "
                                        : "; the vector pairs EAST/NORTH are input "
                                          "channels counted from 0: ",
                                      c, m->feat_names[c]);
        char schedule[400];
        schedule_note(why, s->config, schedule, sizeof schedule);
        wc_error("checkpoint %s was written with other settings: %s%s (%srerun with the same "
                 "options, or use --fresh)",
                 *path, why, channels, schedule);
        rc = -1;
    }
    if (rc == 1 && check_best_is_this_runs(dir, m, *path) != WC_OK) rc = -1;
    if (rc < 0) wc_snapshot_free(s);
    return rc;
}
