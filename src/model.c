/* model.c: loading a trained model from a checkpoint; see model.h. */
#include "wildcpu/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/util.h"

int wc_model_load(wc_model *m, const char *path, int max_N, int H, int W) {
    memset(m, 0, sizeof *m);
    wc_ckpt ck;
    if (wc_ckpt_resolve(path, wc_snapshot_check, &m->snap, &ck, &m->path) != WC_OK) {
        wc_snapshot_free(&m->snap);
        return WC_ERR;
    }
    wc_ckpt_free(&ck);
    const wc_snapshot *s = &m->snap;
    char why[512];
    m->net = wc_snapshot_build_net(s, max_N, H, W, WC_NET_INFER, why, sizeof why);
    if (!m->net) {
        wc_error("checkpoint %s: %s", m->path, why);
        wc_model_free(m);
        return WC_ERR;
    }
    m->step = (long)s->step;
    m->nfeat = s->nfeat;
    m->feat_names = s->feat_names;
    m->mean = s->mean, m->std = s->std;
    m->patch = wc_snapshot_patch(s);
    m->fingerprint = s->fingerprint, m->config = s->config;
    m->meta = s->meta, m->metrics = s->metrics;
    return WC_OK;
}

void wc_model_free(wc_model *m) {
    if (!m) return;
    free(m->path);
    wc_net_destroy(m->net);
    wc_snapshot_free(&m->snap);
    memset(m, 0, sizeof *m);
}
