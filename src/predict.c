/* predict.c: placeholder until the risk-map issue lands. */
#include "wildcpu/predict.h"

#include <string.h>

#include "wildcpu/util.h"

const char WC_PREDICT_HELP[] = "wildcpu predict: not available yet\n";

void wc_predict_config_default(wc_predict_config *cfg) { memset(cfg, 0, sizeof *cfg); }

int wc_predict_run(const wc_predict_config *cfg) {
    (void)cfg;
    wc_error("predict is not implemented yet");
    return WC_EXIT_RUNTIME;
}
