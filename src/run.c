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
    wc_predict_config pc;
    wc_train_map_config(&pc, cfg, risk, png, sizeof risk);
    return wc_predict_run(&pc);
}

/* A report that could not record how the map ended (a disk that filled while the map was
 * drawn) still says what it said before (the map pending): a run that otherwise finished ends
 * with status 1 rather than 0 beside a report.json that contradicts the map on disk. A rerun
 * draws the map again and records it. Collective; stale is rank 0's WC_REPORT_*_STALE bits (0
 * elsewhere); returns the command's status. */
static int map_unrecorded(const wc_train_config *cfg, int status, int stale) {
    if (!wc_dist_any(stale != 0)) return status;
    if (wc_dist_rank() == 0)
        wc_error("%s/%s not updated to record how the map ended (see above): what %s of the map "
                 "is stale; %s to draw it again and record it",
                 cfg->out_dir,
                 stale == WC_REPORT_JSON_STALE ? WC_RUNDIR_REPORT_JSON
                 : stale == WC_REPORT_MD_STALE ? WC_RUNDIR_REPORT_MD
                                               : WC_RUNDIR_REPORT_JSON " and " WC_RUNDIR_REPORT_MD,
                 stale == (WC_REPORT_JSON_STALE | WC_REPORT_MD_STALE) ? "they say" : "it says",
                 wc_rundir_rerun(cfg, "map"));
    return status == WC_EXIT_OK ? WC_EXIT_RUNTIME : status;
}

int wc_run_train_and_map(const wc_train_config *cfg) {
    int status = wc_rundir_prepare(cfg);
    if (status != WC_OK) return status;
    status = wc_train_run(cfg); /* it marks a stop itself, as soon as its checkpoint is written */
    if (status != WC_EXIT_OK) wc_rundir_forget_refused(cfg);
    if (status == WC_EXIT_OK && !cfg->no_predict) {
        status = draw_map(cfg);
        wc_report_agree_failure();
        const int stale = wc_dist_rank() == 0 ? wc_report_map_done(cfg->out_dir, status,
                                                                   wc_rundir_rerun(cfg, "map"))
                                              : 0;
        if (status == WC_EXIT_STOPPED) wc_rundir_mark_stopped(cfg, "map");
        status = map_unrecorded(cfg, status, stale);
    }
    return status;
}
