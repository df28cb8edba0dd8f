/* test_pipeline.c: the whole user path through the library, in one process without MPI:
 * synth, train, resume, predict, export, info. Under `make test SAN=1` this is where
 * LeakSanitizer and UBSan see the pipeline's own code end to end (the shell tests run the
 * program under Open MPI, which leaks by design at exit). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wildcpu/blas_core.h"
#include "wildcpu/export.h"
#include "wildcpu/inspect.h"
#include "wildcpu/predict.h"
#include "wildcpu/run.h"
#include "wildcpu/synth.h"
#include "wildcpu/train.h"
#include "wildcpu/util.h"

static char dir[64];

static void path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", dir, name);
}

static void test_synth_train_resume(void) {
    char region[256], tiles[256], out[256];
    path(region, sizeof region, "region");
    path(tiles, sizeof tiles, "region/tiles.vrt");
    path(out, sizeof out, "run");
    wc_synth_config s;
    wc_synth_config_default(&s);
    s.out_dir = region;
    s.size = 256;
    s.tile = 128;
    CHECK(wc_synth_write(&s) == WC_OK, "synth");
    wc_train_config c;
    wc_train_config_default(&c);
    c.data.tiles = tiles;
    c.data.patch = 32;
    c.data.val_block_px = 64;
    c.out_dir = out;
    c.steps = 4;
    c.batch = 6;
    c.micro_batch = 4; /* a partial last micro-batch */
    c.ckpt_every = 2;
    c.no_predict = 1;
    CHECK(wc_run_train_and_map(&c) == WC_EXIT_OK, "training");
    c.steps = 4; /* rerun: resumes at the end, rewrites the last checkpoint */
    CHECK(wc_run_train_and_map(&c) == WC_EXIT_OK, "rerun of a finished training");
    c.fresh = 1;
    c.steps = 2;
    c.no_predict = 0; /* train then map, in one call */
    CHECK(wc_run_train_and_map(&c) == WC_EXIT_OK, "fresh training with the map");
    char risk[256];
    path(risk, sizeof risk, "run/risk.tif");
    CHECK(access(risk, R_OK) == 0, "training wrote no risk map");
}

/* A library user gets the learning rate the command line gives when --lr is not given: the
 * optimizer's, but the logistic baseline's own under AdamW. */
static void test_default_lr(void) {
    wc_train_config c;
    wc_train_config_default(&c);
    CHECK(wc_train_lr(&c) == 5e-4, "unet-lite under AdamW: lr %g", wc_train_lr(&c));
    c.model = "logistic";
    CHECK(wc_train_lr(&c) == 0.05, "logistic under AdamW: lr %g", wc_train_lr(&c));
    c.optim.lr = 1e-3;
    CHECK(wc_train_lr(&c) == 1e-3, "a given lr: %g", wc_train_lr(&c));
}

static void test_predict_export_info(void) {
    char tiles[256], out[256], risk[256], png[256], st[256];
    path(tiles, sizeof tiles, "region/tiles.vrt");
    path(out, sizeof out, "run");
    path(risk, sizeof risk, "risk2.tif");
    path(png, sizeof png, "risk2.png");
    path(st, sizeof st, "model.safetensors");
    wc_predict_config p;
    wc_predict_config_default(&p);
    p.tiles = tiles;
    p.checkpoint = out;
    p.out = risk;
    p.png = png;
    p.classes = 1;
    CHECK(wc_predict_run(&p) == WC_EXIT_OK, "predict");
    p.cog = 1;
    CHECK(wc_predict_run(&p) == WC_EXIT_OK, "predict --cog");
    CHECK(wc_export_run(out, st) == WC_EXIT_OK, "export");
    CHECK(wc_inspect_run(out) == WC_EXIT_OK, "info DIR");
    char ck[256];
    path(ck, sizeof ck, "run/checkpoints/ckpt-00000002.wcp");
    CHECK(wc_inspect_run(ck) == WC_EXIT_OK, "info FILE");
}

int main(int argc, char **argv) {
    (void)argc;
    wc_blas_core_settle(argv); /* OpenBLAS's kernels as the program runs them (blas_core.h) */
    if (harness_tempdir(dir, sizeof dir, "wildcpu-pipeline.") != 0) return 1;
    wc_log_set_quiet(1);
    RUN(test_default_lr);
    RUN(test_synth_train_resume);
    RUN(test_predict_export_info);
    harness_remove_tree(dir);
    HARNESS_EXIT();
}
