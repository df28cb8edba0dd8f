/* model.c: loading a trained model from a checkpoint; see model.h. */
#include "wildcpu/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/util.h"

static char *section_string(const wc_ckpt *ck, const char *name) {
    const wc_ckpt_section *s = wc_ckpt_find(ck, name);
    char *t = WC_ALLOC(s ? s->size + 1 : 1);
    if (s && s->size) memcpy(t, s->data, s->size);
    t[s ? s->size : 0] = '\0';
    return t;
}

int wc_model_load(wc_model *m, const char *path, int max_N, int H, int W) {
    memset(m, 0, sizeof *m);
    wc_ckpt ck;
    if (wc_ckpt_resolve(path, NULL, NULL, &ck, &m->path) != WC_OK) return WC_ERR;
    m->step = ck.step;
    m->fingerprint = section_string(&ck, "fingerprint");
    m->config = section_string(&ck, "config");
    m->meta = section_string(&ck, "meta");
    m->metrics = section_string(&ck, "metrics");
    char *spec = section_string(&ck, "spec"), *names = section_string(&ck, "features");
    char arch[64], patch[32];
    wc_kv_get(m->meta, "arch", arch, sizeof arch);
    wc_kv_get(m->config, "patch", patch, sizeof patch);
    m->patch = atoi(patch);
    /* feature names: comma-separated */
    m->nfeat = *names ? 1 : 0;
    for (const char *p = names; *p; p++) m->nfeat += *p == ',';
    const wc_ckpt_section *norm = wc_ckpt_find(&ck, "norm");
    int rc = WC_ERR;
    if (m->nfeat < 1 || !norm || norm->size != sizeof(double) * 2 * m->nfeat || m->patch < 1) {
        wc_error("checkpoint %s lacks the input description (features, normalization, patch)",
                 m->path);
        goto out;
    }
    m->feat_names = WC_CALLOC(m->nfeat, sizeof(char *));
    char *save = NULL, *tok = strtok_r(names, ",", &save);
    for (int i = 0; i < m->nfeat && tok; i++, tok = strtok_r(NULL, ",", &save))
        m->feat_names[i] = wc_strdup(tok);
    m->mean = WC_ALLOC(sizeof(double) * m->nfeat);
    m->std = WC_ALLOC(sizeof(double) * m->nfeat);
    memcpy(m->mean, norm->data, sizeof(double) * m->nfeat);
    memcpy(m->std, (const double *)norm->data + m->nfeat, sizeof(double) * m->nfeat);
    m->net = wc_net_create(*arch ? arch : "model", spec, m->nfeat, max_N, H ? H : m->patch,
                           W ? W : m->patch, WC_NET_INFER);
    if (!m->net) {
        wc_error("checkpoint %s: its network cannot be built for %dx%d inputs", m->path,
                 H ? H : m->patch, W ? W : m->patch);
        goto out;
    }
    const wc_ckpt_section *params = wc_ckpt_find(&ck, "params");
    if (!params || params->size != m->net->nparams * sizeof(float)) {
        wc_error("checkpoint %s: parameters section has %zu bytes, the network needs %zu",
                 m->path, params ? params->size : 0, m->net->nparams * sizeof(float));
        goto out;
    }
    memcpy(m->net->params, params->data, params->size);
    rc = WC_OK;
out:
    free(spec);
    free(names);
    wc_ckpt_free(&ck);
    if (rc != WC_OK) wc_model_free(m);
    return rc;
}

void wc_model_free(wc_model *m) {
    if (!m) return;
    for (int i = 0; m->feat_names && i < m->nfeat; i++) free(m->feat_names[i]);
    free(m->feat_names);
    free(m->mean), free(m->std);
    free(m->fingerprint), free(m->config), free(m->meta), free(m->metrics), free(m->path);
    wc_net_destroy(m->net);
    memset(m, 0, sizeof *m);
}
