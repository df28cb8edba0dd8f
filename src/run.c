/* run.c: the train command: training, then the map; the stop marker. See run.h. */
#include "wildcpu/run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/predict.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

static void marker_path(char *buf, size_t size, const wc_train_config *cfg) {
    snprintf(buf, size, "%s/%s", cfg->out_dir, WC_TRAIN_STOPPED_MARKER);
}

/* Rank 0, after a stop: the step a rerun resumes from is the newest checkpoint's. */
static void write_marker(const wc_train_config *cfg, const char *phase) {
    char path[4200], dir[4200], ts[32];
    marker_path(path, sizeof path, cfg);
    snprintf(dir, sizeof dir, "%s/checkpoints", cfg->out_dir);
    wc_ckpt_entry *e;
    int n = wc_ckpt_list(dir, 0, &e);
    long step = -1;
    for (int i = 0; i < n && step < 0; i++)
        if (e[i].header_ok) step = e[i].step;
    if (n > 0) wc_ckpt_list_free(e, n);
    wc_utc_timestamp(ts, sizeof ts);
    wc_atomic_file f;
    if (wc_atomic_open(&f, path, "w") != WC_OK) return;
    fprintf(f.f, "stopped_utc=%s;phase=%s;step=%ld;signal=%s;resume=rerun the same command\n", ts,
            phase, step, wc_stop_signal() ? strsignal(wc_stop_signal()) : "on another rank");
    if (wc_atomic_commit(&f) != WC_OK)
        wc_warn("%s could not be written: scripts cannot tell this stop from a failure by it",
                path);
}

int wc_run_train_and_map(const wc_train_config *cfg) {
    char marker[4200];
    marker_path(marker, sizeof marker, cfg);
    if (wc_dist_rank() == 0 && unlink(marker) != 0 && errno != ENOENT)
        wc_warn("cannot remove %s: %s", marker, strerror(errno));
    int status = wc_train_run(cfg);
    const char *phase = "training";
    if (status == WC_EXIT_OK && !cfg->no_predict) {
        char risk[4200], png[4200];
        snprintf(risk, sizeof risk, "%s/risk.tif", cfg->out_dir);
        snprintf(png, sizeof png, "%s/risk.png", cfg->out_dir);
        wc_predict_config pc;
        wc_predict_config_default(&pc);
        pc.tiles = cfg->data.tiles;
        pc.checkpoint = cfg->out_dir;
        pc.out = risk;
        pc.png = png;
        pc.cog = cfg->cog;
        pc.classes = cfg->classes;
        pc.threads = cfg->threads;
        status = wc_predict_run(&pc);
        phase = "map";
    }
    if (status == WC_EXIT_STOPPED && wc_dist_rank() == 0) write_marker(cfg, phase);
    return status;
}
