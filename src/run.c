/* run.c: the train command: prepare the run directory, train, draw the map; see run.h. */
#include "wildcpu/run.h"

#include <stdio.h>

#include "wildcpu/dist.h"
#include "wildcpu/predict.h"
#include "wildcpu/report.h"
#include "wildcpu/rundir.h"
#include "wildcpu/util.h"

/* The map of the trained model: DIR/risk.tif, its picture, style and STAC item (and with
 * --classes DIR/risk_classes.tif). */
static int draw_map(const wc_train_config *cfg) {
    char risk[4200], png[4200];
    snprintf(risk, sizeof risk, "%s/" WC_RUNDIR_MAP, cfg->out_dir);
    snprintf(png, sizeof png, "%s/" WC_RUNDIR_PICTURE, cfg->out_dir);
    wc_predict_config pc;
    wc_predict_config_default(&pc);
    pc.tiles = cfg->data.tiles;
    pc.checkpoint = cfg->out_dir;
    pc.out = risk;
    pc.png = png;
    pc.rerun = wc_rundir_rerun(cfg, "map");
    pc.tiles_checked = 1;
    pc.cog = cfg->cog;
    pc.classes = cfg->classes;
    pc.no_style = cfg->no_style;
    pc.threads = cfg->threads, pc.threads_from = cfg->threads_from;
    return wc_predict_run(&pc);
}

int wc_run_train_and_map(const wc_train_config *cfg) {
    int status = wc_rundir_prepare(cfg);
    if (status != WC_OK) return status;
    status = wc_train_run(cfg); /* it marks a stop itself, as soon as its checkpoint is written */
    if (status == WC_EXIT_OK && !cfg->no_predict) {
        status = draw_map(cfg);
        wc_report_agree_failure();
        if (wc_dist_rank() == 0)
            wc_report_map_done(cfg->out_dir, status, wc_rundir_rerun(cfg, "map"));
        if (status == WC_EXIT_STOPPED) wc_rundir_mark_stopped(cfg, "map");
    }
    return status;
}
