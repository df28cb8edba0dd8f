/* model.c: loading a trained model from a checkpoint; see model.h. */
#include "wildcpu/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/util.h"

/* m->constant from the meta record's WC_META_CONSTANT list ("3:7"): WC_ERR, with the reason in
 * why, for an entry that is not an input channel. */
static int read_constant(wc_model *m, char *why, size_t size) {
    m->constant = WC_CALLOC((size_t)m->nfeat, 1);
    const size_t len = strlen(m->meta) + 1;
    char *list = WC_ALLOC(len);
    wc_kv_get(m->meta, WC_META_CONSTANT, list, len);
    int ok = 1;
    for (char *p = list; *p && ok;) {
        char *end;
        const long c = strtol(p, &end, 10);
        ok = end != p && c >= 1 && c <= m->nfeat && (*end == ':' || *end == '\0');
        if (ok) m->constant[c - 1] = 1, p = *end ? end + 1 : end;
    }
    if (!ok) snprintf(why, size, "its meta record's " WC_META_CONSTANT "=%.40s names no input "
                      "channel of 1..%d", list, m->nfeat);
    free(list);
    return ok ? WC_OK : WC_ERR;
}

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
    if (read_constant(m, why, sizeof why) != WC_OK) {
        wc_error("checkpoint %s: %s", m->path, why);
        wc_model_free(m);
        return WC_ERR;
    }
    return WC_OK;
}

void wc_model_free(wc_model *m) {
    if (!m) return;
    free(m->path), free(m->constant);
    wc_net_destroy(m->net);
    wc_snapshot_free(&m->snap);
    memset(m, 0, sizeof *m);
}
