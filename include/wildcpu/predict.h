/* predict.h: the risk map: the trained network run over a whole raster, written as GeoTIFF. */
#ifndef WILDCPU_PREDICT_H
#define WILDCPU_PREDICT_H

typedef struct wc_predict_config {
    const char *tiles;      /* the raster to map */
    const char *checkpoint; /* checkpoint file or run directory */
    const char *out;        /* risk.tif */
    const char *png;        /* quick-look picture, or NULL */
    int cog;                /* Cloud-Optimized GeoTIFF */
    int classes;            /* a second band of risk classes */
    int threads;
} wc_predict_config;

extern const char WC_PREDICT_HELP[];

void wc_predict_config_default(wc_predict_config *cfg);
/* Collective. Returns the exit status. */
int wc_predict_run(const wc_predict_config *cfg);

#endif
