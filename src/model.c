/* model.c: loading a trained model from a checkpoint; see model.h. */
#include "wildcpu/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/dist.h"
#include "wildcpu/util.h"

/* best_is_the_runs: best.wcp was replaced while it was checked (a training run writing into the
 * directory found a better validation), so the verdict is about a file no longer there. */
#define BEST_REPLACED 1

/* For a run directory whose best.wcp was taken (m->path, read as crc): that it is the best of the
 * run the directory's newest usable checkpoint belongs to, as a resume checks
 * (wc_snapshot_best_foreign): another run's best.wcp copied in, or an older one put back, would
 * be mapped under this run's name. WC_ERR after an error naming both; BEST_REPLACED, silently,
 * when best.wcp is no longer the file read: a training run renames a better best.wcp into place,
 * then writes checkpoints that know of it, so a best.wcp read just before that rename and a
 * checkpoint read after it look like an older copy put back. Rank 0 reads the newest checkpoint
 * and decides (wc_model_load_agreed gives the other ranks rank 0's file). */
static int best_is_the_runs(const wc_model *m, const char *path, const wc_ckpt *best_ck) {
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
        if (!wc_ckpt_still_there(m->path, best_ck)) {
            rc = BEST_REPLACED;
        } else {
            wc_error("%s is not the best checkpoint of the run in %s: %s (newest: %s). Given the "
                     "directory, the map would be drawn from it under that run's name: move it "
                     "out of %s (the newest checkpoint is then used), or name a checkpoint file "
                     "with --checkpoint",
                     m->path, path, why, newest_path, dir);
            rc = WC_ERR;
        }
    }
    free(newest_path);
    wc_snapshot_free(&newest);
    return rc;
}

/* A training run writing into the directory may replace best.wcp under each attempt; a few
 * replacements in a row in the time of two reads are not expected. */
#define LOAD_ATTEMPTS 5

int wc_model_load(wc_model *m, const char *path, int max_N, int H, int W) {
    for (int attempt = 1;; attempt++) {
        memset(m, 0, sizeof *m);
        wc_ckpt ck;
        if (wc_ckpt_resolve(path, wc_snapshot_check, &m->snap, &ck, &m->path) != WC_OK) {
            wc_snapshot_free(&m->snap);
            return WC_ERR;
        }
        m->crc = ck.crc, m->file_bytes = ck.file_bytes;
        const int best = best_is_the_runs(m, path, &ck);
        wc_ckpt_free(&ck);
        if (best == WC_OK) break;
        if (best == BEST_REPLACED && attempt < LOAD_ATTEMPTS) {
            wc_model_free(m); /* read the new best.wcp */
            continue;
        }
        if (best == BEST_REPLACED)
            wc_error("%s was replaced %d times while it was read (a training run writing into "
                     "%s?): give --checkpoint a checkpoint file, or wait for the training to end",
                     m->path, LOAD_ATTEMPTS, path);
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

/* Another rank's load of the file rank 0 chose (read0: what rank 0 read of it). A training run
 * writing into the directory may prune or replace that file before this rank reads it: the load
 * is tried quietly first, and its failure said only when the file is still rank 0's, so that a
 * file gone meanwhile, which the ranks then resolve again, prints no error (it printed
 * "checkpoint ...: No such file or directory" on that rank, and the command went on to status
 * 0). The last error is kept as it was: a spurious one must not become a report's cause; what
 * the quiet load said goes to `why` (say_not_rank0s names it). */
static int load_rank0s_file(wc_model *m, const char *file, const wc_ckpt *read0, int max_N, int H,
                            int W, char *why, size_t size) {
    char before[WC_LAST_ERROR_MAX];
    wc_last_error(before, sizeof before);
    const int was = wc_log_set_quiet(2);
    int rc = wc_model_load(m, file, max_N, H, W);
    wc_log_set_quiet(was);
    if (rc == WC_OK) return WC_OK;
    wc_last_error(why, size);
    wc_adopt_error(before);
    /* this rank's own failure on rank 0's very file: load it again, saying why */
    if (wc_ckpt_still_there(file, read0)) rc = wc_model_load(m, file, max_N, H, W);
    return rc;
}

/* Whether rank 0's file is no longer what rank 0 read (a training run replaced or pruned it):
 * rank 0 looks, the others learn its answer. When it is still there, a rank that read another
 * file there, or none, sees another file under that name than rank 0 does, and no second try
 * helps (it was tried 5 times, then blamed on a training run that did not exist). */
static int changed_under_rank0(const char *file, const wc_ckpt *read0) {
    int changed = wc_dist_rank() == 0 && !wc_ckpt_still_there(file, read0);
    wc_dist_bcast(&changed, sizeof changed, 0);
    return changed;
}

/* This rank's part of a checkpoint that is not rank 0's on this rank: loaded (rc WC_OK) but
 * another step or other bytes, or not loaded, for the reason `failed` gives. */
static void say_not_rank0s(const wc_model *m, int rc, const char *file, const wc_ckpt *read0,
                           const char *failed) {
    const char *why = "every rank must read the same checkpoint: a node-local copy, a path "
                      "relative to another working directory, or a file system not yet in sync?";
    if (rc == WC_OK)
        wc_error("rank %d reads another %s than rank 0 (step %ld, CRC-32 %08x here; step %ld, "
                 "%08x there): %s",
                 wc_dist_rank(), file, m->step, (unsigned)m->crc, read0->step, (unsigned)read0->crc,
                 why);
    else
        wc_error("rank %d cannot read %s, which rank 0 reads (step %ld; here: %s): %s",
                 wc_dist_rank(), file, read0->step, failed, why);
}

/* Every rank, together. Rank 0 resolves path and loads it (wc_model_load), then every other rank
 * loads the very file rank 0 chose, and all check they hold its bytes (its CRC-32): ranks that
 * each resolved a run directory themselves while a training run wrote into it (a better best.wcp
 * renamed into place, a newer checkpoint, an older one pruned) would each map with another
 * model, and the map would be a mosaic of models. A file replaced between rank 0's read and
 * another rank's is resolved again; one still as rank 0 read it, which another rank reads
 * otherwise or not at all, is that rank's view of the file system, refused at once. */
int wc_model_load_agreed(wc_model *m, const char *path, int max_N, int H, int W, int skip) {
    const int rank = wc_dist_rank();
    memset(m, 0, sizeof *m);
    for (int attempt = 1;; attempt++) {
        /* rank 0's outcome: loaded, the length of its file's path, and which file it is */
        uint64_t chosen[5] = {0, 0, 0, 0, 0};
        if (rank == 0 && !skip && wc_model_load(m, path, max_N, H, W) == WC_OK)
            chosen[0] = 1, chosen[1] = strlen(m->path), chosen[2] = m->crc,
            chosen[3] = (uint64_t)m->step, chosen[4] = m->file_bytes;
        wc_dist_bcast(chosen, sizeof chosen, 0);
        const wc_ckpt read0 = {
            .crc = (uint32_t)chosen[2], .step = (long)chosen[3], .file_bytes = (size_t)chosen[4]};
        if (!chosen[0]) return WC_ERR; /* rank 0 said why, or fails for its own reason */
        char *file = WC_ALLOC((size_t)chosen[1] + 1);
        if (rank == 0) memcpy(file, m->path, (size_t)chosen[1] + 1);
        wc_dist_bcast(file, (size_t)chosen[1] + 1, 0);
        int rc = rank == 0 ? WC_OK : WC_ERR;
        char failed[WC_LAST_ERROR_MAX] = "";
        if (rank != 0 && !skip)
            rc = load_rank0s_file(m, file, &read0, max_N, H, W, failed, sizeof failed);
        /* another file than rank 0's: read again; a failure on rank 0's very file is this
         * rank's own (said), which the callers agree on */
        const int other = !skip && (rc == WC_OK ? m->crc != read0.crc || m->step != read0.step
                                                : !wc_ckpt_still_there(file, &read0));
        if (!wc_dist_any(other)) {
            free(file);
            return skip ? WC_ERR : rc;
        }
        if (!changed_under_rank0(file, &read0)) {
            if (other) say_not_rank0s(m, rc, file, &read0, failed);
            wc_model_free(m);
            free(file);
            return WC_ERR;
        }
        wc_model_free(m);
        if (attempt == LOAD_ATTEMPTS) {
            if (rank == 0)
                wc_error("the ranks could not read one checkpoint: %s changed %d times while they "
                         "read it (a training run writing into %s?): give --checkpoint a "
                         "checkpoint file no run replaces, or wait for the training to end",
                         file, LOAD_ATTEMPTS, path);
            free(file);
            return WC_ERR;
        }
        free(file);
    }
}
