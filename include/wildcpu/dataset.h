/* dataset.h: the training data as patches of a georeferenced raster, split in space, with
 * normalization statistics, identical on every rank.
 *
 * The raster is cut into --patch x --patch patches on the grid of P x P cells of the GLOBAL
 * pixel grid (raster.h, wc_raster_global_origin): adjacent rasters of one grid share their
 * cells, every model is trained and validated on the same patches, and as P is a multiple of
 * the network's pooling alignment, training, validation and the map all run the network at the
 * phase it was validated at. The pixels before the origin and
 * beyond the last whole patch are in no patch and no shifted training sample (prediction covers
 * them; a turned sample's window may reach into them). With jitter
 * (on by default), each training sample of an epoch is its patch shifted by a pseudo-random
 * multiple of the alignment, a pure function of (seed, epoch, patch), never onto validation
 * ground or off the patch grid: more distinct samples, the same bits on any number of ranks and
 * across a resume.
 * A pixel is valid when every feature is neither nodata nor NaN/Inf and its label is not
 * nodata; patches with less than half their pixels valid are dropped. The split is spatial:
 * square blocks of patches (default 256 pixels a side) go to validation whole, chosen in a
 * seeded random order until the validation share of kept patches reaches --val-fraction, so no
 * training patch overlaps a validation block.
 *
 * wc_dataset_open is collective: each rank reads only its share of the patch windows to find
 * the valid patches and the statistics; the per-patch figures are then combined in patch order
 * (an ordered chain through the ranks), so the mean and std are bitwise the same on any number
 * of ranks, and so is everything trained from them. The statistics are accumulated in long
 * double from the raw values, so any finite value (up to +-DBL_MAX, of either sign, however
 * spread) gives a finite mean and std.
 *
 * Labels: the label band of the tiles (--label-band NAME|N, default "fire"; a name two bands
 * carry is refused as ambiguous), or --labels: a raster on the same grid (or one GDAL can warp
 * onto it), or a vector layer of burned-area polygons in any CRS, rasterized onto the tile grid
 * (inside 1, outside 0, all-touched off) into the run directory (see labels.h). A label value
 * > 0 means burned. No label is ever a feature: besides the label band, every band of the tiles
 * named like it or `fire` is left out of the inputs (and logged).
 *
 * Not here: the order of training (schedule.h), reading ahead (reader.h). */
#ifndef WILDCPU_DATASET_H
#define WILDCPU_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/augment.h"
#include "wildcpu/raster.h"

typedef struct wc_data_config {
    const char *tiles;      /* --tiles */
    const char *labels;     /* --labels, or NULL: use the label band */
    const char *label_band; /* --label-band NAME|INDEX (default "fire") */
    const char *oracle;     /* optional true-probability raster on the same grid, or NULL */
    int oracle_found;       /* 1: oracle is the one found beside --tiles, not named by --oracle */
    const char *work_dir;   /* where rasterized labels are kept (the run directory) */
    int patch;              /* --patch */
    double val_fraction;    /* --val-fraction */
    int val_block_px;       /* validation block side in pixels (rounded to whole patches) */
    double min_valid;       /* keep a patch when at least this fraction of it is valid */
    uint64_t seed;
    int align;                /* the network's pooling alignment: the jitter's step [1] */
    int jitter;               /* shift training samples each epoch (--no-jitter: 0) [1] */
    int augment;              /* turn and mirror training samples (--augment) [0] */
    double turn_deg;          /* --rotate: turn training samples by up to +-this, degrees [0] */
    const char *vector_bands; /* --vector-bands EAST:NORTH,.. or "none"; NULL: by name */
    int read_slots;           /* the reader's slots (--prefetch) and patches per slot */
    int slot_patches;         /* (--micro-batch): checked against memory before planning [0] */
    const char *read_advice;  /* what lowers read_slots, for a read-ahead too large [NULL] */
} wc_data_config;

/* One training or validation sample: patch `id` of the grid, its window shifted by (dx, dy)
 * pixels (0, 0 without jitter, and always for validation), turned about its centre by `turn`
 * radians (0 without --rotate, and always for validation), then seen in orientation `orient`
 * (augment.h; 0, the patch as it lies, without augmentation and always for validation). */
typedef struct wc_sample {
    uint32_t id;
    int32_t dx, dy;
    int32_t orient;
    double turn;
} wc_sample;

void wc_data_config_default(wc_data_config *cfg);

/* Handles to read from, one set per thread (GDAL datasets are not thread-safe). */
typedef struct wc_data_files {
    wc_raster src;    /* features, and the label band when it is one of its bands */
    wc_raster label;  /* the separate label raster, when there is one */
    wc_raster oracle; /* the oracle raster, when there is one */
} wc_data_files;

typedef struct wc_dataset {
    wc_data_config cfg;
    char *tiles_path, *label_path, *oracle_path; /* label_path: NULL when a band of the tiles */
    wc_data_files files; /* metadata of the files (their GDAL handles are released after
                          * planning: each reading thread opens its own) */
    int width, height;
    int nfeat;              /* feature channels: every band but the label band */
    int *feat_bands;        /* (nfeat) 1-based band numbers in src */
    int label_band;         /* 1-based: in src, or in the label raster when label_path */
    int read_nb;            /* bands read from src in one call: features, then the label band */
    int *read_bands;        /* (read_nb) */
    wc_dtype read_type;     /* the compact type they are read as */
    wc_dtype label_type;    /* type of a separate label read */
    int P;                  /* patch side */
    int x_origin, y_origin; /* the patch grid's first pixel: at the pooling phase */
    int cols, rows;         /* patch grid */
    long npatches;
    uint8_t *keep;         /* (npatches) enough valid pixels */
    uint8_t *is_val;       /* (npatches) in a validation block */
    uint32_t *train, *val; /* kept patch indices, in grid order */
    long ntrain, nval;
    double *mean, *std;                    /* (nfeat) over valid pixels of training patches */
    uint8_t *constant;                     /* (nfeat) 1: constant over them (wc_feature_inv_std) */
    int64_t train_pixels, train_positives; /* valid pixels of training patches, burned ones */
    wc_augment aug;                        /* the orientations training samples are drawn in */
    double turn_max; /* the largest turn of a training sample, radians (0: none) */
    int turn_side;   /* the largest side of the window a turned sample is read from
                      * (the largest angle's): what the read buffers hold */
    struct wc_turn_scratch *turn_scratch; /* where turned samples are decoded (dataset.c) */
    int val_block;                        /* validation block side in patches */
    long nval_blocks, nblocks;
    uint64_t plan_peak_bytes; /* what planning held at its peak on this rank (freed since) */
    char *fingerprint;        /* what identifies the input data: "size=..;geotransform=..;crs=..;
                               * bands=name:Type,..;labels=.." (a key-value record, util.h) */
} wc_dataset;

/* The fingerprint's key beside labels=file:PATH (PATH as typed, relative to where the run
 * started): the same file's path made absolute (files.h, wc_path_absolute), by which a resume
 * started in another directory, which types another PATH, knows it is the same file. Absent
 * from checkpoints before 2026-12-05, and for labels from a band of the tiles. */
#define WC_FINGERPRINT_LABELS_FILE "labels_file"

/* Opens and plans the dataset; collective over all ranks. Returns NULL after an error that names
 * the file/band (every rank returns NULL together). A patch grid whose planning arrays (6 bytes
 * per patch of the grid on every rank, plus 1 for each patch of the rank's share and 16 and 48
 * per feature for each one it keeps, counted as if it kept all) would exceed half of the physical
 * memory of a machine, summed over its ranks, is refused before anything of that size is
 * allocated, naming the raster and the need. Windows GDAL knows to be nodata (the holes of a
 * mostly empty mosaic, wc_raster_window_empty) are not read. Preparing labels and
 * planning honour a stop signal on any rank within about a second: then every rank returns NULL
 * with *status = WC_EXIT_STOPPED and no error logged. A read-ahead (cfg's read_slots of
 * slot_patches patches) whose features alone, summed over a machine's ranks, exceed its
 * physical memory is refused before planning: NULL with *status = WC_EXIT_USAGE. Any other
 * failure gives WC_EXIT_RUNTIME, and success WC_EXIT_OK (status may be NULL). */
wc_dataset *wc_dataset_open(const wc_data_config *cfg, int *status);
void wc_dataset_close(wc_dataset *ds);

/* Opens this thread's own handles on the dataset's files (the oracle only if want_oracle). */
int wc_data_files_open(wc_data_files *f, const wc_dataset *ds, int want_oracle);
void wc_data_files_close(wc_data_files *f);

/* Bytes of raw storage of one patch, as read (features and label in their compact types, plus
 * the oracle when requested); with --rotate, room for the largest window of a turned sample. */
size_t wc_dataset_patch_bytes(const wc_dataset *ds, int with_oracle);
/* Bytes of raw storage sample s takes without the oracle (what reading it fetches). */
size_t wc_dataset_sample_bytes(const wc_dataset *ds, wc_sample s);
/* Reads sample s (patch s.id's window shifted by s.dx, s.dy; for a turned sample the smallest
 * square about the same centre that its angle needs, at most ds->turn_side) into raw
 * (wc_dataset_patch_bytes) with one RasterIO call for the tiles, plus one for a separate label
 * raster and one for the oracle when with_oracle (never for a turned sample). Errors name the
 * file and the window. */
int wc_dataset_read_patch(const wc_dataset *ds, wc_data_files *f, wc_sample s, void *raw,
                          int with_oracle);
/* Training patch `id` as epoch `epoch` samples it: shifted by up to half a patch in each
 * direction, in multiples of the alignment, in one of ds->aug.norient orientations, and turned
 * by an angle uniform in [-turn_max, turn_max], drawn from (seed, epoch, id) in that order;
 * unshifted when the shift would reach off the raster or onto a validation block, and when
 * jitter is off; as it lies when augmentation is off; unturned when the window its angle needs
 * would reach off the raster, or the turned patch (with the pixels its interpolation takes)
 * onto a validation block. */
wc_sample wc_dataset_sample(const wc_dataset *ds, uint32_t id, long epoch);
/* How many of the first epoch's training samples wc_dataset_sample really shifts and turns, and
 * why the others' drawn shift or turn was refused: a pure function of the dataset (the same on
 * every rank), counted over the training patches, or WC_SAMPLE_SHARES_MAX spread evenly over
 * them on a larger region. */
#define WC_SAMPLE_SHARES_MAX 65536
typedef struct wc_sample_shares {
    long counted;             /* samples drawn */
    int shifts, turns;        /* whether samples are shifted (jitter) and turned (--rotate) */
    long shifted;             /* with a shift other than (0, 0) */
    long shift_off_raster;    /* a shift refused: the patch would leave the patch grid */
    long shift_on_validation; /* a shift refused: the patch would touch a validation block */
    long turned;              /* turned by an angle other than 0 */
    long turn_off_raster;     /* a turn refused: its window would reach off the raster */
    long turn_on_validation;  /* a turn refused: its window would touch a validation block */
} wc_sample_shares;
void wc_dataset_sample_shares(const wc_dataset *ds, wc_sample_shares *out);
/* Decodes raw sample s for the network: x (nfeat, P, P) normalized features (0 where invalid),
 * y (P, P) labels 0/1, valid (P, P), and, when oracle is not NULL and the raw patch has one,
 * the oracle probabilities (P, P), all in orientation s.orient (augment.h: the vector bands'
 * components turned before normalization, every plane's pixels moved). A pixel is invalid
 * when its label or a feature is nodata, NaN or Inf, or when a feature's normalized value lies
 * beyond float's range (wc_normalize). Returns the number of valid pixels. With mean == NULL
 * the features are left unnormalized (as floats: a value beyond float's range makes the pixel
 * invalid).
 *
 * A turned sample (s.turn != 0) is resampled first: output pixel centre o (relative to the
 * patch centre, in (column, row) pixels) takes the window's point R(-turn) o, the raw features
 * of floating-point bands interpolated bilinearly from its 4 neighbours (valid only if all 4
 * are), those of integer bands (classes, perhaps) and the label from the nearest; the vector pairs'
 * raw components turn by the same angle as the pixels (augment.h's axes), and every value is then
 * normalized as for an unturned sample. Turned samples are decoded in buffers the dataset holds:
 * only one thread at a time may decode them (training decodes on its own thread). */
long wc_dataset_decode(const wc_dataset *ds, const void *raw, wc_sample s, const double *mean,
                       const double *std, float *x, float *y, uint8_t *valid, float *oracle);

/* The labels of the window (x0, y0, w, h), inside the raster, as decoding gives them: y 1 where
 * the label is > 0, else 0; valid 0 where it is nodata. scratch: w * h doubles. Errors name the
 * file and the window. */
int wc_dataset_read_labels(const wc_dataset *ds, wc_data_files *f, int64_t x0, int64_t y0,
                           int64_t w, int64_t h, float *y, uint8_t *valid, double *scratch);
/* The oracle's probabilities of the window (the dataset must have an oracle). */
int wc_dataset_read_oracle(const wc_dataset *ds, wc_data_files *f, int64_t x0, int64_t y0,
                           int64_t w, int64_t h, float *oracle);

/* A feature value as the network sees it: (v - mean) / std, rounded to float. Training,
 * validation and prediction all normalize through this one function, so the map is computed
 * from exactly the inputs that were validated. Evaluated in long double, so v - mean cannot
 * overflow for any finite v and mean; the result is +-inf when the normalized value lies beyond
 * float's range, and callers treat such a pixel as invalid (nodata), never as an input. */
static inline float wc_normalize(double v, double mean, double inv_std) {
    return (float)(((long double)v - (long double)mean) * (long double)inv_std);
}

/* The inv_std of wc_normalize for a feature: 1 / std, or 0 for a feature that was constant over
 * the training pixels. Training fed such a feature as 0, so the weights that read it never
 * learned anything (their gradient was 0: they stay near their start, but for weight decay):
 * a map that fed them another value would move with a band the model knows nothing of. So
 * every value of it is 0 to the network, in training, validation and every map. A vector
 * band's component that mirrored or turned samples feed its partner's values is not constant
 * (dataset.c, takes_partner_values). */
static inline double wc_feature_inv_std(double std, int constant) {
    return constant ? 0.0 : 1.0 / std;
}

/* Grid position of a patch: its top-left pixel (the grid starts at x_origin, y_origin). */
void wc_dataset_patch_origin(const wc_dataset *ds, uint32_t id, int *x0, int *y0);

#endif
