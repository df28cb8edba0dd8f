/* score.c: scoring a map against labels as it is computed; see score.h. */
#include "wildcpu/score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/infer.h"
#include "wildcpu/labels.h"
#include "wildcpu/util.h"

struct wc_score {
    wc_raster labels; /* this rank's handle on the label raster (the tiles, or --labels') */
    int band;
    char source[4400], record[9000]; /* where the labels come from; record's paths absolute */
    wc_metrics_acc *acc;
    float *y;        /* (max_core) */
    uint8_t *use;    /* (max_core) */
    double *scratch; /* (max_core) */
    int64_t max_core;
    wc_label_tally tally; /* the labels this rank read */
};

wc_score *wc_score_open(const wc_raster *tiles, const char *labels, const char *label_band,
                        const char *work_dir, int64_t max_core, int *stopped) {
    *stopped = 0;
    wc_score *s = WC_CALLOC(1, sizeof *s);
    s->max_core = max_core;
    s->tally = (wc_label_tally)WC_LABEL_TALLY_INIT;
    int failed = 0;
    if (labels) {
        wc_labels lab = {0};
        const int named = label_band && *label_band;
        if (wc_labels_prepare(tiles, labels, named ? label_band : "", work_dir, &lab) != WC_OK) {
            *stopped = lab.stopped;
            free(lab.path);
            free(s);
            return NULL;
        }
        failed = wc_raster_open(&s->labels, lab.path) != WC_OK;
        s->band = lab.band;
        /* "(from ...)" for a raster derived from --labels, not for --labels itself */
        wc_labels_describe(s->source, sizeof s->source, lab.band, NULL, lab.path, labels);
        char path[4200], from[4200];
        wc_path_absolute(lab.path, path, sizeof path);
        wc_path_absolute(labels, from, sizeof from);
        wc_labels_describe(s->record, sizeof s->record, lab.band, NULL, path, from);
        free(lab.path);
    } else {
        int by_number = 0;
        failed = wc_raster_open(&s->labels, tiles->path) != WC_OK;
        if (!failed) {
            s->band = wc_labels_find_band(&s->labels, label_band ? label_band : WC_LABEL_BAND_NAME,
                                          1, &by_number);
            failed = s->band == 0;
        }
        if (!failed) {
            const char *name = s->labels.bands[s->band - 1].name;
            char path[4200];
            wc_path_absolute(tiles->path, path, sizeof path);
            wc_labels_describe(s->source, sizeof s->source, s->band, name, tiles->path, NULL);
            wc_labels_describe(s->record, sizeof s->record, s->band, name, path, NULL);
        }
    }
    if (!failed) failed = wc_raster_check_coverage(&s->labels, &s->band, 1) != WC_OK;
    if (wc_dist_any(failed)) {
        wc_score_close(s);
        return NULL;
    }
    s->acc = WC_CALLOC(1, sizeof(wc_metrics_acc));
    s->y = WC_ALLOC_FOR(sizeof(float) * (size_t)max_core, "a core's labels");
    s->use = WC_ALLOC((size_t)max_core);
    s->scratch = WC_ALLOC_FOR(sizeof(double) * (size_t)max_core, "a core's labels as read");
    return s;
}

size_t wc_score_bytes(int64_t max_core) {
    return sizeof(wc_metrics_acc) + (size_t)max_core * (sizeof(float) + 1 + sizeof(double));
}

void wc_score_close(wc_score *s) {
    if (!s) return;
    wc_raster_close(&s->labels);
    free(s->acc), free(s->y), free(s->use), free(s->scratch);
    free(s);
}

const char *wc_score_source(const wc_score *s) {
    return s->source;
}

const char *wc_score_record(const wc_score *s) {
    return s->record;
}

const char *wc_score_labels_path(const wc_score *s) {
    return s->labels.path;
}

int wc_score_add(wc_score *s, int64_t cx, int64_t cy, int64_t cw, int64_t ch, const float *prob,
                 const uint8_t *px) {
    const size_t n = (size_t)cw * (size_t)ch;
    WC_ASSERT((int64_t)n <= s->max_core);
    if (wc_raster_read(&s->labels, cx, cy, cw, ch, &s->band, 1, WC_DT_FLOAT64, s->scratch) != WC_OK)
        return WC_ERR;
    const wc_band *lb = &s->labels.bands[s->band - 1];
    for (size_t i = 0; i < n; i++) {
        const int labelled = !wc_band_is_nodata(lb, s->scratch[i]);
        if (labelled) wc_label_tally_add(&s->tally, s->scratch[i]);
        if (isinf(s->scratch[i])) wc_label_tally_infinite(&s->tally);
        s->y[i] = s->scratch[i] > 0 ? 1.0f : 0.0f; /* labels.h: > 0 is burned */
        if (labelled && px[i] == WC_PX_BAD) s->acc->bad_outputs++;
        s->use[i] = labelled && px[i] == WC_PX_VALID;
    }
    wc_metrics_add_probs(s->acc, prob, s->y, s->use, n, WC_METRICS_MAP_POS_WEIGHT);
    return WC_OK;
}

void wc_score_finish(wc_score *s, wc_metrics *out) {
    wc_dist_sum_i64((int64_t *)s->acc, wc_metrics_acc_words());
    wc_label_tally_say(&s->tally, s->source);
    wc_metrics_compute(out, s->acc);
}
