/* model.c: loading a trained model from a checkpoint; see model.h. */
#include "wildcpu/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/dist.h"
#include "wildcpu/util.h"

/* For a run directory whose best.wcp was taken (m->path): that it is the best of the run the
 * directory's newest usable checkpoint belongs to, as a resume checks (wc_snapshot_best_foreign):
 * another run's best.wcp copied in, or an older one put back, would be mapped under this run's
 * name. WC_ERR after an error naming both. Rank 0 reads the newest checkpoint and decides (its
 * callers agree on a failed load: predict's open_run), so that the other ranks neither read it
 * too nor repeat its warnings. */
static int best_is_the_runs(const wc_model *m, const char *path) {
    if (wc_dist_rank() != 0) return WC_OK;
    struct stat st;
    const char *base = strrchr(m->path, '/');
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || !base || strcmp(base + 1, WC_CKPT_BEST))
        return WC_OK;
    char dir[4096], why[2600];
    if (wc_ckpt_dir_of(path, dir, sizeof dir) != WC_OK) return WC_OK;
    wc_snapshot newest = {0};
    wc_ckpt ck;
    char *newest_path = NULL;
    int any = 0, rc = WC_OK;
    if (wc_ckpt_latest(dir, wc_snapshot_check, &newest, &ck, &newest_path, &any) != WC_OK) {
        wc_snapshot_free(&newest); /* no ckpt-*.wcp beside it: best.wcp is all the run has */
        return WC_OK;
    }
    wc_ckpt_free(&ck);
    if (wc_snapshot_best_foreign(&m->snap, &newest, why, sizeof why)) {
        wc_error("%s is not the best checkpoint of the run in %s: %s (newest: %s). Given the "
                 "directory, the map would be drawn from it under that run's name: move it out "
                 "of %s (the newest checkpoint is then used), or name a checkpoint file with "
                 "--checkpoint",
                 m->path, path, why, newest_path, dir);
        rc = WC_ERR;
    }
    free(newest_path);
    wc_snapshot_free(&newest);
    return rc;
}

int wc_model_load(wc_model *m, const char *path, int max_N, int H, int W) {
    memset(m, 0, sizeof *m);
    wc_ckpt ck;
    if (wc_ckpt_resolve(path, wc_snapshot_check, &m->snap, &ck, &m->path) != WC_OK) {
        wc_snapshot_free(&m->snap);
        return WC_ERR;
    }
    wc_ckpt_free(&ck);
    if (best_is_the_runs(m, path) != WC_OK) {
        wc_model_free(m);
        return WC_ERR;
    }
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
    m->constant = WC_ALLOC((size_t)m->nfeat);
    if (wc_snapshot_constant(s, m->constant, why, sizeof why) != WC_OK) {
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
