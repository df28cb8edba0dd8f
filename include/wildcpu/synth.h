/* synth.h: a synthetic wildfire region whose true burn probability is known exactly.
 *
 * The generator builds a georeferenced square region (30 m pixels, EPSG:32611, central Idaho)
 * with twelve correlated terrain, vegetation and weather features and a burned/unburned label
 * drawn from a latent risk that depends on each pixel's neighbourhood (fuel continuity, upwind
 * fuel, wind blowing upslope, ignition sources nearby), so a CNN that sees context beats a
 * per-pixel model. Because labels are `g + sigma * n > t` with n a unit-variance Gaussian field
 * independent of the features, the burn probability is exactly Phi((g - t) / sigma): the
 * "oracle" map every trained model can be scored against. docs/synthetic.md has the formulas.
 *
 * Two layers: wc_synth_region_create() generates the region in memory (pure computation, no
 * GDAL, deterministic per seed: the same seed gives bitwise-identical values on a given
 * machine); wc_synth_write() generates it and writes GeoTIFF tiles, a VRT mosaic and the oracle
 * raster through GDAL.
 *
 * Not here: reading the rasters back (that is the data loader's job) or the command line. */
#ifndef WILDCPU_SYNTH_H
#define WILDCPU_SYNTH_H

#include <stddef.h>
#include <stdint.h>

typedef struct wc_synth_config {
    const char *out_dir; /* created if missing (with its parent, like mkdir -p) */
    int size;            /* the region is size x size pixels, WC_SYNTH_MIN_SIZE ..
                            WC_SYNTH_MAX_SIZE, default 1024 */
    int tile;            /* tiles are tile x tile pixels, the last row/column smaller when size %
                            tile != 0, default 256 (at least WC_SYNTH_MIN_TILE) */
    uint64_t seed;       /* default 1 */
} wc_synth_config;

/* The bands of tiles.vrt, in order (band number = index + 1). */
enum {
    WC_SYNTH_ELEVATION,     /* Int16, m */
    WC_SYNTH_SLOPE,         /* Float32 from here on, degrees */
    WC_SYNTH_ASPECT_SIN,    /* east component of the downslope direction */
    WC_SYNTH_ASPECT_COS,    /* north component of the downslope direction */
    WC_SYNTH_NDVI,          /* unitless, -0.1 .. 0.9 */
    WC_SYNTH_FUEL_MOISTURE, /* dead fuel moisture, % */
    WC_SYNTH_TEMP_MAX,      /* degrees C */
    WC_SYNTH_REL_HUMIDITY,  /* % */
    WC_SYNTH_WIND_U,        /* m/s, eastward */
    WC_SYNTH_WIND_V,        /* m/s, northward */
    WC_SYNTH_PRECIP_30D,    /* mm over 30 days */
    WC_SYNTH_DIST_ROAD,     /* m */
    WC_SYNTH_FIRE,          /* Byte label: 1 burned, 0 not, 255 nodata */
    WC_SYNTH_NBANDS,
    WC_SYNTH_NFLOAT = WC_SYNTH_DIST_ROAD - WC_SYNTH_SLOPE + 1, /* the Float32 bands */
};

#define WC_SYNTH_NODATA_I16 (-32768)
#define WC_SYNTH_NODATA_F32 (-9999.0f)
#define WC_SYNTH_NODATA_U8  255
#define WC_SYNTH_EPSG       32611
#define WC_SYNTH_MIN_SIZE   32   /* region side, pixels */
#define WC_SYNTH_MAX_SIZE   8192 /* memory: 130-180 bytes per pixel */
#define WC_SYNTH_MIN_TILE   16
#define WC_SYNTH_PIXEL_M    30.0

typedef struct wc_synth_band_info {
    const char *name; /* band description, e.g. "fuel_moisture" */
    const char *unit; /* unit type, e.g. "%", "m", "" for unitless */
    double nodata;    /* the band's nodata value */
    double quantum;   /* values are multiples of this (an exact binary fraction) */
} wc_synth_band_info;

/* Name, unit, nodata and quantization of each band, indexed by WC_SYNTH_ELEVATION.. */
extern const wc_synth_band_info wc_synth_bands[WC_SYNTH_NBANDS];

/* A generated region. Every raster is (size, size), row-major, row 0 to the north. */
typedef struct wc_synth_region {
    int size;
    double geotransform[6]; /* GDAL order: x0, pixel width, 0, y0, 0, -pixel height */
    int16_t *elevation;     /* (size, size), m; WC_SYNTH_NODATA_I16 in lakes */
    float *features;        /* (WC_SYNTH_NFLOAT, size, size): bands slope .. dist_road */
    uint8_t *fire;          /* (size, size): 1, 0 or WC_SYNTH_NODATA_U8 */
    float *oracle;          /* (size, size): P(fire = 1), WC_SYNTH_NODATA_F32 where fire is 255 */
    double threshold;       /* t of the label model fire = (g + sigma * n > t) */
    double sigma;           /* sigma of the label model */
    double nodata_fraction; /* fraction of pixels whose label is nodata */
    double burned_fraction; /* burned pixels / valid pixels */
} wc_synth_region;

void wc_synth_config_default(wc_synth_config *cfg);

/* Generates the region of cfg (out_dir and tile are not used). Returns NULL after logging an
 * error if the configuration is invalid. The caller owns the region. */
wc_synth_region *wc_synth_region_create(const wc_synth_config *cfg);
/* Frees the region; accepts NULL. */
void wc_synth_region_destroy(wc_synth_region *r);
/* The most wc_synth_region_create allocates at once for a region of size x size (its fields on
 * the padded square, then the region it returns beside them): 130-170 bytes per region pixel,
 * 2.2 GiB at 4096. */
size_t wc_synth_peak_bytes(int size);

/* Generates the region and writes, under cfg->out_dir:
 *   tiles/rRR_cCC_i16.tif   elevation (Int16)
 *   tiles/rRR_cCC_f32.tif   slope .. dist_road (11 Float32 bands)
 *   tiles/rRR_cCC_u8.tif    fire (Byte)
 *   tiles.vrt               the 13-band mosaic, source paths relative to the VRT
 *   oracle_risk.tif         the true burn probability (Float32), not part of the mosaic
 * Returns WC_OK, or WC_ERR after logging a message that names the file involved. */
int wc_synth_write(const wc_synth_config *cfg);
/* The mosaic's and the oracle's names under out_dir. The oracle's is also where training looks
 * for a true-probability raster beside --tiles when --oracle is not given (main.c). */
#define WC_SYNTH_MOSAIC "tiles.vrt"
#define WC_SYNTH_ORACLE "oracle_risk.tif"
/* Whether every file wc_synth_write writes under cfg->out_dir (the longest: the last tile's
 * temporary name with GDAL's sidecar suffix) fits GDAL's path buffers (files.h's
 * WC_GDAL_PATH_BUFFER): a longer one makes a region nothing can open. WC_OK, or WC_ERR after a
 * message giving the longest --out that fits. wc_synth_write checks it first. */
int wc_synth_check_out(const wc_synth_config *cfg);
/* Whether the address-space limit (ulimit -v) leaves room for generating the region
 * (wc_synth_peak_bytes), checked before anything is written: the generation would otherwise
 * end in its first allocation past the limit, advising a limit that fits that one allocation
 * alone. WC_OK, or WC_ERR after a message giving the limit the region needs. wc_synth_write
 * checks it first. */
int wc_synth_check_memory(const wc_synth_config *cfg);

#endif
