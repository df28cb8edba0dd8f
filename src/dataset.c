/* dataset.c: opening the input, planning patches and the spatial split, normalization
 * statistics, reading and decoding patches; see dataset.h. */
#include "wildcpu/dataset.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wildcpu/agree.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/labels.h"
#include "wildcpu/rng.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

void wc_data_config_default(wc_data_config *cfg) {
    *cfg = (wc_data_config){.label_band = WC_LABEL_BAND_NAME,
                            .work_dir = ".",
                            .patch = 64,
                            .val_fraction = 0.2,
                            .val_block_px = 256,
                            .min_valid = 0.5,
                            .seed = 1,
                            .align = 1,
                            .jitter = 1,
                            .augment = 0};
}

/* ---- files ------------------------------------------------------------------------------- */

int wc_data_files_open(wc_data_files *f, const wc_dataset *ds, int want_oracle) {
    memset(f, 0, sizeof *f);
    if (wc_raster_open(&f->src, ds->tiles_path) != WC_OK) goto fail;
    if (ds->label_path && wc_raster_open(&f->label, ds->label_path) != WC_OK) goto fail;
    if (want_oracle && ds->oracle_path && wc_raster_open(&f->oracle, ds->oracle_path) != WC_OK)
        goto fail;
    return WC_OK;
fail:
    wc_data_files_close(f);
    return WC_ERR;
}

void wc_data_files_close(wc_data_files *f) {
    wc_raster_close(&f->src);
    wc_raster_close(&f->label);
    wc_raster_close(&f->oracle);
}

/* ---- patches ----------------------------------------------------------------------------- */

void wc_dataset_patch_origin(const wc_dataset *ds, uint32_t id, int *x0, int *y0) {
    *x0 = ds->x_origin + (int)(id % ds->cols) * ds->P;
    *y0 = ds->y_origin + (int)(id / ds->cols) * ds->P;
}

/* The cells of the patch grid the side x side window at (x0, y0) overlaps: columns [c[0], c[2]]
 * and rows [c[1], c[3]], clipped to the grid; 0 when it overlaps none (pixels outside the patch
 * grid's rows and columns are in no cell). */
static int window_cells(const wc_dataset *ds, int x0, int y0, int side, int c[4]) {
    if (x0 - ds->x_origin + side <= 0 || y0 - ds->y_origin + side <= 0) return 0;
    c[0] = WC_MAX(0, x0 - ds->x_origin) / ds->P;
    c[1] = WC_MAX(0, y0 - ds->y_origin) / ds->P;
    c[2] = WC_MIN((x0 - ds->x_origin + side - 1) / ds->P, ds->cols - 1);
    c[3] = WC_MIN((y0 - ds->y_origin + side - 1) / ds->P, ds->rows - 1);
    return c[0] <= c[2] && c[1] <= c[3];
}

/* The side x side window at (x0, y0), inside the raster, overlaps a cell of a validation block. */
static int touches_validation(const wc_dataset *ds, int x0, int y0, int side) {
    int c[4];
    if (!window_cells(ds, x0, y0, side, c)) return 0;
    for (int cy = c[1]; cy <= c[3]; cy++)
        for (int cx = c[0]; cx <= c[2]; cx++)
            if (ds->is_val[(size_t)cy * ds->cols + cx]) return 1;
    return 0;
}

/* The side of the square window about a P x P patch's centre that a turn whose |cos| + |sin| is
 * `reach` needs: the smallest that keeps the centre (its side - P even) and holds every point
 * the turned patch takes with its bilinear neighbours (resample_turned). The output pixel
 * centres lie within (P - 1) / 2 of the patch's centre along each axis, so the points they
 * take lie within e = reach (P - 1) / 2 of the window's centre (Q - 1) / 2 along each; their
 * neighbours floor(s) and floor(s) + 1 lie in [0, Q) when 0 <= s < Q - 1, so Q > 2 e + 1, with
 * 1e-6 of a pixel to spare for rounding. */
static int turn_window_side(int P, double reach) {
    int q = (int)floor(reach * (P - 1) + 1.0 + 1e-6) + 1;
    return q + (q - P) % 2;
}

/* The side of the window sample s is read from: the patch's, or for a turned one the smallest
 * that its own angle needs; never more than ds->turn_side, the largest angle's (plan_turn). */
static int window_side(const wc_dataset *ds, wc_sample s) {
    if (s.turn == 0) return ds->P;
    const int side = turn_window_side(ds->P, fabs(cos(s.turn)) + fabs(sin(s.turn)));
    WC_ASSERT(side <= ds->turn_side);
    return side;
}

/* The window's top-left pixel: the patch's origin, shifted, and for a turned sample moved out
 * so that the window keeps the patch's centre (its side - P is even). */
static void window_origin(const wc_dataset *ds, wc_sample s, int *x0, int *y0) {
    wc_dataset_patch_origin(ds, s.id, x0, y0);
    const int margin = (window_side(ds, s) - ds->P) / 2;
    *x0 += s.dx - margin, *y0 += s.dy - margin;
}

/* The side x side window at (x0, y0), turned by `turn` about its centre (resample_turned), would
 * read a pixel of a validation block: a cell of one overlaps the window and reaches within 1
 * pixel (a bilinear neighbour) of the turned patch, the square of the output pixel centres.
 * Separating axes: the cell grown by 1 pixel each way and that square are apart along x, y or
 * one of the square's own axes; 1e-6 of a pixel to spare, so a cell just within is refused. */
static int turn_touches_validation(const wc_dataset *ds, int x0, int y0, int side, double turn) {
    const double ca = cos(turn), sa = sin(turn), h = 0.5 * (ds->P - 1), c = 0.5 * (side - 1);
    const double u[2] = {ca, -sa}, v[2] = {sa, ca}; /* the turned columns and rows */
    const double reach = h * (fabs(ca) + fabs(sa)), eps = 1e-6;
    int cell[4];
    if (!window_cells(ds, x0, y0, side, cell)) return 0;
    for (int cy = cell[1]; cy <= cell[3]; cy++)
        for (int cx = cell[0]; cx <= cell[2]; cx++) {
            if (!ds->is_val[(size_t)cy * ds->cols + cx]) continue;
            /* the cell's pixels in the window's coordinates, grown by a neighbour */
            const double a0 = ds->x_origin + cx * ds->P - x0 - 1.0, a1 = a0 + ds->P + 1.0;
            const double b0 = ds->y_origin + cy * ds->P - y0 - 1.0, b1 = b0 + ds->P + 1.0;
            int apart = a1 < c - reach - eps || a0 > c + reach + eps || b1 < c - reach - eps ||
                        b0 > c + reach + eps;
            for (int k = 0; k < 2 && !apart; k++) {
                const double *w = k ? v : u;
                const double p[4] = {w[0] * a0 + w[1] * b0, w[0] * a1 + w[1] * b0,
                                     w[0] * a0 + w[1] * b1, w[0] * a1 + w[1] * b1};
                const double mid = w[0] * c + w[1] * c;
                double lo = p[0], hi = p[0];
                for (int i = 1; i < 4; i++) lo = fmin(lo, p[i]), hi = fmax(hi, p[i]);
                apart = hi < mid - h - eps || lo > mid + h + eps;
            }
            if (!apart) return 1;
        }
    return 0;
}

/* Why a drawn shift or turn was not applied (draw_sample): none (applied, or not drawn), the
 * window would reach off the raster (off the patch grid, for a shift), onto a validation block. */
enum { REFUSED_NOT = 0, REFUSED_OFF_RASTER, REFUSED_VALIDATION };

/* wc_dataset_sample, saying why a shift or turn was refused in *shift_refused, *turn_refused
 * (REFUSED_*; each may be NULL). */
static wc_sample draw_sample(const wc_dataset *ds, uint32_t id, long epoch, int *shift_refused,
                             int *turn_refused) {
    wc_sample s = {.id = id, .dx = 0, .dy = 0, .orient = 0, .turn = 0};
    int shift_why = REFUSED_NOT, turn_why = REFUSED_NOT;
    const int A = ds->cfg.align > 0 ? ds->cfg.align : 1, steps = ds->P / (2 * A);
    const int jitter = ds->cfg.jitter && steps >= 1;
    if (!jitter && ds->aug.norient <= 1 && ds->turn_max == 0) goto done;
    wc_rng r;
    wc_rng_seed(&r, ds->cfg.seed, WC_STREAM_AUGMENT, ((uint64_t)epoch << 32) | id);
    /* the shift first, then the orientation, then the turn: each later draw leaves the earlier
     * ones as they were without it */
    if (jitter) {
        const int dx = A * ((int)wc_rng_below(&r, 2 * (uint64_t)steps + 1) - steps);
        const int dy = A * ((int)wc_rng_below(&r, 2 * (uint64_t)steps + 1) - steps);
        int x0, y0;
        wc_dataset_patch_origin(ds, id, &x0, &y0);
        x0 += dx, y0 += dy;
        /* within the patch grid on all four sides: the margins before its first and after its
         * last patch train nothing (bounded by the grid on the top and left but by the raster on
         * the bottom and right, shifts reached the two latter margins only; reaching all four
         * measured worse on unseen ground than reaching none, README) */
        const int x_end = ds->x_origin + ds->cols * ds->P, y_end = ds->y_origin + ds->rows * ds->P;
        if (!(x0 >= ds->x_origin && y0 >= ds->y_origin && x0 + ds->P <= x_end &&
              y0 + ds->P <= y_end))
            shift_why = REFUSED_OFF_RASTER;
        else if (touches_validation(ds, x0, y0, ds->P))
            shift_why = REFUSED_VALIDATION;
        else
            s.dx = dx, s.dy = dy;
    }
    if (ds->aug.norient > 1)
        s.orient = wc_orient_drawn(&ds->aug, (int)wc_rng_below(&r, (uint64_t)ds->aug.norient));
    if (ds->turn_max > 0) {
        wc_sample t = s;
        t.turn = ds->turn_max * (2.0 * wc_rng_uniform(&r) - 1.0);
        int x0, y0;
        window_origin(ds, t, &x0, &y0);
        const int side = window_side(ds, t);
        if (t.turn != 0) { /* (a turn of 0 is the unturned sample) */
            if (!(x0 >= 0 && y0 >= 0 && x0 + side <= ds->width && y0 + side <= ds->height))
                turn_why = REFUSED_OFF_RASTER;
            else if (turn_touches_validation(ds, x0, y0, side, t.turn))
                turn_why = REFUSED_VALIDATION;
            else
                s = t;
        }
    }
done:
    if (shift_refused) *shift_refused = shift_why;
    if (turn_refused) *turn_refused = turn_why;
    return s;
}

wc_sample wc_dataset_sample(const wc_dataset *ds, uint32_t id, long epoch) {
    return draw_sample(ds, id, epoch, NULL, NULL);
}

void wc_dataset_sample_shares(const wc_dataset *ds, wc_sample_shares *out) {
    memset(out, 0, sizeof *out);
    const int A = ds->cfg.align > 0 ? ds->cfg.align : 1;
    out->shifts = ds->cfg.jitter && ds->P / (2 * A) >= 1;
    out->turns = ds->turn_max > 0;
    const long n = WC_MIN(ds->ntrain, (long)WC_SAMPLE_SHARES_MAX);
    for (long i = 0; i < n; i++) {
        /* an even spread over the training patches in grid order (all of them when few) */
        const long k = (long)((double)i * (double)ds->ntrain / (double)n);
        int shift_why, turn_why;
        const wc_sample s = draw_sample(ds, ds->train[k], 0, &shift_why, &turn_why);
        out->shifted += s.dx != 0 || s.dy != 0;
        out->shift_off_raster += shift_why == REFUSED_OFF_RASTER;
        out->shift_on_validation += shift_why == REFUSED_VALIDATION;
        out->turned += s.turn != 0;
        out->turn_off_raster += turn_why == REFUSED_OFF_RASTER;
        out->turn_on_validation += turn_why == REFUSED_VALIDATION;
    }
    out->counted = n;
}

/* A raw sample read from a side x side window: the features, then the label of a separate
 * label raster, then the oracle (unturned samples only, so P x P). */
static size_t src_bytes(const wc_dataset *ds, int side) {
    return (size_t)ds->read_nb * side * side * wc_dtype_size(ds->read_type);
}
static size_t label_bytes(const wc_dataset *ds, int side) {
    return ds->label_path ? (size_t)side * side * wc_dtype_size(ds->label_type) : 0;
}

size_t wc_dataset_patch_bytes(const wc_dataset *ds, int with_oracle) {
    size_t oracle = with_oracle && ds->oracle_path ? (size_t)ds->P * ds->P * sizeof(float) : 0;
    const int side = ds->turn_max > 0 ? WC_MAX(ds->P, ds->turn_side) : ds->P;
    return WC_MAX(src_bytes(ds, ds->P) + label_bytes(ds, ds->P) + oracle,
                  src_bytes(ds, side) + label_bytes(ds, side));
}

size_t wc_dataset_sample_bytes(const wc_dataset *ds, wc_sample s) {
    const int side = window_side(ds, s);
    return src_bytes(ds, side) + label_bytes(ds, side);
}

int wc_dataset_read_patch(const wc_dataset *ds, wc_data_files *f, wc_sample s, void *raw,
                          int with_oracle) {
    int x0, y0;
    window_origin(ds, s, &x0, &y0);
    const int side = window_side(ds, s);
    WC_ASSERT(s.turn == 0 || !with_oracle); /* turned samples train; oracles are for validation */
    char *p = raw;
    if (wc_raster_read(&f->src, x0, y0, side, side, ds->read_bands, ds->read_nb, ds->read_type,
                       p) != WC_OK)
        return WC_ERR;
    p += src_bytes(ds, side);
    if (ds->label_path) {
        if (wc_raster_read(&f->label, x0, y0, side, side, &ds->label_band, 1, ds->label_type, p) !=
            WC_OK)
            return WC_ERR;
        p += label_bytes(ds, side);
    }
    if (with_oracle && ds->oracle_path)
        return wc_dataset_read_oracle(ds, f, x0, y0, ds->P, ds->P, (float *)p);
    return WC_OK;
}

/* The labels (y) and the validity that nodata alone decides (valid): a pixel whose label or any
 * feature is nodata, NaN or Inf is invalid. What planning needs (it takes the statistics from
 * the raw values), and what decoding starts from. */
int wc_dataset_read_labels(const wc_dataset *ds, wc_data_files *f, int64_t x0, int64_t y0,
                           int64_t w, int64_t h, float *y, uint8_t *valid, double *scratch) {
    const int from_label_file = ds->label_path != NULL;
    wc_raster *r = from_label_file ? &f->label : &f->src;
    const wc_band *lb = &r->bands[ds->label_band - 1];
    if (wc_raster_read(r, x0, y0, w, h, &ds->label_band, 1, WC_DT_FLOAT64, scratch) != WC_OK)
        return WC_ERR;
    const size_t n = (size_t)w * (size_t)h;
    for (size_t i = 0; i < n; i++) {
        valid[i] = !wc_band_is_nodata(lb, scratch[i]);
        y[i] = scratch[i] > 0 ? 1.0f : 0.0f; /* the rule of decode_labels_and_nodata */
    }
    return WC_OK;
}

int wc_dataset_read_oracle(const wc_dataset *ds, wc_data_files *f, int64_t x0, int64_t y0,
                           int64_t w, int64_t h, float *oracle) {
    const int one = 1;
    WC_ASSERT(ds->oracle_path);
    if (wc_raster_read(&f->oracle, x0, y0, w, h, &one, 1, WC_DT_FLOAT32, oracle) != WC_OK)
        return WC_ERR;
    /* the probabilities its pixels stand for, as for a feature band: a packed oracle (UInt16
     * 0..10000 at scale 1e-4) unpacked, its nodata NaN (no probability: validation counts it) */
    const wc_band *b = &f->oracle.bands[0];
    if (!b->has_nodata && !wc_band_packed(b)) return WC_OK;
    for (size_t i = 0, n = (size_t)w * (size_t)h; i < n; i++)
        oracle[i] = wc_band_is_nodata(b, oracle[i]) ? NAN : (float)wc_band_value(b, oracle[i]);
    return WC_OK;
}

/* What decoding a turned sample works in, allocated once with the dataset (so no allocation per
 * sample): the window's values (nfeat planes of turn_side^2), labels and validity, and per
 * channel its source channel and sign in the sample's orientation, its turned value, and whether
 * it is blended (a floating-point band, or a packed one: its integers stand for a continuous
 * quantity) or taken from the nearest pixel (another integer band, which may hold classes: a
 * fuel model, a land cover code; never a blend of two). */
struct wc_turn_scratch {
    double *window, *value, *sign;
    float *labels;
    uint8_t *valid, *blend;
    int *from;
};

static struct wc_turn_scratch *turn_scratch_create(const wc_dataset *ds) {
    const size_t qq = (size_t)ds->turn_side * ds->turn_side, nf = (size_t)ds->nfeat;
    struct wc_turn_scratch *t = WC_CALLOC(1, sizeof *t);
    t->window = WC_ALLOC(nf * qq * sizeof(double));
    t->value = WC_ALLOC(nf * sizeof(double));
    t->sign = WC_ALLOC(nf * sizeof(double));
    t->labels = WC_ALLOC(qq * sizeof(float));
    t->valid = WC_ALLOC(qq);
    t->blend = WC_ALLOC(nf);
    t->from = WC_ALLOC(nf * sizeof(int));
    for (int f = 0; f < ds->nfeat; f++) {
        const wc_band *b = &ds->files.src.bands[ds->feat_bands[f] - 1];
        t->blend[f] = b->type == WC_DT_FLOAT32 || b->type == WC_DT_FLOAT64 || wc_band_packed(b);
    }
    return t;
}

static void turn_scratch_free(struct wc_turn_scratch *t) {
    if (!t) return;
    free(t->window), free(t->value), free(t->sign), free(t->labels), free(t->valid);
    free(t->blend), free(t->from);
    free(t);
}

/* The labels, and valid = 0 where the label is nodata, of a raw sample of side x side pixels;
 * each label not nodata added to tally (planning's, else NULL). */
static void decode_labels(const wc_dataset *ds, const void *raw, int side, float *y, uint8_t *valid,
                          wc_label_tally *tally) {
    const size_t pp = (size_t)side * side;
    const wc_band *bands = ds->files.src.bands;
    const wc_band *lb;
    const void *lraw;
    size_t loff;
    wc_dtype ltype;
    if (ds->label_path) {
        lb = &ds->files.label.bands[ds->label_band - 1];
        lraw = (const char *)raw + src_bytes(ds, side);
        loff = 0;
        ltype = ds->label_type;
    } else {
        lb = &bands[ds->label_band - 1];
        lraw = raw;
        loff = (size_t)ds->nfeat * pp; /* the label band is read last */
        ltype = ds->read_type;
    }
    for (size_t i = 0; i < pp; i++) {
        double v = wc_dtype_get(lraw, ltype, loff + i);
        valid[i] = !wc_band_is_nodata(lb, v);
        y[i] = v > 0 ? 1.0f : 0.0f;
        if (tally && valid[i]) wc_label_tally_add(tally, v);
        if (tally && isinf(v)) wc_label_tally_infinite(tally);
    }
}

/* The labels and the validity that nodata decides, for a raw sample of side x side pixels. */
static void decode_labels_and_nodata(const wc_dataset *ds, const void *raw, int side, float *y,
                                     uint8_t *valid, wc_label_tally *tally) {
    const size_t pp = (size_t)side * side;
    const wc_band *bands = ds->files.src.bands;
    decode_labels(ds, raw, side, y, valid, tally);
    for (int c = 0; c < ds->nfeat; c++) {
        const wc_band *b = &bands[ds->feat_bands[c] - 1];
        for (size_t i = 0; i < pp; i++)
            if (wc_band_is_nodata(b, wc_dtype_get(raw, ds->read_type, (size_t)c * pp + i)))
                valid[i] = 0;
    }
}

/* x[c] = normalized raw values (the vector bands' components turned into orientation orient);
 * a pixel whose normalized value lies beyond float's range becomes invalid. */
static void normalize_unturned(const wc_dataset *ds, const void *raw, int orient,
                               const double *mean, const double *std, float *x, uint8_t *valid) {
    const size_t pp = (size_t)ds->P * ds->P;
    for (int c = 0; c < ds->nfeat; c++) {
        const double m = mean ? mean[c] : 0.0;
        const double inv = mean ? wc_feature_inv_std(std[c], ds->constant[c]) : 1.0;
        int from;
        double sign;
        wc_augment_channel(&ds->aug, orient, c, &from, &sign);
        const wc_band *b = &ds->files.src.bands[ds->feat_bands[from] - 1];
        float *xc = x + (size_t)c * pp;
        for (size_t i = 0; i < pp; i++) {
            xc[i] = 0.0f;
            if (!valid[i]) continue;
            const double value =
                wc_band_value(b, wc_dtype_get(raw, ds->read_type, (size_t)from * pp + i));
            float v = wc_normalize(sign * value, m, inv);
            if (isfinite(v))
                xc[i] = v;
            else
                valid[i] = 0;
        }
    }
}

/* A turned sample (dataset.h): each output pixel's raw features interpolated bilinearly in the
 * turned window (floating-point bands; integer bands take the nearest pixel's value), its vector
 * pairs turned with the pixels and then into orientation s.orient, then normalized; its label that
 * of the nearest window pixel. A neighbour of zero weight is not needed (so a turn of 0 would give
 * the unturned sample exactly). */
static void resample_turned(const wc_dataset *ds, const void *raw, wc_sample s, const double *mean,
                            const double *std, float *x, float *y, uint8_t *valid) {
    const int P = ds->P, Q = window_side(ds, s), nf = ds->nfeat;
    const size_t pp = (size_t)P * P, qq = (size_t)Q * Q;
    struct wc_turn_scratch *t = ds->turn_scratch;
    float *wy = t->labels;
    uint8_t *wv = t->valid;
    double *v = t->value, *sign = t->sign, *wd = t->window;
    const uint8_t *blend = t->blend;
    int *from = t->from;
    for (int f = 0; f < nf; f++) wc_augment_channel(&ds->aug, s.orient, f, &from[f], &sign[f]);
    /* the window's values, unpacked once; a pixel with any nodata feature is invalid */
    decode_labels(ds, raw, Q, wy, wv, NULL);
    for (int f = 0; f < nf; f++) {
        const wc_band *b = &ds->files.src.bands[ds->feat_bands[f] - 1];
        double *wf = wd + (size_t)f * qq;
        for (size_t k = 0; k < qq; k++) {
            const double stored = wc_dtype_get(raw, ds->read_type, (size_t)f * qq + k);
            if (wc_band_is_nodata(b, stored)) wv[k] = 0;
            wf[k] = wc_band_value(b, stored);
        }
    }
    /* Pixel offsets (column, row) from the centre: output o takes the window's point R(-a) o,
     * so the picture turns by R(a) in pixel axes, and a vector's pixel components (dc, dr) =
     * (sgn(gt1) east, sgn(gt5) north) with it: east' = cos a east - q sin a north, north' =
     * q sin a east + cos a north, q = sgn(gt1) sgn(gt5) (augment.h's axes_sign). */
    const double ca = cos(s.turn), sa = sin(s.turn), q = ds->aug.axes_sign;
    /* the points in the patch's own pixel coordinates (the window's less its margin), so that
     * they do not depend on the window's size */
    const double half_p = 0.5 * P, centre = half_p - 0.5;
    const int margin = (Q - P) / 2;
    for (int r = 0; r < P; r++)
        for (int c = 0; c < P; c++) {
            const size_t i = (size_t)r * P + c;
            const double oc = c + 0.5 - half_p, orow = r + 0.5 - half_p;
            double sc = ca * oc + sa * orow + centre, sr = -sa * oc + ca * orow + centre;
            /* a point within 1e-9 of a pixel centre is on it (cos(pi / 2) is 6e-17, not 0), so
             * it needs no neighbour: a quarter turn moves whole pixels, as an orientation does */
            if (fabs(sc - rint(sc)) < 1e-9) sc = rint(sc);
            if (fabs(sr - rint(sr)) < 1e-9) sr = rint(sr);
            const double fc = sc - floor(sc), fr = sr - floor(sr);
            const int c0 = (int)floor(sc) + margin, r0 = (int)floor(sr) + margin;
            WC_ASSERT(c0 >= 0 && r0 >= 0 && c0 + 1 < Q && r0 + 1 < Q);
            const double w[4] = {(1 - fr) * (1 - fc), (1 - fr) * fc, fr * (1 - fc), fr * fc};
            const size_t k[4] = {(size_t)r0 * Q + c0, (size_t)r0 * Q + c0 + 1,
                                 (size_t)(r0 + 1) * Q + c0, (size_t)(r0 + 1) * Q + c0 + 1};
            int ok = 1;
            for (int n = 0; n < 4; n++) ok &= w[n] == 0 || wv[k[n]];
            const size_t nearest = (size_t)(fr < 0.5 ? r0 : r0 + 1) * Q + (fc < 0.5 ? c0 : c0 + 1);
            y[i] = wy[nearest];
            valid[i] = (uint8_t)ok;
            for (int f = 0; f < nf; f++) x[(size_t)f * pp + i] = 0.0f;
            if (!ok) continue;
            for (int f = 0; f < nf; f++) {
                const double *wf = wd + (size_t)f * qq;
                double acc = 0;
                if (!blend[f])
                    acc = wf[nearest];
                else
                    for (int n = 0; n < 4; n++)
                        if (w[n] != 0) acc += w[n] * wf[k[n]];
                v[f] = acc;
            }
            for (int p = 0; p < ds->aug.npairs; p++) {
                const int e = ds->aug.pair[p][0], nn = ds->aug.pair[p][1];
                const double ve = v[e], vn = v[nn];
                v[e] = ca * ve - q * sa * vn;
                v[nn] = q * sa * ve + ca * vn;
            }
            /* then the orientation's turn of the components (its pixels move in the caller) */
            for (int f = 0; f < nf; f++) {
                const float z =
                    wc_normalize(sign[f] * v[from[f]], mean ? mean[f] : 0.0,
                                 mean ? wc_feature_inv_std(std[f], ds->constant[f]) : 1.0);
                if (isfinite(z))
                    x[(size_t)f * pp + i] = z;
                else
                    valid[i] = 0;
            }
        }
}

long wc_dataset_decode(const wc_dataset *ds, const void *raw, wc_sample s, const double *mean,
                       const double *std, float *x, float *y, uint8_t *valid, float *oracle) {
    const size_t pp = (size_t)ds->P * ds->P;
    /* A value whose normalized form lies beyond float's range is no input the network can take
     * (it would turn the loss into NaN): the pixel is invalid, like nodata. A vector band's
     * component is turned in the raw values, then normalized as the band it becomes. */
    if (s.turn != 0) {
        WC_ASSERT(!oracle); /* turned samples train; oracles are for validation */
        resample_turned(ds, raw, s, mean, std, x, y, valid);
    } else {
        decode_labels_and_nodata(ds, raw, ds->P, y, valid, NULL);
        normalize_unturned(ds, raw, s.orient, mean, std, x, valid);
    }
    /* a pixel a later feature made invalid still holds the earlier features' values */
    long nvalid = 0;
    for (size_t i = 0; i < pp; i++) {
        nvalid += valid[i];
        if (!valid[i])
            for (int c = 0; c < ds->nfeat; c++) x[(size_t)c * pp + i] = 0.0f;
    }
    if (oracle) {
        const float *o =
            (const float *)((const char *)raw + src_bytes(ds, ds->P) + label_bytes(ds, ds->P));
        memcpy(oracle, o, pp * sizeof(float));
    }
    /* the sample's orientation (augment.h): every plane's pixels move, in place; none at 0 */
    const int orient = s.orient;
    for (int c = 0; c < ds->nfeat; c++) wc_orient_plane_f32(ds->P, orient, x + c * pp);
    wc_orient_plane_f32(ds->P, orient, y);
    if (oracle) wc_orient_plane_f32(ds->P, orient, oracle);
    wc_orient_plane_u8(ds->P, orient, valid);
    return nvalid;
}

/* ---- planning ---------------------------------------------------------------------------- */

/* Running statistics of one feature: count, mean and M2 (the sum of squared deviations from the
 * mean), combined pairwise in a fixed order (Chan et al.), so deterministic. In long double:
 * x86-64's 80-bit extended format has a 15-bit exponent, so for ANY finite doubles the
 * differences of means, their squares times the counts (up to 2^64 pixels), and M2 stay far
 * from overflow, and its 64-bit mantissa keeps 11 bits beyond double's. A platform whose long
 * double is narrower fails to compile here rather than computing NaN statistics. */
_Static_assert(LDBL_MAX_EXP >= 2 * (DBL_MAX_EXP + 1) + 2 * 64 + 16 && LDBL_MANT_DIG >= 64,
               "long double must hold the square of any double's range times 2^128");
typedef struct {
    long double n, mean, m2;
} moments;

static void moments_merge(moments *a, const moments *b) {
    if (b->n == 0) return;
    if (a->n == 0) {
        *a = *b;
        return;
    }
    long double n = a->n + b->n, d = b->mean - a->mean;
    a->mean += d * (b->n / n);
    a->m2 += b->m2 + d * d * (a->n * b->n / n);
    a->n = n;
}

/* The moments of one patch's valid values of feature c, from its unpacked values in double (in
 * the source's own precision: a Float64 value beyond float's range is still a value). Two passes,
 * the second corrected by the sum of the deviations (the "corrected two-pass" algorithm): accurate,
 * and no division per pixel. Also counts in *huge the valid values of magnitude WC_HUGE_VALUE or
 * more. */
static moments patch_moments(const wc_dataset *ds, const void *raw, int c, const uint8_t *valid,
                             int64_t *huge) {
    const size_t pp = (size_t)ds->P * ds->P, off = (size_t)c * pp;
    const wc_band *b = &ds->files.src.bands[ds->feat_bands[c] - 1];
    long double n = 0, sum = 0;
    *huge = 0;
    for (size_t i = 0; i < pp; i++) {
        if (!valid[i]) continue;
        const double v = wc_band_value(b, wc_dtype_get(raw, ds->read_type, off + i));
        sum += v, n++;
        *huge += fabs(v) >= WC_HUGE_VALUE;
    }
    if (n == 0) return (moments){0, 0, 0};
    long double mean = sum / n, dsum = 0, d2sum = 0;
    for (size_t i = 0; i < pp; i++) {
        if (!valid[i]) continue;
        long double d =
            (long double)wc_band_value(b, wc_dtype_get(raw, ds->read_type, off + i)) - mean;
        dsum += d;
        d2sum += d * d;
    }
    long double m2 = d2sum - dsum * dsum / n;
    return (moments){n, mean + dsum / n, m2 > 0 ? m2 : 0};
}

/* The normalization stored for a feature, as doubles that are finite for any finite input:
 * the mean of finite values lies within their range (clamped against the last rounding); a
 * std that is not finite, subnormal or within a few roundings of a double (2^-50 of the mean:
 * values that differ in their last bits, 1e30 and the next double, are a constant computed
 * twice) means the feature is constant over the training pixels: std max(1, |mean|), so that
 * its inputs are 0 up to that rounding (std 1 fed values of 1e30 one rounding apart as
 * +-5e13, and training diverged). A Float64 band may vary far below float's resolution
 * (1e12 + ndvi: a std of 2^-42 of its mean, which 2^-40 took for constant), and is normalized
 * in double. Returns 0 for a constant one. */
static int moments_finish(const moments *m, double *mean, double *std) {
    long double mu = m->n > 0 ? m->mean : 0;
    *mean = (double)fmaxl(-DBL_MAX, fminl(DBL_MAX, mu));
    long double sd = m->n > 1 ? sqrtl(m->m2 / m->n) : 0;
    *std = (double)fminl(DBL_MAX, sd);
    if (!(*std >= DBL_MIN) || !isfinite(*std) || *std <= fabs(*mean) * 0x1p-50) {
        *std = fmax(1.0, fabs(*mean));
        return 0;
    }
    return 1;
}

/* What the planning pass learns about one patch. */
typedef struct {
    int64_t valid, positives;
} patch_count;

/* Leaves bands out of the features: the label band, and every other band that is a label
 * too (named like the label band, or `fire`, but for case and blanks around the name: a
 * `Fire`, `FIRE` or `fire ` copy stacked beside `fire` is a label all the same): fed to the
 * network, it would hand the model the answer. */
static void leave_out_labels(wc_dataset *ds, const wc_data_config *cfg, int label) {
    const wc_raster *src = &ds->files.src;
    ds->nfeat = 0;
    for (int b = 1; b <= src->nbands; b++) {
        const char *name = src->bands[b - 1].name;
        if (b == label) continue;
        if (src->bands[b - 1].is_alpha) {
            wc_info("%s: band %d '%s' is the alpha band: the mask of the other bands, not a "
                    "feature",
                    src->path, b, name);
            continue;
        }
        if (wc_labels_name_like(name, WC_LABEL_BAND_NAME) ||
            (label && wc_labels_name_like(name, src->bands[label - 1].name))) {
            if (cfg->labels)
                wc_info("%s: band %d '%s' is a label band, not a feature: left out (--labels %s "
                        "gives the labels)",
                        src->path, b, name, cfg->labels);
            else
                wc_info("%s: band %d '%s' is a label band, not a feature: left out (the labels "
                        "are band %d '%s')",
                        src->path, b, name, label, src->bands[label - 1].name);
            continue;
        }
        ds->feat_bands[ds->nfeat++] = b;
    }
}

static int choose_features(wc_dataset *ds, const wc_data_config *cfg) {
    const wc_raster *src = &ds->files.src;
    ds->feat_bands = WC_ALLOC(sizeof(int) * src->nbands);
    ds->read_bands = WC_ALLOC(sizeof(int) * (src->nbands + 1));
    int label_in_src = 0;
    if (!cfg->labels) {
        int by_number;
        label_in_src = wc_labels_find_band(
            src, cfg->label_band ? cfg->label_band : WC_LABEL_BAND_NAME, 1, &by_number);
        if (!label_in_src) return WC_ERR;
        ds->label_band = label_in_src;
    }
    leave_out_labels(ds, cfg, label_in_src);
    if (ds->nfeat == 0) {
        wc_error("%s has no feature bands besides the label band", src->path);
        return WC_ERR;
    }
    /* a model names its inputs by band description (bandmap.h): two features of one name could
     * not be told apart when the model maps a raster, so the run would end without a map */
    for (int i = 1; i < ds->nfeat; i++)
        for (int j = 0; j < i; j++) {
            const char *name = src->bands[ds->feat_bands[i] - 1].name;
            if (strcmp(src->bands[ds->feat_bands[j] - 1].name, name) != 0) continue;
            wc_error("%s: bands %d and %d are both named '%s'%s: a model names its inputs by "
                     "the bands' descriptions and could not tell these apart when it maps a "
                     "raster; describe them apart (a VRT's <Description>, or GDALSetDescription)",
                     src->path, ds->feat_bands[j], ds->feat_bands[i], name,
                     src->bands[ds->feat_bands[j] - 1].undescribed ||
                             src->bands[ds->feat_bands[i] - 1].undescribed
                         ? " (a band without a description is named band_<its number>)"
                         : wc_raster_renamed_note(src, name));
            return WC_ERR;
        }
    memcpy(ds->read_bands, ds->feat_bands, sizeof(int) * ds->nfeat);
    ds->read_nb = ds->nfeat;
    if (label_in_src) ds->read_bands[ds->read_nb++] = label_in_src;
    ds->read_type = wc_band_read_type(&src->bands[ds->read_bands[0] - 1]);
    for (int i = 1; i < ds->read_nb; i++)
        ds->read_type =
            wc_dtype_union(ds->read_type, wc_band_read_type(&src->bands[ds->read_bands[i] - 1]));
    return WC_OK;
}

/* The label source: "band:NAME" for a band of the tiles (predict reads that name), with
 * label_band=N when other bands carry the same name (chosen by number); "file:PATH,band:N" for
 * a label raster (N: the band taken from it), "file:PATH" for polygons. */
static void make_fingerprint(wc_dataset *ds, int label_source_band) {
    const wc_raster *r = &ds->files.src;
    char crs[128];
    wc_raster_crs_name(r->wkt, crs, sizeof crs);
    /* sized for every band name, however many */
    size_t cap = 512 + 3 * (strlen(ds->cfg.labels ? ds->cfg.labels : "") + PATH_MAX + 4096);
    for (int i = 0; i < r->nbands; i++) cap += strlen(r->bands[i].name) * 3 + 96;
    char *p = ds->fingerprint = WC_ALLOC(cap);
    size_t left = cap;
    int n = snprintf(p, left,
                     "size=%dx%d;geotransform=%.10g,%.10g,%.10g,%.10g,%.10g,%.10g;crs=%s;"
                     "bands=",
                     r->width, r->height, r->gt[0], r->gt[1], r->gt[2], r->gt[3], r->gt[4],
                     r->gt[5], crs);
    p += n, left -= (size_t)n;
    for (int i = 0; i < r->nbands; i++) {
        n = snprintf(p, left, "%s%s:%s", i ? "," : "", r->bands[i].name,
                     wc_dtype_name(r->bands[i].type));
        p += n, left -= (size_t)n;
    }
    /* Packed bands, only when there are (so the fingerprint of unpacked data is what it always
     * was): a checkpoint of a version that normalized the stored values of a packed band, or of
     * other packing, is then other data, and a resume does not mix the two. */
    for (int i = 0, first = 1; i < r->nbands; i++) {
        if (!wc_band_packed(&r->bands[i])) continue;
        n = snprintf(p, left, "%s%s:%.17g:%.17g", first ? ";packed=" : ",", r->bands[i].name,
                     r->bands[i].scale, r->bands[i].offset);
        p += n, left -= (size_t)n;
        first = 0;
    }
    /* masked bands and rounded nodata values, the same rule: read otherwise than before */
    for (int i = 0, first = 1; i < r->nbands; i++) {
        if (!r->bands[i].masked && !r->bands[i].nodata_rounded) continue;
        n = snprintf(p, left, "%s%s:%s", first ? ";read=" : ",", r->bands[i].name,
                     r->bands[i].masked ? "masked" : "nodata_rounded");
        p += n, left -= (size_t)n;
        first = 0;
    }
    if (ds->label_path && ds->cfg.labels) {
        char *file = wc_kv_escape(ds->cfg.labels);
        if (label_source_band)
            n = snprintf(p, left, ";labels=file:%s,band:%d", file, label_source_band);
        else
            n = snprintf(p, left, ";labels=file:%s", file);
        free(file);
        p += n, left -= (size_t)n;
        /* The path above is as typed, relative to where the run started: a resume started
         * elsewhere types another. This one names the same file from anywhere, so a resume can
         * tell that two spellings are one file (snapshot.c). */
        char absolute[PATH_MAX + 4096];
        wc_path_absolute(ds->cfg.labels, absolute, sizeof absolute);
        char *escaped = wc_kv_escape(absolute);
        snprintf(p, left, ";" WC_FINGERPRINT_LABELS_FILE "=%s", escaped);
        free(escaped);
        return;
    }
    const char *name = r->bands[ds->label_band - 1].name;
    int same_name = 0;
    for (int i = 0; i < r->nbands; i++) same_name += strcmp(r->bands[i].name, name) == 0;
    n = snprintf(p, left, ";labels=band:%s", name);
    if (same_name > 1) snprintf(p + n, left - (size_t)n, ";label_band=%d", ds->label_band);
}

/* Chooses validation blocks: in a seeded random order, until their kept patches reach the
 * fraction, and at least one block for any fraction above 0 (a tiny fraction of a small raster
 * rounds to no patch). Blocks with no kept patch are skipped; at least one block stays for
 * training. */
static void split(wc_dataset *ds) {
    const int B = ds->val_block;
    const long bcols = (ds->cols + B - 1) / B, brows = (ds->rows + B - 1) / B;
    ds->nblocks = bcols * brows;
    long *kept_in = WC_CALLOC(ds->nblocks, sizeof(long));
    long kept_total = 0;
    for (long id = 0; id < ds->npatches; id++) {
        if (!ds->keep[id]) continue;
        long bx = (id % ds->cols) / B, by = (id / ds->cols) / B;
        kept_in[by * bcols + bx]++;
        kept_total++;
    }
    uint32_t *order = WC_ALLOC(sizeof(uint32_t) * ds->nblocks);
    wc_rng_permutation(order, (size_t)ds->nblocks, ds->cfg.seed, WC_STREAM_SPLIT, 0);
    uint8_t *val_block = WC_CALLOC(ds->nblocks, 1);
    long target = lround(ds->cfg.val_fraction * (double)kept_total), taken = 0, blocks_used = 0;
    if (ds->cfg.val_fraction > 0 && target == 0) target = 1;
    long blocks_nonempty = 0;
    for (long b = 0; b < ds->nblocks; b++) blocks_nonempty += kept_in[b] > 0;
    ds->nval_blocks = 0;
    for (long i = 0; i < ds->nblocks && taken < target; i++) {
        long b = order[i];
        if (kept_in[b] == 0) continue;
        if (blocks_used + 1 >= blocks_nonempty) break; /* keep one block for training */
        val_block[b] = 1;
        taken += kept_in[b];
        blocks_used++;
        ds->nval_blocks++;
    }
    /* sized by their counts, not by the grid: a sparse mosaic keeps few of its patches */
    ds->train = WC_ALLOC(sizeof(uint32_t) * (size_t)(kept_total - taken));
    ds->val = WC_ALLOC(sizeof(uint32_t) * (size_t)taken);
    ds->ntrain = ds->nval = 0;
    for (long id = 0; id < ds->npatches; id++) {
        long bx = (id % ds->cols) / B, by = (id / ds->cols) / B;
        ds->is_val[id] = val_block[by * bcols + bx];
        if (!ds->keep[id]) continue;
        if (ds->is_val[id])
            ds->val[ds->nval++] = (uint32_t)id;
        else
            ds->train[ds->ntrain++] = (uint32_t)id;
    }
    free(kept_in);
    free(order);
    free(val_block);
}

/* Planning ends in one of these; a stop is no error (train.c exits 75 on it). Ordered so that
 * the ranks' largest is the outcome for all of them: a read error on any rank makes planning
 * fail, else a stop signal on any rank stops it. */
enum { PLAN_OK, PLAN_STOPPED, PLAN_ERR };

/* Raw bytes read between two stop agreements in the planning loop: about 0.1 s of reading from
 * a cold disk (the ~120 MB/s measured for Float32 tiles), a few ms from GDAL's cache, against a
 * 4-byte Allreduce of microseconds. */
#define PLAN_AGREE_BYTES ((size_t)16 << 20)

/* Saturating size arithmetic: a need too large to count is simply too large. */
static uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
static uint64_t sat_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Bytes planning holds at its peak (in split(), while plan()'s arrays are alive) on a rank whose
 * share is `mine` patches, `kept` of them with room for their statistics: for the whole grid,
 * the keep and is_val flags, the train and val ids (at most one per patch) and split()'s
 * per-block arrays; per patch of its share (and its rows' ends), the kept and empty flags; per
 * kept patch, its counts and the moments of every feature; and one patch's buffers (the label
 * counted as Float64: its type is known only once the labels are prepared). */
static uint64_t plan_bytes(const wc_dataset *ds, long mine, long kept) {
    const uint64_t B = (uint64_t)ds->val_block, pp = (uint64_t)ds->P * (uint64_t)ds->P;
    const uint64_t nblocks = sat_mul((ds->cols + B - 1) / B, (ds->rows + B - 1) / B);
    uint64_t grid = sat_mul((uint64_t)ds->npatches, 2 + sizeof(uint32_t));
    grid = sat_add(grid, sat_mul(nblocks, sizeof(long) + sizeof(uint32_t) + 1));
    const uint64_t per_kept =
        sat_add(sizeof(patch_count), sat_mul((uint64_t)ds->nfeat, sizeof(moments)));
    const uint64_t one =
        sat_mul(pp, sat_add(sat_mul((uint64_t)ds->read_nb, wc_dtype_size(ds->read_type)),
                            sizeof(double) + sizeof(float) + 1));
    const uint64_t flags = sat_add(sat_mul((uint64_t)mine, 2), (uint64_t)ds->cols * 2 + 2);
    return sat_add(sat_add(grid, sat_add(flags, sat_mul((uint64_t)kept, per_kept))), one);
}

/* Where the labels come from, for messages: "band N 'NAME' of TILES", or "band N of RASTER
 * (from LABELS)" when --labels was made into a raster on the grid. */
static void label_source(const wc_dataset *ds, char *out, size_t size) {
    if (!ds->label_path)
        wc_labels_describe(out, size, ds->label_band, ds->files.src.bands[ds->label_band - 1].name,
                           ds->tiles_path, NULL);
    else
        wc_labels_describe(out, size, ds->label_band, NULL, ds->label_path, ds->cfg.labels);
}

/* Reads patch id and computes what planning learns from it: its valid and burned pixels, and
 * the moments of each feature over its valid pixels (m: nfeat of them). A window GDAL knows to be
 * nodata (known_empty: a mostly empty mosaic's holes, wc_raster_empty_cells) is not read:
 * reading would find no valid pixel, which is what it counts. */
static int plan_patch(wc_dataset *ds, long id, int known_empty, void *raw, float *y, uint8_t *valid,
                      patch_count *pc, moments *m, int64_t *huge, wc_label_tally *tally) {
    *pc = (patch_count){0, 0};
    memset(huge, 0, sizeof(int64_t) * (size_t)ds->nfeat);
    if (known_empty) return WC_OK;
    const wc_sample unshifted = {.id = (uint32_t)id};
    if (wc_dataset_read_patch(ds, &ds->files, unshifted, raw, 0) != WC_OK) return WC_ERR;
    decode_labels_and_nodata(ds, raw, ds->P, y, valid, tally);
    const size_t pp = (size_t)ds->P * ds->P;
    for (size_t i = 0; i < pp; i++) {
        pc->valid += valid[i];
        pc->positives += valid[i] && y[i] > 0;
    }
    for (int c = 0; c < ds->nfeat; c++) m[c] = patch_moments(ds, raw, c, valid, &huge[c]);
    return WC_OK;
}

/* What planning keeps of a rank's share: every patch's kept flag, and the counts and moments of
 * the kept patches alone, in grid order. A mostly empty mosaic keeps few of its many patches, so
 * the arrays are sized by the patches GDAL does not know to be empty (at most that many are
 * kept), not by the grid. */
typedef struct {
    uint8_t *kept;      /* (share) enough valid pixels */
    long n, cap;        /* kept patches, and room for */
    patch_count *count; /* (cap) */
    moments *mom;       /* (cap * nfeat) */
    int64_t *huge;      /* (nfeat) valid values of WC_HUGE_VALUE or more in the kept patches */
    int64_t unread;     /* patches known empty, not read */
} plan_share;

/* Room for a share of n patches, at most cap of them kept. */
static void share_alloc(plan_share *s, long n, long cap, int nfeat) {
    s->kept = WC_CALLOC_FOR(n + 1, 1, "the data's plan (a flag per patch)");
    s->cap = cap;
    s->count = WC_ALLOC_FOR(sizeof(patch_count) * (size_t)(cap + 1),
                            "the data's plan (label counts per patch)");
    s->mom = WC_ALLOC_FOR(sizeof(moments) * (size_t)(cap + 1) * (size_t)nfeat,
                          "the data's plan (feature statistics per patch)");
    s->huge = WC_CALLOC(nfeat, sizeof(int64_t));
}

static void share_add(plan_share *s, int nfeat, const patch_count *pc, const moments *m) {
    WC_ASSERT(s->n < s->cap);
    s->count[s->n] = *pc;
    memcpy(&s->mom[(size_t)s->n * (size_t)nfeat], m, sizeof(moments) * (size_t)nfeat);
    s->n++;
}

static void share_free(plan_share *s) {
    free(s->kept), free(s->count), free(s->mom), free(s->huge);
}

/* The largest share of the patches any rank has: every rank runs its loop that far. */
static long largest_share(long n, int R) {
    long most = 0;
    for (int r = 0; r < R; r++) {
        long a, b;
        wc_dist_share(n, r, R, &a, &b);
        most = WC_MAX(most, b - a);
    }
    return most;
}

/* The patches GDAL knows to be empty (reading would find no valid pixel), over the grid rows of
 * the share [lo, hi): a flag per cell from row *row0 on. */
static uint8_t *known_empty(wc_dataset *ds, long lo, long hi, long *row0) {
    *row0 = lo / ds->cols;
    const long nrows = hi > lo ? (hi - 1) / ds->cols - *row0 + 1 : 0;
    uint8_t *empty = WC_ALLOC((size_t)nrows * (size_t)ds->cols + 1);
    wc_raster_empty_cells(&ds->files.src, ds->feat_bands, ds->nfeat, ds->read_type, ds->x_origin,
                          ds->y_origin + (int64_t)*row0 * ds->P, ds->P, ds->cols, (int)nrows,
                          empty);
    return empty;
}

/* The reading of planning: this rank reads its share [lo, hi) of the patches into *s and its
 * labels into *tally, agreeing with the other ranks on a stop or a read error every K patches
 * of loop index (see plan). Returns the agreed PLAN_*. */
static int read_share(wc_dataset *ds, long lo, long hi, plan_share *s, wc_label_tally *tally) {
    const int R = wc_dist_size(), rank = wc_dist_rank();
    const size_t pp = (size_t)ds->P * ds->P;
    void *raw = WC_ALLOC(wc_dataset_patch_bytes(ds, 0));
    float *y = WC_ALLOC(sizeof(float) * pp);
    uint8_t *valid = WC_ALLOC(pp);
    const long nmine = hi - lo;
    const long min_valid = (long)ceil(ds->cfg.min_valid * (double)pp);
    long row0;
    uint8_t *empty = known_empty(ds, lo, hi, &row0);
    for (long j = 0; j < nmine; j++) s->unread += empty[lo + j - row0 * ds->cols];
    share_alloc(s, nmine, nmine - (long)s->unread, ds->nfeat);
    moments *patch_mom = WC_CALLOC(ds->nfeat, sizeof(moments));
    int64_t *patch_huge = WC_CALLOC(ds->nfeat, sizeof(int64_t)); /* as s->huge, of one patch */
    const long most = largest_share(ds->npatches, R);
    const long K = WC_MAX(1, (long)(PLAN_AGREE_BYTES / wc_dataset_patch_bytes(ds, 0)));
    int status = WC_OK, agreed = PLAN_OK;
    const double t0 = wc_now();
    double said = t0;
    for (long j = 0; j < most; j++) {
        if (j < nmine && status == WC_OK) {
            patch_count pc;
            status = plan_patch(ds, lo + j, empty[lo + j - row0 * ds->cols], raw, y, valid, &pc,
                                patch_mom, patch_huge, tally);
            s->kept[j] = status == WC_OK && pc.valid >= min_valid && pc.valid > 0;
            if (s->kept[j]) share_add(s, ds->nfeat, &pc, patch_mom);
            for (int c = 0; s->kept[j] && c < ds->nfeat; c++) s->huge[c] += patch_huge[c];
        }
        if ((j + 1) % K == 0 || j + 1 == most) {
            agreed = wc_dist_max_int(status != WC_OK       ? PLAN_ERR
                                     : wc_stop_requested() ? PLAN_STOPPED
                                                           : PLAN_OK);
            if (agreed != PLAN_OK) break;
        }
        const double now = wc_now();
        /* a large mosaic takes minutes: rank 0 says how far its share is, at the cadence of
         * every long phase's lines */
        if (rank == 0 && now - said >= wc_progress_seconds() && j + 1 < nmine) {
            wc_info("planning %s: %ld of rank 0's %ld patches read (%.0f%%, %ld kept) in %.0f s, "
                    "about %.0f s left",
                    ds->tiles_path, j + 1, nmine, 100.0 * (double)(j + 1) / (double)nmine, s->n,
                    now - t0, (now - t0) * (double)(nmine - j - 1) / (double)(j + 1));
            said = now;
        }
    }
    free(raw), free(y), free(valid), free(patch_mom), free(patch_huge), free(empty);
    ds->plan_peak_bytes = plan_bytes(ds, nmine, s->cap);
    if (agreed == PLAN_ERR && status == WC_OK)
        wc_error("stopping: another rank could not read its patches");
    return agreed;
}

/* Every rank needs every patch's kept flag for the split: the shares' flags (nmine of this
 * rank's), gathered into ds->keep. */
static void gather_kept(wc_dataset *ds, const uint8_t *kept, long nmine) {
    const int R = wc_dist_size();
    size_t *counts = WC_ALLOC(sizeof(size_t) * R);
    for (int r = 0; r < R; r++) {
        long a, b;
        wc_dist_share(ds->npatches, r, R, &a, &b);
        counts[r] = (size_t)(b - a);
    }
    wc_dist_allgatherv(kept, (size_t)nmine, ds->keep, counts);
    free(counts);
}

/* Every rank (the count is summed); rank 0 says how many patches were not read, GDAL knowing
 * them to be nodata: planning a sparse mosaic is that much quicker than its grid suggests. */
static void say_unread(const wc_dataset *ds, int64_t unread_here) {
    int64_t unread[2] = {unread_here, ds->npatches}; /* known empty; all patches */
    wc_dist_sum_i64(unread, 1);
    if (wc_dist_rank() == 0 && unread[0] > 0)
        wc_info("planning %s: %" PRId64 " of %" PRId64 " patches not read (GDAL knows them to be "
                "nodata)",
                ds->tiles_path, unread[0], unread[1]);
}

/* The length of the chain of sums that planning passes from rank to rank: each feature's
 * moments (n, mean, m2), then the training pixels and their positives. */
static size_t chain_len(const wc_dataset *ds) {
    return (size_t)ds->nfeat * 3 + 2;
}

/* The sums the normalization needs, over the training patches of every rank, into chain
 * (chain_len). The ordered chain: rank r continues rank r-1's running sums over patches in grid
 * order, which reproduces exactly the single-process loop. It carries the long doubles
 * themselves (bytes), so nothing is rounded on the way; the pixel counts ride along, exact to
 * 2^64. Every rank gets the last rank's sums. */
static void chain_sums(const wc_dataset *ds, const plan_share *s, long lo, long hi,
                       long double *chain) {
    const int R = wc_dist_size(), rank = wc_dist_rank();
    const size_t chain_n = chain_len(ds);
    if (rank > 0) wc_dist_recv(chain, chain_n * sizeof(long double), rank - 1);
    moments *acc = WC_CALLOC(ds->nfeat, sizeof(moments));
    for (int c = 0; c < ds->nfeat; c++)
        acc[c] = (moments){chain[3 * c], chain[3 * c + 1], chain[3 * c + 2]};
    long double train_pixels = chain[chain_n - 2], train_pos = chain[chain_n - 1];
    for (long id = lo, k = -1; id < hi; id++) {
        if (!ds->keep[id]) continue;
        k++; /* the kept patches' arrays are in grid order */
        if (ds->is_val[id]) continue;
        for (int c = 0; c < ds->nfeat; c++)
            moments_merge(&acc[c], &s->mom[(size_t)k * (size_t)ds->nfeat + c]);
        train_pixels += s->count[k].valid;
        train_pos += s->count[k].positives;
    }
    for (int c = 0; c < ds->nfeat; c++) {
        chain[3 * c] = acc[c].n, chain[3 * c + 1] = acc[c].mean, chain[3 * c + 2] = acc[c].m2;
    }
    chain[chain_n - 2] = train_pixels, chain[chain_n - 1] = train_pos;
    if (rank < R - 1) wc_dist_send(chain, chain_n * sizeof(long double), rank + 1);
    wc_dist_bcast(chain, chain_n * sizeof(long double), R - 1);
    free(acc);
}

/* Whether feature c is a component of a vector pair that mirrored or turned samples feed its
 * partner's values (augment.h): its own values may be constant, its inputs are not. */
static int takes_partner_values(const wc_dataset *ds, int c) {
    if (ds->aug.norient <= 1 && ds->turn_max == 0) return 0;
    for (int k = 0; k < ds->aug.npairs; k++)
        if (ds->aug.pair[k][0] == c || ds->aug.pair[k][1] == c) return 1;
    return 0;
}

/* Every rank: each feature's mean and std and the training pixels from chain_sums' chain;
 * rank 0 warns of the bands the statistics cannot be trusted on (constant, or holding `huge`
 * values: summed over the ranks). */
static void set_statistics(wc_dataset *ds, const long double *chain, const int64_t *huge) {
    const int rank = wc_dist_rank();
    const size_t chain_n = chain_len(ds);
    for (int c = 0; c < ds->nfeat; c++) {
        moments m = {chain[3 * c], chain[3 * c + 1], chain[3 * c + 2]};
        /* (said once, by rank 0; a band without training pixels is not constant: there is
         * nothing to train on, which the caller says) */
        const int constant = !moments_finish(&m, &ds->mean[c], &ds->std[c]) && m.n > 0;
        const int partner = constant && takes_partner_values(ds, c);
        ds->constant[c] = constant && !partner;
        if (constant && rank == 0)
            wc_warn("%s, band %d (%s) is constant over the training pixels (%.6g): %s",
                    ds->tiles_path, ds->feat_bands[c],
                    ds->files.src.bands[ds->feat_bands[c] - 1].name, ds->mean[c],
                    partner ? "its own values carry no information (mirrored and turned "
                              "samples feed it its vector partner's)"
                            : "it carries no information (its inputs are 0, here and in every "
                              "map of this model)");
        char spread[48] = "constant"; /* its std is then a stand-in scale, not a spread */
        if (!constant) snprintf(spread, sizeof spread, "std %.4g", ds->std[c]);
        if (huge[c] > 0 && rank == 0)
            wc_warn("%s, band %d (%s): %" PRId64 " valid pixel%s of the kept patches (training "
                    "and validation) hold values of magnitude %g or more, which no measurement "
                    "has: an undeclared nodata (the -3.4e38 of float rasters, a netCDF fill "
                    "value)? Taken as data, they swamp the normalization where they fall in "
                    "training patches (here mean %.4g, %s), leaving every other value of "
                    "the band near 0, and saturate the network where they are mapped; declare "
                    "the band's nodata (gdal_edit.py -a_nodata) or mask them",
                    ds->tiles_path, ds->feat_bands[c],
                    ds->files.src.bands[ds->feat_bands[c] - 1].name, huge[c],
                    huge[c] == 1 ? "" : "s", WC_HUGE_VALUE, ds->mean[c], spread);
    }
    ds->train_pixels = (int64_t)chain[chain_n - 2];
    ds->train_positives = (int64_t)chain[chain_n - 1];
}

/* The planning pass: this rank reads its share of the patches, counts valid pixels, and
 * computes each patch's moments; the shares are then combined (see dataset.h).
 *
 * Reading can take minutes on a large mosaic, so a stop signal must end it: but the ranks read
 * their shares independently, so they agree on a stop (and on a read error) in a small
 * collective every K patches of loop index, at the same points on every rank. The loop runs
 * to the largest share on every rank (a rank past its own share only takes part), so every rank
 * makes the same number of calls; time plays no part in when they happen. */
static int plan(wc_dataset *ds) {
    long lo, hi;
    wc_dist_share(ds->npatches, wc_dist_rank(), wc_dist_size(), &lo, &hi);
    plan_share share = {0};
    wc_label_tally tally = WC_LABEL_TALLY_INIT; /* every label of this rank's share */
    const int agreed = read_share(ds, lo, hi, &share, &tally);
    if (agreed != PLAN_OK) {
        share_free(&share);
        return agreed;
    }
    wc_dist_sum_i64(share.huge, ds->nfeat);
    char source[8600];
    label_source(ds, source, sizeof source);
    wc_label_tally_say(&tally, source);
    gather_kept(ds, share.kept, hi - lo);
    say_unread(ds, share.unread);
    split(ds);
    long double *chain = WC_CALLOC(chain_len(ds), sizeof(long double));
    chain_sums(ds, &share, lo, hi, chain);
    set_statistics(ds, chain, share.huge);
    free(chain);
    share_free(&share);
    return PLAN_OK;
}

/* ---- what planning needs ----------------------------------------------------------------- */

/* The orientations of training samples and the vector bands they turn (augment.h). A vector
 * band stored unsigned holds its components with an offset, so a turn cannot flip its sign. */
static int plan_augmentation(wc_dataset *ds, const wc_data_config *cfg) {
    const wc_raster *src = &ds->files.src;
    const char **names = WC_ALLOC(sizeof(char *) * (ds->nfeat + 1));
    for (int c = 0; c < ds->nfeat; c++) names[c] = src->bands[ds->feat_bands[c] - 1].name;
    wc_augment_grid grid = {.has_gt = src->has_gt,
                            .geographic = wc_raster_crs_is_geographic(src->wkt)};
    memcpy(grid.gt, src->gt, sizeof grid.gt);
    int rc = wc_augment_plan(&ds->aug, cfg->augment, cfg->turn_deg, cfg->vector_bands, names,
                             ds->nfeat, &grid, ds->tiles_path);
    const int turns_vectors = cfg->augment || cfg->turn_deg > 0;
    for (int k = 0; rc == WC_OK && turns_vectors && k < ds->aug.npairs; k++)
        for (int side = 0; side < 2; side++) {
            const int b = ds->feat_bands[ds->aug.pair[k][side]];
            const wc_dtype t = src->bands[b - 1].type;
            /* (a packed band's values are stored * scale + offset: signed whatever t is) */
            if ((t == WC_DT_BYTE || t == WC_DT_UINT16 || t == WC_DT_UINT32) &&
                !wc_band_packed(&src->bands[b - 1])) {
                wc_error("%s: vector band %d '%s' of %s is stored as %s: an unsigned band "
                         "holds its components with an offset, which a turn cannot flip; store "
                         "it signed, or --vector-bands none",
                         cfg->augment ? "--augment" : "--rotate", b, names[ds->aug.pair[k][side]],
                         ds->tiles_path, wc_dtype_name(t));
                rc = WC_ERR;
                break;
            }
        }
    free(names);
    return rc;
}

/* Collective: refuses a patch grid whose planning would not fit this machine, before anything
 * of that size is allocated (an allocation failure would say neither which file nor why). The
 * ranks on one machine share its memory, so their needs are summed against half of its
 * physical memory; every rank returns the same, and one message is logged. */
static int plan_fits(const wc_dataset *ds) {
    const int R = wc_dist_size(), rank = wc_dist_rank();
    char(*hosts)[64] = WC_CALLOC((size_t)R, 64);
    char host[64] = "";
    gethostname(host, sizeof host - 1); /* a failure leaves "": all ranks count as here */
    size_t *counts = WC_ALLOC(sizeof(size_t) * R);
    for (int r = 0; r < R; r++) counts[r] = 64;
    wc_dist_allgatherv(host, 64, hosts, counts);
    uint64_t here = 0, total = 0, mine = 0;
    int nhere = 0;
    for (int r = 0; r < R; r++) {
        long lo, hi;
        wc_dist_share(ds->npatches, r, R, &lo, &hi);
        const uint64_t need = plan_bytes(ds, hi - lo, hi - lo); /* at most every patch kept */
        total = sat_add(total, need);
        if (r == rank) mine = need;
        if (strcmp(hosts[r], host) == 0) here = sat_add(here, need), nhere++;
    }
    free(hosts), free(counts);
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const uint64_t phys = pages > 0 && page > 0 ? sat_mul((uint64_t)pages, (uint64_t)page)
                                                : UINT64_MAX; /* unknown: only SIZE_MAX */
    const int too_big = here > phys / 2 || here > SIZE_MAX;
    const int any_too_big = wc_dist_any(too_big);
    /* rank 0 speaks for its machine; only when that one is large enough do the others */
    const int rank0_too_big = wc_dist_any(rank == 0 && too_big);
    if (too_big && (rank == 0 || !rank0_too_big)) {
        char a[32], b[32], c[32], d[32];
        wc_error("%s: %dx%d pixels make %ld patches of %dx%d (%d feature%s); planning them needs "
                 "%s on each rank (%s for the %d rank(s) on this machine, %s in all), more than "
                 "half of this machine's %s of physical memory: use a larger --patch (the need "
                 "falls with its square) or split the raster into parts",
                 ds->tiles_path, ds->width, ds->height, ds->npatches, ds->P, ds->P, ds->nfeat,
                 ds->nfeat == 1 ? "" : "s", wc_fmt_bytes(a, sizeof a, (double)mine),
                 wc_fmt_bytes(b, sizeof b, (double)here), nhere,
                 wc_fmt_bytes(c, sizeof c, (double)total), wc_fmt_bytes(d, sizeof d, (double)phys));
    }
    return any_too_big ? WC_ERR : WC_OK;
}

/* Collective: refuses a read-ahead (cfg's slots of patches) that cannot fit this machine before
 * minutes of planning are spent: its patches' features alone, summed over the ranks on the
 * machine, against its physical memory. The whole memory plan is checked once the run is built
 * (train.c); this is the part the options can make absurd. */
static int read_ahead_fits(const wc_dataset *ds) {
    const int side = ds->turn_max > 0 ? WC_MAX(ds->P, ds->turn_side) : ds->P;
    const uint64_t need = sat_mul(
        sat_mul((uint64_t)WC_MAX(ds->cfg.read_slots, 0), (uint64_t)WC_MAX(ds->cfg.slot_patches, 0)),
        (uint64_t)src_bytes(ds, side));
    int speaks;
    const uint64_t here = wc_dist_host_sum_u64(need, &speaks);
    const uint64_t phys = wc_physical_memory_bytes();
    const int too_big = phys > 0 && here > phys;
    if (too_big && speaks) {
        char a[32], b[32], c[32];
        wc_error("the read-ahead of %d slots of --micro-batch %d patches (%dx%d px, %d band%s as "
                 "%s) needs at least %s per rank (%s for the ranks on this machine), more than "
                 "its %s of physical memory: %s, or run fewer ranks per machine",
                 ds->cfg.read_slots, ds->cfg.slot_patches, side, side, ds->read_nb,
                 ds->read_nb == 1 ? "" : "s", wc_dtype_name(ds->read_type),
                 wc_fmt_bytes(a, sizeof a, (double)need),
                 wc_fmt_bytes(b, sizeof b, (double)WC_MAX(here, need)), /* the sum is capped */
                 wc_fmt_bytes(c, sizeof c, (double)phys),
                 ds->cfg.read_advice ? ds->cfg.read_advice : "lower --prefetch or --batch");
    }
    return wc_dist_any(too_big) ? WC_ERR : WC_OK;
}

/* The side of the square read around a patch turned by up to cfg->turn_deg (--rotate), and
 * the scratch its resampling uses. */
static void plan_turn(wc_dataset *ds, const wc_data_config *cfg) {
    /* A P x P square turned by a reaches (|cos a| + |sin a|) P / 2 from its centre along each
     * axis, which grows with |a| up to sqrt 2 P / 2 (at 45 degrees): the largest window is that
     * of the largest angle (1e-9 more, for the rounding of each angle's own cos and sin). */
    ds->turn_max = cfg->turn_deg * M_PI / 180.0;
    const double reach =
        ds->turn_max >= M_PI / 4 ? sqrt(2.0) : cos(ds->turn_max) + sin(ds->turn_max);
    ds->turn_side = turn_window_side(ds->P, reach + 1e-9);
    ds->turn_scratch = turn_scratch_create(ds);
}

/* The patch grid on the tiles and the validation block, in patches. WC_ERR after a message
 * when no whole patch fits or the patches are more than a run can address. */
static int lay_patch_grid(wc_dataset *ds, const wc_data_config *cfg) {
    /* The patch grid is the global grid of P x P cells (raster.h): its first cell starts at the
     * first pixel whose global coordinate is a multiple of P. So adjacent rasters of one grid
     * share their cells, every model (whatever its pooling) is trained and validated on the same
     * patches, and since P is a multiple of the network's alignment (the pooling needs it),
     * patches sit at the pooling phase maps and validation use. */
    long long gcol, grow;
    wc_raster_global_origin(&ds->files.src, &gcol, &grow);
    ds->x_origin = wc_pmod(-gcol, ds->P), ds->y_origin = wc_pmod(-grow, ds->P);
    ds->cols = (ds->width - ds->x_origin) / ds->P;
    ds->rows = (ds->height - ds->y_origin) / ds->P;
    if (ds->cols < 1 || ds->rows < 1) {
        if (ds->width < ds->P || ds->height < ds->P)
            wc_error("%s is %dx%d pixels, smaller than one %dx%d patch (--patch)", ds->tiles_path,
                     ds->width, ds->height, ds->P, ds->P);
        else
            wc_error("%s is %dx%d pixels, but no whole %dx%d patch fits on the grid of patch "
                     "cells its georeferencing defines (the first cell starts %d px right and "
                     "%d px down, where the global pixel coordinates are multiples of %d, so "
                     "that adjacent rasters share their cells): use a smaller --patch",
                     ds->tiles_path, ds->width, ds->height, ds->P, ds->P, ds->x_origin,
                     ds->y_origin, ds->P);
        return WC_ERR;
    }
    ds->npatches = (long)ds->cols * ds->rows;
    if (ds->npatches > (long)UINT32_MAX) {
        /* patch ids are 32-bit (they fill the read queues and the epoch permutations) */
        wc_error("%s: %dx%d pixels make %ld patches of %dx%d, more than the 2^32 a run can "
                 "address: use a larger --patch",
                 ds->tiles_path, ds->width, ds->height, ds->npatches, ds->P, ds->P);
        return WC_ERR;
    }
    /* a block larger than the patch grid is the whole grid */
    ds->val_block =
        WC_MAX(1, WC_MIN((cfg->val_block_px + ds->P / 2) / ds->P, WC_MAX(ds->cols, ds->rows)));
    return WC_OK;
}

/* Collective: opens the oracle, which must be on the tiles' grid: it is read pixel for pixel
 * beside the labels. One found beside --tiles on another grid (a region's, beside a VRT of part
 * of it) is left out with a warning; one named by --oracle is an error (an option the user asked
 * for is not dropped by a warning that scrolls by). WC_ERR then, or when a rank cannot open it or
 * its sources are refused. */
static int open_oracle(wc_dataset *ds, const wc_data_config *cfg) {
    wc_raster o;
    if (wc_dist_any(wc_raster_open(&o, cfg->oracle) != WC_OK)) {
        wc_raster_close(&o);
        return WC_ERR;
    }
    /* its sources too, when it is used: a pipe behind an oracle VRT would hang the first
     * validation read */
    const int same = wc_raster_same_grid(&ds->files.src, &o);
    const int refused =
        same && wc_dist_any(wc_dist_rank() == 0 && wc_raster_check_sources(&o) != WC_OK);
    if (refused) {
        wc_raster_close(&o);
        return WC_ERR;
    }
    if (!same) {
        char ga[512], gb[512];
        wc_raster_describe_grid(&ds->files.src, ga, sizeof ga);
        wc_raster_describe_grid(&o, gb, sizeof gb);
        wc_raster_close(&o);
        if (wc_dist_rank() == 0 && cfg->oracle_found)
            wc_warn("oracle %s (beside the tiles) is not on the tiles' grid: left out (tiles: "
                    "%s; oracle: %s)",
                    cfg->oracle, ga, gb);
        else if (wc_dist_rank() == 0)
            wc_error("--oracle %s is not on the tiles' grid, so its pixels are not the tiles' "
                     "(an oracle is read pixel for pixel, never reprojected): tiles %s: %s; "
                     "oracle: %s",
                     cfg->oracle, ds->tiles_path, ga, gb);
        return cfg->oracle_found ? WC_OK : WC_ERR;
    }
    wc_raster_close(&o);
    ds->oracle_path = wc_strdup(cfg->oracle);
    if (wc_dist_any(wc_raster_open(&ds->files.oracle, cfg->oracle) != WC_OK)) return WC_ERR;
    return WC_OK;
}

/* Collective: the labels of --labels on the tiles' grid (prepared by labels.c: used as they
 * are, warped or rasterized), opened by every rank; *source_band is the band they came from.
 * WC_EXIT_OK, WC_EXIT_STOPPED (a stop during their preparation) or WC_EXIT_RUNTIME. */
static int open_labels(wc_dataset *ds, const wc_data_config *cfg, int *source_band) {
    /* --label-band, when set to something else, names the band of a label raster */
    const int named = cfg->label_band && strcmp(cfg->label_band, WC_LABEL_BAND_NAME) != 0;
    wc_labels lab;
    if (wc_labels_prepare(&ds->files.src, cfg->labels, named ? cfg->label_band : "", cfg->work_dir,
                          &lab) != WC_OK)
        return lab.stopped ? WC_EXIT_STOPPED : WC_EXIT_RUNTIME;
    ds->label_path = lab.path;
    ds->label_band = lab.band;
    *source_band = lab.source_band;
    /* every rank opens it: one that cannot must not leave the others in a collective */
    if (wc_dist_any(wc_raster_open(&ds->files.label, ds->label_path) != WC_OK ||
                    wc_raster_check_coverage(&ds->files.label, &ds->label_band, 1) != WC_OK))
        return WC_EXIT_RUNTIME;
    /* read in its own type: a warped label raster is Float32 or Float64 with NaN for
     * nodata (labels.c), which wc_band_is_nodata takes as nodata like any NaN */
    ds->label_type = wc_band_read_type(&ds->files.label.bands[ds->label_band - 1]);
    return WC_EXIT_OK;
}

/* A patch whose blocks (every band of the files) take more than this decodes far more than it
 * reads: 64 x 64 px of 13 Float32 bands is 208 KiB. */
#define LARGE_PATCH_BLOCKS ((size_t)16 << 20)

/* GDAL's block cache holds at most what this run reads, whole: the tiles' bands, a label
 * raster's band, the oracle's (all on the tiles' grid); at most 256 MiB. Files in large blocks
 * are the exception (collective): when the blocks a patch touches take more than
 * LARGE_PATCH_BLOCKS, a patch read again decodes them again (a GeoTIFF interleaving its bands
 * by pixel decodes a block of all of them at once, and GDAL keeps them only when they all fit:
 * 13 Float32 bands in 2048-pixel blocks, 4096 x 4096, trained at 1.3 samples/s against 17 from
 * a VRT of 1024-pixel tiles, 89% of the time waiting for data), so the cache may then hold the
 * whole of every band, up to a quarter of the node's memory over its ranks; beyond that, the
 * run is warned. */
static void fit_block_cache(const wc_dataset *ds) {
    int first_on_host;
    const uint64_t host_ranks = wc_dist_host_sum_u64(1, &first_on_host);
    wc_raster *src = (wc_raster *)&ds->files.src;
    const size_t px = (size_t)ds->width * (size_t)ds->height;
    const size_t patch_blocks = wc_raster_window_blocks_bytes(src, ds->P, ds->P);
    const int large = patch_blocks > LARGE_PATCH_BLOCKS;
    size_t read_bytes = 0;
    /* large blocks: every band of the files is decoded, read or not */
    for (int i = 0; i < (large ? src->nbands : ds->read_nb); i++)
        read_bytes += px * wc_dtype_size(src->bands[large ? i : ds->read_bands[i] - 1].type);
    if (ds->label_path) read_bytes += px * wc_dtype_size(ds->label_type);
    if (ds->oracle_path) read_bytes += px * wc_dtype_size(ds->files.oracle.bands[0].type);
    const size_t most = large ? WC_MAX(wc_raster_cache_most(host_ranks), (size_t)256 << 20) : 0;
    const size_t wanted = wc_raster_cache_fit(read_bytes, most);
    if (large && wanted && wc_dist_rank() == 0) {
        char bp[16], bw[16], bm[16];
        wc_warn("%s: the blocks one %dx%d patch touches take %s with every band of its files, and "
                "holding them all would take %s, more than GDAL's cache can hold here (%s: a "
                "quarter of the node's memory over its ranks): blocks will be decoded again for "
                "later patches, which slows the reads; files tiled in smaller blocks read faster "
                "(gdal_translate -co TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512), and "
                "GDAL_CACHEMAX sets the cache",
                ds->tiles_path, ds->P, ds->P, wc_fmt_bytes(bp, sizeof bp, (double)patch_blocks),
                wc_fmt_bytes(bw, sizeof bw, (double)wanted),
                wc_fmt_bytes(bm, sizeof bm, (double)wc_raster_cache_max()));
    }
}

wc_dataset *wc_dataset_open(const wc_data_config *cfg, int *status) {
    int failure = WC_EXIT_RUNTIME, label_source_band = 0;
    wc_dataset *ds = WC_CALLOC(1, sizeof *ds);
    ds->cfg = *cfg;
    ds->tiles_path = wc_strdup(cfg->tiles);
    /* Every rank opens the same file; if one cannot, none continues. */
    if (wc_dist_any(wc_raster_open(&ds->files.src, cfg->tiles) != WC_OK)) goto fail;
    ds->width = ds->files.src.width;
    ds->height = ds->files.src.height;
    if (wc_dist_any(wc_dist_rank() == 0 && wc_raster_check_sources(&ds->files.src) != WC_OK))
        goto fail;
    const char *others[] = {cfg->labels, cfg->oracle};
    if (wc_agree_inputs(&ds->files.src, others, 2) != WC_OK) goto fail;
    /* agreed: the coverage's nested VRTs are opened by each rank, and one that fails alone must
     * not leave the others in the next collective */
    if (wc_dist_any(choose_features(ds, cfg) != WC_OK ||
                    wc_raster_check_coverage(&ds->files.src, ds->read_bands, ds->read_nb) != WC_OK))
        goto fail;
    if (wc_dist_any(plan_augmentation(ds, cfg) != WC_OK)) goto fail;
    ds->P = cfg->patch;
    if (cfg->turn_deg > 0) plan_turn(ds, cfg);
    if (lay_patch_grid(ds, cfg) != WC_OK) goto fail;
    /* before the labels too: warping them onto a grid too large to plan would be minutes lost */
    if (plan_fits(ds) != WC_OK) goto fail;
    if (read_ahead_fits(ds) != WC_OK) {
        failure = WC_EXIT_USAGE;
        goto fail;
    }
    /* the oracle before the labels: a refused oracle must not cost the labels' warp first */
    if (cfg->oracle && open_oracle(ds, cfg) != WC_OK) goto fail;
    if (cfg->labels) {
        const int opened = open_labels(ds, cfg, &label_source_band);
        if (opened != WC_EXIT_OK) {
            failure = opened;
            goto fail;
        }
    }
    fit_block_cache(ds);
    ds->keep = WC_CALLOC(ds->npatches, 1);
    ds->is_val = WC_CALLOC(ds->npatches, 1);
    ds->mean = WC_CALLOC(ds->nfeat, sizeof(double));
    ds->std = WC_CALLOC(ds->nfeat, sizeof(double));
    ds->constant = WC_CALLOC(ds->nfeat, 1);
    make_fingerprint(ds, label_source_band);
    /* as a checkpoint's text reads back (snapshot.c): a label path with a control character or
     * bytes that are not UTF-8 would otherwise never match its own run's checkpoints */
    wc_text_sanitize(ds->fingerprint);
    int planned = plan(ds);
    if (planned == PLAN_STOPPED) failure = WC_EXIT_STOPPED;
    if (planned != PLAN_OK) goto fail;
    if (ds->ntrain == 0) {
        wc_error("%s: no patch of %dx%d pixels has at least %.0f%% valid pixels (features and "
                 "label not nodata): nothing to train on",
                 cfg->tiles, ds->P, ds->P, 100 * cfg->min_valid);
        /* which band empties every patch, if one does (rank 0 says it) */
        if (wc_dist_rank() == 0) {
            const char *why = " (a pixel needs every feature and its label)";
            wc_raster_say_empty_bands(&ds->files.src, ds->feat_bands, ds->nfeat, why, 1);
            const wc_raster *lr = ds->label_path ? &ds->files.label : &ds->files.src;
            wc_raster_say_empty_bands(lr, &ds->label_band, 1, why, 1);
        }
        goto fail;
    }
    /* The planning handles are done: closing them frees their cached blocks (the reader
     * thread opens its own). The metadata stays. */
    wc_raster_release(&ds->files.src);
    wc_raster_release(&ds->files.label);
    wc_raster_release(&ds->files.oracle);
    if (status) *status = WC_EXIT_OK;
    return ds;
fail:
    if (status) *status = failure;
    wc_dataset_close(ds);
    return NULL;
}

void wc_dataset_close(wc_dataset *ds) {
    if (!ds) return;
    wc_data_files_close(&ds->files);
    free(ds->tiles_path), free(ds->label_path), free(ds->oracle_path);
    free(ds->feat_bands), free(ds->read_bands);
    free(ds->keep), free(ds->is_val), free(ds->train), free(ds->val);
    turn_scratch_free(ds->turn_scratch);
    free(ds->mean), free(ds->std), free(ds->constant), free(ds->fingerprint);
    free(ds);
}
