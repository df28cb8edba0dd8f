/* augment.c: orientations of training samples and the vector bands they turn; see augment.h. */
#include "wildcpu/augment.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wildcpu/raster.h"
#include "wildcpu/util.h"

/* ---- finding the vector pairs ------------------------------------------------------------ */

/* Band names are compared without regard to case (Wind_U pairs with Wind_V). */
static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static int starts_with(const char *s, const char *prefix) {
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static int contains(const char *name, const char *word) {
    return strcasestr(name, word) != NULL;
}

/* Words that make a band look like it carries a direction. A wind *speed* does not, so "wind"
 * alone is not one; "dir" counts only as a part of a name (wind_dir, dir_wind, winddir). */
static const char *const direction_words[] = {"aspect",   "azimuth",   "direction", "bearing",
                                              "eastness", "northness", "_dir",      "dir_"};
/* Whole names that are directions or components: gridMET's wind direction (th), wd, wdir; u/v;
 * CMIP's near-surface wind components (uas, vas) and NCEP reanalysis's (uwnd, vwnd). */
static const char *const direction_names[] = {"th",  "wd",  "wdir", "u",   "v",
                                              "uas", "vas", "uwnd", "vwnd"};

/* u10, v100: ERA5's wind components at a height; U10M, V2M: MERRA-2's (metres written after). */
static int is_height_component(const char *name, char letter) {
    if (name[0] != letter && name[0] != letter - 'a' + 'A') return 0;
    if (!name[1]) return 0;
    const char *p = name + 1;
    while (*p >= '0' && *p <= '9') p++;
    if (p == name + 1) return 0;
    return !*p || ((*p == 'm' || *p == 'M') && !p[1]);
}

static int looks_directional(const char *name) {
    for (size_t k = 0; k < sizeof direction_words / sizeof direction_words[0]; k++)
        if (contains(name, direction_words[k])) return 1;
    for (size_t k = 0; k < sizeof direction_names / sizeof direction_names[0]; k++)
        if (strcasecmp(name, direction_names[k]) == 0) return 1;
    return ends_with(name, "dir") || ends_with(name, "_u") || ends_with(name, "_v") ||
           is_height_component(name, 'u') || is_height_component(name, 'v') ||
           starts_with(name, "ugrd") || starts_with(name, "vgrd") ||
           starts_with(name, "eastward_") || starts_with(name, "northward_") ||
           starts_with(name, "x_wind") || starts_with(name, "y_wind");
}

static int find_channel(const char *const *names, int nfeat, const char *name) {
    for (int c = 0; c < nfeat; c++)
        if (strcasecmp(names[c], name) == 0) return c;
    return -1;
}

static int in_pair(const wc_augment *a, int c) {
    for (int k = 0; k < a->npairs; k++)
        if (a->pair[k][0] == c || a->pair[k][1] == c) return 1;
    return 0;
}

/* The name of the north component that goes with `name` as an east component, or "". Suffixes
 * X_u:X_v, X_east:X_north, eastness:northness; X_sin:X_cos only for a direction's stem (an
 * azimuth clockwise from north: aspect_sin; a day of the year's doy_sin is no vector);
 * prefixes u10:v10 (U10M:V10M), UGRD..:VGRD.., eastward_..:northward_.. and x_wind..:y_wind..
 * (CF's standard names); uas:vas, uwnd:vwnd. */
static void north_partner(const char *name, char *out, size_t size) {
    static const struct {
        const char *east, *north;
        int stem_must_be_a_direction;
    } suffix[] = {
        {"_u", "_v", 0}, {"_east", "_north", 0}, {"eastness", "northness", 0}, {"_sin", "_cos", 1}};
    out[0] = '\0';
    const size_t n = strlen(name);
    for (size_t k = 0; k < sizeof suffix / sizeof suffix[0]; k++) {
        if (!ends_with(name, suffix[k].east)) continue;
        const int stem = (int)(n - strlen(suffix[k].east));
        if (suffix[k].stem_must_be_a_direction) {
            char s[WC_AUGMENT_NAME_MAX];
            snprintf(s, sizeof s, "%.*s", stem, name);
            if (!looks_directional(s) && !contains(s, "wind")) continue;
        }
        snprintf(out, size, "%.*s%s", stem, name, suffix[k].north);
        return;
    }
    if (strcasecmp(name, "u") == 0 || strcasecmp(name, "uas") == 0 || strcasecmp(name, "uwnd") == 0)
        snprintf(out, size, "%c%s", name[0] == 'u' ? 'v' : 'V', name + 1);
    else if (is_height_component(name, 'u'))
        snprintf(out, size, "%c%s", name[0] == 'u' ? 'v' : 'V', name + 1);
    else if (starts_with(name, "ugrd"))
        snprintf(out, size, "%cGRD%s", name[0] == 'u' ? 'v' : 'V', name + 4);
    else if (starts_with(name, "eastward_")) /* CF's standard names: eastward_wind */
        snprintf(out, size, "%sorthward_%s", name[0] == 'e' ? "n" : "N", name + 9);
    else if (starts_with(name, "x_wind")) /* CF's components along the grid's own axes */
        snprintf(out, size, "%c%s", name[0] == 'x' ? 'y' : 'Y', name + 1);
}

static int add_pair(wc_augment *a, int e, int n, const char *const *names, const char *path) {
    if (a->npairs == WC_AUGMENT_MAX_PAIRS) {
        wc_error("%s: more than %d vector band pairs (the %dth: %s:%s); name the ones to turn "
                 "with --vector-bands",
                 path, WC_AUGMENT_MAX_PAIRS, WC_AUGMENT_MAX_PAIRS + 1, names[e], names[n]);
        return WC_ERR;
    }
    a->pair[a->npairs][0] = e, a->pair[a->npairs][1] = n, a->npairs++;
    return WC_OK;
}

static int pairs_by_name(wc_augment *a, const char *const *names, int nfeat, const char *path) {
    for (int c = 0; c < nfeat; c++) {
        char partner[WC_AUGMENT_NAME_MAX + 16];
        north_partner(names[c], partner, sizeof partner);
        const int n = partner[0] ? find_channel(names, nfeat, partner) : -1;
        if (n >= 0 && n != c && !in_pair(a, c) && !in_pair(a, n) &&
            add_pair(a, c, n, names, path) != WC_OK)
            return WC_ERR;
    }
    return WC_OK;
}

/* --vector-bands EAST:NORTH[,EAST:NORTH...] */
static int pairs_given(wc_augment *a, const char *spec, const char *const *names, int nfeat,
                       const char *path) {
    const size_t len = strlen(spec);
    if (len == 0 || spec[0] == ',' || spec[len - 1] == ',' || strstr(spec, ",,")) {
        wc_error("--vector-bands: '%s' has an empty entry (EAST:NORTH,EAST:NORTH,...)", spec);
        return WC_ERR;
    }
    char *copy = wc_strdup(spec), *save = NULL;
    int rc = WC_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == WC_OK;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon || colon == tok || !colon[1] || strchr(colon + 1, ':')) {
            wc_error("--vector-bands: '%s' is not EAST:NORTH (two band names of %s)", tok, path);
            rc = WC_ERR;
            break;
        }
        *colon = '\0';
        const char *side[2] = {tok, colon + 1};
        int ch[2];
        for (int s = 0; s < 2 && rc == WC_OK; s++) {
            ch[s] = find_channel(names, nfeat, side[s]);
            if (ch[s] < 0) {
                wc_error("--vector-bands: %s has no feature band named '%s'", path, side[s]);
                rc = WC_ERR;
            } else if (s == 1 && ch[1] == ch[0]) {
                wc_error("--vector-bands: '%s:%s' pairs a band with itself", side[0], side[1]);
                rc = WC_ERR;
            } else if (in_pair(a, ch[s])) {
                wc_error("--vector-bands: band '%s' of %s is in two vector pairs", side[s], path);
                rc = WC_ERR;
            }
        }
        if (rc == WC_OK) rc = add_pair(a, ch[0], ch[1], names, path);
    }
    if (rc == WC_OK && a->npairs == 0) {
        wc_error("--vector-bands: '%s' names no pair (EAST:NORTH,...; none: no vector bands)",
                 spec);
        rc = WC_ERR;
    }
    free(copy);
    return rc;
}

/* "E:N, E:N, ..." into out (n bytes), whole pairs only: one that would not fit ends the list
 * with how many more there are (a name cut short could end inside a character). */
static void describe_pairs(const wc_augment *a, const char *const *names, char *out, size_t n) {
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < a->npairs; k++) {
        const char *e = names[a->pair[k][0]], *north = names[a->pair[k][1]];
        const size_t need = strlen(e) + strlen(north) + 3, more = 32; /* ", " ":" and the rest */
        if (len + need + more >= n) {
            snprintf(out + len, n - len, "%sand %d more", k ? ", " : "", a->npairs - k);
            return;
        }
        len += (size_t)snprintf(out + len, n - len, "%s%s:%s", k ? ", " : "", e, north);
    }
}

/* Two pixel sides within 1e-9 of each other count as equal, and a rotation term below 1e-9 of
 * the pixel as none: geotransforms pass through decimal text (VRT, world files). */
static int nearly(double a, double b) {
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

int wc_augment_plan(wc_augment *a, int orientations, double turn_deg, const char *vector_bands,
                    const char *const *names, int nfeat, const wc_augment_grid *grid,
                    const char *path) {
    memset(a, 0, sizeof *a);
    a->norient = 1;
    const double *gt = grid->gt;
    /* sgn(gt1) sgn(gt5); a raster without georeferencing is read as an image, north up */
    a->axes_sign = (!grid->has_gt || (gt[1] < 0) != (gt[5] < 0)) ? -1 : 1;
    snprintf(a->summary, sizeof a->summary, "off (--augment and --rotate turn it on)");
    const int enabled = orientations || turn_deg > 0;
    /* the option that asked, for the messages */
    const char *option = orientations ? "--augment" : "--rotate";
    if (!enabled && !vector_bands) return WC_OK; /* nothing to look for, nothing given to check */
    const int none = vector_bands && strcmp(vector_bands, "none") == 0;
    if (vector_bands && !none) {
        if (pairs_given(a, vector_bands, names, nfeat, path) != WC_OK) return WC_ERR;
    } else if (!none && pairs_by_name(a, names, nfeat, path) != WC_OK) {
        return WC_ERR;
    }
    if (!enabled) return WC_OK;
    if (!none)
        for (int c = 0; c < nfeat; c++)
            if (looks_directional(names[c]) && !in_pair(a, c)) {
                wc_error("%s: band '%s' of %s looks like a direction but is in no vector "
                         "pair, and turned as a scalar it would teach the model a wrong map: "
                         "name its pairs with --vector-bands EAST:NORTH,..., or --vector-bands "
                         "none if no band is a direction",
                         option, names[c], path);
                return WC_ERR;
            }
    /* pixel sides, and whether the pixel axes are turned against east and north */
    const double px = grid->has_gt ? hypot(gt[1], gt[4]) : 1.0;
    const double py = grid->has_gt ? hypot(gt[2], gt[5]) : 1.0;
    const int rotated = grid->has_gt && !wc_gt_axis_aligned(gt);
    if (rotated && a->npairs > 0) {
        wc_error("%s: the geotransform of %s is rotated, so its vector bands (east, north) "
                 "do not turn with the pixel axes; --vector-bands none if no band is a vector",
                 option, path);
        return WC_ERR;
    }
    /* sides of one length at another angle than 90 degrees are rhombi (a sheared
     * geotransform): a mirror, a quarter turn or a turn by any angle would shear the ground (as
     * sides of two lengths are stretched by all but the mirrors); only the half turn, which
     * mirrors both axes, keeps its shape */
    const double axes_cos = grid->has_gt ? (gt[1] * gt[2] + gt[4] * gt[5]) / (px * py) : 0.0;
    const int sheared = fabs(axes_cos) > 1e-9;
    const char *mirrors_only = grid->geographic
                                   ? "degrees of longitude and of latitude differ on the ground"
                               : sheared         ? "the pixels are rhombi, not squares: a sheared "
                                                   "geotransform"
                               : !nearly(px, py) ? "the pixels are not square"
                                                 : NULL;
    if (turn_deg > 0 && mirrors_only) {
        wc_error("--rotate: %s cannot be turned by any angle: %s (--augment's %s can be "
                 "used)",
                 path, mirrors_only, sheared ? "half turn" : "mirrors");
        return WC_ERR;
    }
    a->turn_deg = turn_deg;
    if (orientations) a->norient = sheared ? 2 : mirrors_only ? 4 : WC_ORIENT_COUNT;
    char pairs[WC_AUGMENT_SUMMARY_MAX - 256], turns[96] = ""; /* (the rest: up to 200 bytes) */
    describe_pairs(a, names, pairs, sizeof pairs);
    if (turn_deg > 0)
        snprintf(turns, sizeof turns, "%sturns of up to %g degrees either way",
                 orientations ? ", then " : "", turn_deg);
    const char *orients = !orientations  ? ""
                          : sheared      ? "2 orientations (as it lies and a half turn only: "
                          : mirrors_only ? "4 orientations (mirrors only: "
                                         : "8 orientations (mirrors and quarter turns)";
    snprintf(a->summary, sizeof a->summary, "%s%s%s%s; vector bands %s", orients,
             orientations && mirrors_only ? mirrors_only : "",
             orientations && mirrors_only ? ")" : "", turns, a->npairs ? pairs : "none");
    return WC_OK;
}

/* ---- applying an orientation ------------------------------------------------------------- */

void wc_augment_channel(const wc_augment *a, int o, int c, int *src, double *sign) {
    *src = c, *sign = 1.0;
    if (o == 0) return;
    const double sx = (o & WC_ORIENT_MIRROR_COLS) ? -1.0 : 1.0;
    const double sy = (o & WC_ORIENT_MIRROR_ROWS) ? -1.0 : 1.0;
    for (int k = 0; k < a->npairs; k++) {
        const int e = a->pair[k][0], n = a->pair[k][1];
        if (c != e && c != n) continue;
        /* A displacement of (dc, dr) pixels is (sgn(gt1) east, sgn(gt5) north). The patch's
         * pixels move by the inverse of wc_orient_source's map, whose linear part mirrors
         * (dc, dr) and then swaps them when transposing; in east/north components that is
         * (sx e, sy n), or with the swap (q sy n, q sx e), q = sgn(gt1) sgn(gt5). */
        if (!(o & WC_ORIENT_TRANSPOSE))
            *src = c, *sign = c == e ? sx : sy;
        else
            *src = c == e ? n : e, *sign = a->axes_sign * (c == e ? sy : sx);
        return;
    }
}

/* In place, by swaps: wc_orient_source transposes the coordinates, then mirrors them, so the
 * plane is first mirrored (each row or column exchanged with its opposite), then transposed
 * (each pixel exchanged with its reflection in the diagonal). */
#define ORIENT_PLANE(T, P, o, plane)                                                               \
    do {                                                                                           \
        T *const q_ = (plane), t_;                                                                 \
        const size_t n_ = (size_t)(P);                                                             \
        if ((o)&WC_ORIENT_MIRROR_ROWS)                                                             \
            for (size_t r_ = 0; r_ < n_ / 2; r_++)                                                 \
                for (size_t c_ = 0; c_ < n_; c_++)                                                 \
                    t_ = q_[r_ * n_ + c_], q_[r_ * n_ + c_] = q_[(n_ - 1 - r_) * n_ + c_],         \
                    q_[(n_ - 1 - r_) * n_ + c_] = t_;                                              \
        if ((o)&WC_ORIENT_MIRROR_COLS)                                                             \
            for (size_t r_ = 0; r_ < n_; r_++)                                                     \
                for (size_t c_ = 0; c_ < n_ / 2; c_++)                                             \
                    t_ = q_[r_ * n_ + c_], q_[r_ * n_ + c_] = q_[r_ * n_ + n_ - 1 - c_],           \
                    q_[r_ * n_ + n_ - 1 - c_] = t_;                                                \
        if ((o)&WC_ORIENT_TRANSPOSE)                                                               \
            for (size_t r_ = 0; r_ < n_; r_++)                                                     \
                for (size_t c_ = r_ + 1; c_ < n_; c_++)                                            \
                    t_ = q_[r_ * n_ + c_], q_[r_ * n_ + c_] = q_[c_ * n_ + r_],                    \
                    q_[c_ * n_ + r_] = t_;                                                         \
    } while (0)

void wc_orient_plane_f32(int P, int o, float *plane) {
    ORIENT_PLANE(float, P, o, plane);
}

void wc_orient_plane_u8(int P, int o, unsigned char *plane) {
    ORIENT_PLANE(unsigned char, P, o, plane);
}
