/* infer.c: the network over windows of a raster; see infer.h. */
#include "wildcpu/infer.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dataset.h"
#include "wildcpu/dist.h"
#include "wildcpu/layers.h"
#include "wildcpu/util.h"

int wc_infer_geometry_of(wc_infer_geometry *g, const char *arch, const char *spec, int nfeat,
                         const wc_raster *r) {
    memset(g, 0, sizeof *g);
    wc_net_facts f;
    /* the receptive field does not depend on the input's size: any size the pooling accepts,
     * 1024, or less where the input of that size would pass a tensor's limit (a raster of
     * thousands of bands: its windows are sized by the memory they take, not by this) */
    int size = 1024;
    while (size > 64 && (int64_t)nfeat * size * size > INT_MAX) size /= 2;
    /* ... and so may a layer of the network: 2048 channels at 1024x1024 pass it, a network
     * that trains at its patch size and maps in smaller windows (it was refused, naming a
     * 1024x1024 tensor nobody asked for). Smaller sizes are tried quietly; when none builds,
     * the first one's complaint is the spec's own. */
    int built = 0;
    const int was = wc_log_set_quiet(2);
    for (int s = size; s >= 64 && !built; s /= 2)
        built = wc_net_describe(arch, spec, nfeat, s, s, &f) == WC_OK;
    wc_log_set_quiet(was);
    if (!built && wc_net_describe(arch, spec, nfeat, size, size, &f) != WC_OK) return WC_ERR;
    /* windows snap to the exact alignment, so a pixel's bits do not depend on which window
     * computes it (the pooling alignment alone only makes its value in real arithmetic equal) */
    g->radius = f.radius, g->align = f.exact_alignment > 0 ? f.exact_alignment : 1;
    g->margin = (g->radius + g->align - 1) / g->align * g->align;
    g->anchored = wc_raster_global_origin(r, &g->gcol, &g->grow);
    g->phase_x = wc_pmod(g->gcol, g->align);
    g->phase_y = wc_pmod(g->grow, g->align);
    return WC_OK;
}

/* The window for cores up to max_cw x max_ch: the margin on both sides, plus `align` pixels of
 * slack for snapping the origin. WC_ERR after logging (naming `what`) beyond the network's
 * reach. */
static int window_size(const wc_infer_geometry *g, int64_t max_cw, int64_t max_ch, const char *what,
                       int64_t *Tx, int64_t *Ty) {
    const int64_t slack = g->align > 1 ? g->align : 0;
    *Tx = max_cw + 2 * g->margin + slack, *Ty = max_ch + 2 * g->margin + slack;
    if (*Tx <= INT_MAX && *Ty <= INT_MAX) return WC_OK;
    wc_error("%s: the network cannot be built for %" PRId64 "x%" PRId64 " windows", what, *Tx, *Ty);
    return WC_ERR;
}

int wc_infer_plan(const wc_infer_geometry *g, wc_dtype type, int nfeat, const char *arch,
                  const char *spec, int64_t max_cw, int64_t max_ch, const char *what,
                  wc_infer_plan_bytes *plan) {
    memset(plan, 0, sizeof *plan);
    if (window_size(g, max_cw, max_ch, what, &plan->Tx, &plan->Ty) != WC_OK) return WC_ERR;
    if (wc_net_plan(arch, spec, nfeat, 1, (int)plan->Ty, (int)plan->Tx, WC_NET_INFER, &plan->net) !=
        WC_OK) {
        wc_error("%s: the network cannot be built for %" PRId64 "x%" PRId64 " windows", what,
                 plan->Tx, plan->Ty);
        return WC_ERR;
    }
    /* what wc_infer_init allocates: the network, then one window as read and its states */
    const size_t plane = (size_t)plan->Tx * (size_t)plan->Ty;
    plan->bytes = plan->net.params + plan->net.activations + plan->net.workspace +
                  plane * (1 + (size_t)nfeat * wc_dtype_size(type));
    return WC_OK;
}

int wc_infer_init(wc_infer *p, const wc_infer_geometry *g, wc_raster *r, const int *bands,
                  wc_dtype type, int nfeat, const double *mean, const double *std, const char *arch,
                  const char *spec, const float *params, int64_t max_cw, int64_t max_ch,
                  const char *what) {
    memset(p, 0, sizeof *p);
    p->g = *g;
    p->r = r, p->bands = bands, p->type = type, p->nfeat = nfeat, p->mean = mean, p->std = std;
    p->max_cw = max_cw, p->max_ch = max_ch;
    if (window_size(g, max_cw, max_ch, what, &p->Tx, &p->Ty) != WC_OK) return WC_ERR;
    p->net = wc_net_create(arch, spec, nfeat, 1, (int)p->Ty, (int)p->Tx, WC_NET_INFER);
    if (!p->net) {
        wc_error("%s: the network cannot be built for %" PRId64 "x%" PRId64 " windows", what, p->Tx,
                 p->Ty);
        return WC_ERR;
    }
    wc_infer_set_params(p, params);
    p->raw = WC_ALLOC_FOR(wc_dtype_size(type) * (size_t)nfeat * (size_t)p->Tx * (size_t)p->Ty,
                          "a network window's features as read");
    p->px = WC_ALLOC_FOR((size_t)p->Tx * (size_t)p->Ty, "a network window's pixel states");
    p->inv_std = WC_ALLOC(sizeof(double) * nfeat);
    p->huge = WC_CALLOC((size_t)nfeat, sizeof(int64_t));
    p->z_sum = WC_CALLOC((size_t)nfeat, sizeof(double));
    p->differs = WC_CALLOC((size_t)nfeat, sizeof(int64_t));
    for (int c = 0; c < nfeat; c++) p->inv_std[c] = wc_feature_inv_std(std[c], 0);
    return WC_OK;
}

void wc_infer_set_constant(wc_infer *p, const uint8_t *constant) {
    p->constant = constant;
    for (int c = 0; c < p->nfeat; c++)
        p->inv_std[c] = wc_feature_inv_std(p->std[c], constant && constant[c]);
}

void wc_infer_free(wc_infer *p) {
    if (!p) return;
    wc_net_destroy(p->net);
    free(p->raw), free(p->px), free(p->inv_std), free(p->huge), free(p->z_sum), free(p->differs);
    memset(p, 0, sizeof *p);
}

void wc_infer_set_params(wc_infer *p, const float *params) {
    memcpy(p->net->params, params, sizeof(float) * p->net->nparams);
}

/* The largest v' <= v whose global coordinate (phase + v') is a multiple of the alignment. */
static int64_t align_down(int64_t v, int phase, int a) {
    return v - wc_pmod((long long)phase + v, a);
}

/* The network input x (nfeat, Ty, Tx) of the window at (wx, wy) and the state of its pixels,
 * from one reading of each value. Invalid pixels, and everything outside the raster, are 0:
 * the network cannot tell an edge from nodata, nor a window that overhangs the raster from one
 * that does not. */
static void window_input(wc_infer *p, int64_t wx, int64_t wy, float *x) {
    const size_t Tx = (size_t)p->Tx, plane = Tx * (size_t)p->Ty;
    const int64_t W = p->r->width, H = p->r->height;
    /* the part of the window inside the raster, relative to the window */
    const size_t x0 = (size_t)(WC_MAX(wx, 0) - wx), y0 = (size_t)(WC_MAX(wy, 0) - wy);
    const size_t x1 = (size_t)(WC_MIN(wx + p->Tx, W) - wx),
                 y1 = (size_t)(WC_MIN(wy + p->Ty, H) - wy);
    memset(p->px, WC_PX_NODATA, plane);
    for (size_t y = y0; y < y1; y++) memset(p->px + y * Tx + x0, WC_PX_VALID, x1 - x0);
    memset(x, 0, sizeof(float) * plane * p->nfeat);
    for (int c = 0; c < p->nfeat; c++) {
        const wc_band *b = &p->r->bands[p->bands[c] - 1];
        const double mean = p->mean[c], inv = p->inv_std[c];
        float *xc = x + c * plane;
        for (size_t y = y0; y < y1; y++)
            for (size_t i = y * Tx + x0; i < y * Tx + x1; i++) {
                if (p->px[i] == WC_PX_NODATA) continue;
                const double v = wc_dtype_get(p->raw, p->type, c * plane + i);
                if (wc_band_is_nodata(b, v)) {
                    p->px[i] = WC_PX_NODATA;
                    continue;
                }
                const float xn = wc_normalize(wc_band_value(b, v), mean, inv);
                if (isfinite(xn))
                    xc[i] = xn;
                else
                    p->px[i] = WC_PX_RANGE;
            }
    }
    /* a pixel found invalid in a later channel has values in the earlier ones */
    for (size_t y = y0; y < y1; y++)
        for (size_t i = y * Tx + x0; i < y * Tx + x1; i++)
            if (p->px[i] != WC_PX_VALID)
                for (int c = 0; c < p->nfeat; c++) x[c * plane + i] = 0.0f;
    /* (a value beyond float's range, WC_PX_RANGE, is the least ordinary of all) */
    int ordinary = 1;
    p->window_outlier = -1;
    for (size_t i = 0; i < plane && ordinary; i++) ordinary = p->px[i] != WC_PX_RANGE;
    for (int c = 0; c < p->nfeat && ordinary; c++) {
        for (size_t i = 0; i < plane; i++) ordinary &= fabsf(x[c * plane + i]) <= WC_INFER_ORDINARY;
        if (!ordinary) p->window_outlier = c;
    }
    p->window_ordinary = ordinary;
}

/* What the core's pixels say of the raster as a whole (state in px, as of window_input): per
 * feature, the pixels with a huge value among those that are not nodata (valid ones, and those
 * whose value overflowed once normalized, WC_PX_RANGE: the -3.4e38 of a float raster does),
 * and the sum of the valid pixels' normalized values (the network's input x). */
static void tally_core(wc_infer *p, const float *x, int64_t wx, int64_t wy, int64_t cx, int64_t cy,
                       int64_t cw, int64_t ch) {
    const size_t Tx = (size_t)p->Tx, plane = Tx * (size_t)p->Ty;
    for (int c = 0; c < p->nfeat; c++) {
        const wc_band *b = &p->r->bands[p->bands[c] - 1];
        const int constant = p->constant && p->constant[c];
        /* another value than the constant beyond rounding (the tolerance of its finding) */
        const double mean = p->mean[c], off = fabs(mean) * 0x1p-30;
        double z = 0;
        for (int64_t y = 0; y < ch; y++) {
            const size_t i0 = (size_t)(cy + y - wy) * Tx + (size_t)(cx - wx);
            for (size_t i = i0; i < i0 + (size_t)cw; i++) {
                if (p->px[i] == WC_PX_NODATA) continue;
                const double value = wc_band_value(b, wc_dtype_get(p->raw, p->type, c * plane + i));
                const int huge = fabs(value) >= WC_HUGE_VALUE;
                p->huge[c] += huge;
                /* an undeclared nodata is said as such, not as other units */
                if (p->px[i] == WC_PX_VALID && !huge) z += x[c * plane + i];
                if (constant && p->px[i] == WC_PX_VALID)
                    p->differs[c] += !(fabs(value - mean) <= off);
            }
        }
        p->z_sum[c] += z;
    }
}

/* A valid pixel's probability from its logit: an infinite logit is a float overflow inside the
 * network, not a certainty, and NaN is no probability at all. Returns 0 when there is none. */
static int probability(float logit, float *prob) {
    if (!isfinite(logit)) return 0;
    const double q = wc_sigmoid(logit);
    if (!(q >= 0.0 && q <= 1.0)) return 0;
    *prob = (float)q;
    return 1;
}

int wc_infer_core(wc_infer *p, int64_t cx, int64_t cy, int64_t cw, int64_t ch, float *prob,
                  uint8_t *px, float fill) {
    WC_ASSERT(cw <= p->max_cw && ch <= p->max_ch && cw > 0 && ch > 0);
    const int64_t wx = align_down(cx - p->g.margin, p->g.phase_x, p->g.align);
    const int64_t wy = align_down(cy - p->g.margin, p->g.phase_y, p->g.align);
    /* the core keeps at least `margin` pixels of window on every side */
    WC_ASSERT(wx + p->Tx >= cx + cw + p->g.margin && wy + p->Ty >= cy + ch + p->g.margin);
    if (wc_raster_window_empty(p->r, cx, cy, cw, ch, p->bands, p->nfeat, p->type)) {
        /* GDAL knows the core to be nodata (a hole of a mostly empty mosaic): reading the
         * window would find no valid pixel there, so it is not read */
        memset(p->px, WC_PX_NODATA, (size_t)p->Tx * (size_t)p->Ty);
    } else {
        /* (the error names the file, the band and the part of the window inside the raster) */
        if (wc_raster_read(p->r, wx, wy, p->Tx, p->Ty, p->bands, p->nfeat, p->type, p->raw) !=
            WC_OK)
            return WC_ERR;
        window_input(p, wx, wy, wc_net_input(p->net));
        tally_core(p, wc_net_input(p->net), wx, wy, cx, cy, cw, ch);
    }
    const size_t Tx = (size_t)p->Tx;
    int64_t valid = 0;
    for (int64_t y = 0; y < ch; y++) {
        const uint8_t *v = p->px + (size_t)(cy + y - wy) * Tx + (size_t)(cx - wx);
        for (int64_t i = 0; i < cw; i++) {
            valid += v[i] == WC_PX_VALID;
            p->beyond_range += v[i] == WC_PX_RANGE;
        }
    }
    p->valid_pixels += valid;
    const float *logit = NULL;
    if (valid > 0) { /* nothing to predict: the network is skipped (deterministically) */
        wc_net_forward(p->net, 1);
        logit = wc_net_output(p->net);
        p->windows_run++;
    } else {
        p->windows_skipped++;
    }
    for (int64_t y = 0; y < ch; y++) {
        const size_t i0 = (size_t)(cy + y - wy) * Tx + (size_t)(cx - wx);
        float *out = prob + (size_t)y * (size_t)cw;
        uint8_t *state = px ? px + (size_t)y * (size_t)cw : NULL;
        for (int64_t i = 0; i < cw; i++) {
            uint8_t s = p->px[i0 + i];
            out[i] = fill;
            if (s == WC_PX_VALID && !probability(logit[i0 + i], &out[i])) {
                s = WC_PX_BAD;
                p->nonfinite++;
                p->nonfinite_ordinary += p->window_ordinary;
            }
            if (state) state[i] = s;
        }
    }
    return WC_OK;
}

int64_t wc_infer_sum_tallies(wc_infer *p) {
    int64_t valid = p->valid_pixels;
    wc_dist_sum_i64(&valid, 1);
    wc_dist_sum_i64(p->huge, (size_t)p->nfeat);
    wc_dist_sum_f64(p->z_sum, (size_t)p->nfeat);
    wc_dist_sum_i64(p->differs, (size_t)p->nfeat);
    return valid;
}

/* A feature whose values over the pixels run average this many of the training data's standard
 * deviations from its mean is data of other units or scaling, not other ground: a temperature
 * in kelvin where training had Celsius lies about 100 away on the sample, elevation in feet
 * where it had metres 10 or more; another region's terrain or weather moves a band by one or
 * two; a fill value of -9999.5 beside a declared nodata of -9999 in 154 of 13000 pixels of
 * NDVI, tens of thousands. */
#define WC_SHIFTED_SIGMAS 8.0

void wc_infer_report_inputs(const wc_infer *p, int64_t pixels, const char *what, const char *done) {
    const char *path = p->r->path;
    /* what a doubtful input spoils: the map, or validation's scores (and so best.wcp) */
    const int map = strcmp(done, "mapped") == 0;
    const char *product = map ? "the map" : "the scores (and the choice of best.wcp)";
    for (int c = 0; c < p->nfeat; c++) {
        const int band = p->bands[c];
        const char *name = p->r->bands[band - 1].name;
        /* values no measurement has (training warns about them in its own patches) */
        if (p->huge[c] > 0)
            wc_warn("%s: %s, band %d (%s): values of magnitude %g or more in %" PRId64 " pixel%s "
                    "of the raster, which no measurement has: an undeclared nodata (the -3.4e38 "
                    "of float rasters, a netCDF fill value)? Taken as data, they saturate the "
                    "network there, or leave their pixels without a prediction when they are "
                    "beyond float's range once normalized; declare the band's nodata "
                    "(gdal_edit.py -a_nodata) or mask them",
                    what, path, band, name, WC_HUGE_VALUE, p->huge[c], p->huge[c] == 1 ? "" : "s");
        /* values far from the training data's, on average: said with their mean in the band's
         * units */
        const double z = pixels > 0 ? p->z_sum[c] / (double)pixels : 0, std = 1 / p->inv_std[c];
        if (fabs(z) >= WC_SHIFTED_SIGMAS)
            wc_warn("%s: %s, band %d (%s): its values average %.5g over the %" PRId64 " pixels "
                    "%s, %.0f training standard deviations %s the training data's mean of %.4g "
                    "(standard deviation %.3g): other units or scaling than in training (kelvin "
                    "for Celsius, feet for metres, an undeclared scale factor or nodata)? The "
                    "network sees values it never learned there, and %s may mean little; convert "
                    "the band (gdal_calc.py), or declare its scale and offset (gdal_edit.py "
                    "-scale -offset) or its nodata (-a_nodata)",
                    what, path, band, name, p->mean[c] + z * std, pixels, done, fabs(z),
                    z > 0 ? "above" : "below", p->mean[c], std, product);
        /* a feature constant in training (the model learned nothing from it, and takes it as
         * that constant) that holds other values here: the map does not show what they change */
        if (p->differs[c] > 0)
            wc_warn("%s: %s, band %d (%s) was %.6g on every training pixel of the model, so it "
                    "learned nothing from this band and takes it as %.6g everywhere; %" PRId64
                    " of the %" PRId64 " pixels %s hold other values, which %s does not reflect "
                    "(train on data where the band varies to use it)",
                    what, path, band, name, p->mean[c], p->mean[c], p->differs[c], pixels, done,
                    map ? "the map" : "validation");
    }
}
