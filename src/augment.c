/* augment.c: orientations of training samples and the vector bands they turn; see augment.h. */
#include "wildcpu/augment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wildcpu/util.h"

/* ---- finding the vector pairs ------------------------------------------------------------ */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcasecmp(s + n - m, suffix) == 0;
}

/* Name-based pairs: an east-component suffix and the north-component suffix that goes with it. */
static const char *const pair_suffix[][2] = {
    {"_u", "_v"}, {"_sin", "_cos"}, {"_east", "_north"}, {"eastness", "northness"}};

/* Words that make a band look like it carries a direction (a wind speed does not: "wind" alone
 * is no such word). */
static const char *const direction_words[] = {"aspect",   "azimuth",   "direction", "bearing",
                                              "eastness", "northness", "_dir",      "dir_"};

static int contains_word(const char *name, const char *word) {
    size_t m = strlen(word);
    for (const char *p = name; *p; p++)
        if (strncasecmp(p, word, m) == 0) return 1;
    return 0;
}

static int looks_directional(const char *name) {
    for (size_t k = 0; k < sizeof direction_words / sizeof direction_words[0]; k++)
        if (contains_word(name, direction_words[k])) return 1;
    return ends_with(name, "dir") || ends_with(name, "_u") || ends_with(name, "_v");
}

static int find_channel(const char *const *names, int nfeat, const char *name) {
    for (int c = 0; c < nfeat; c++)
        if (strcmp(names[c], name) == 0) return c;
    return -1;
}

static int in_pair(const wc_augment *a, int c) {
    for (int k = 0; k < a->npairs; k++)
        if (a->pair[k][0] == c || a->pair[k][1] == c) return 1;
    return 0;
}

static void add_pair(wc_augment *a, int e, int n) {
    if (a->npairs < WC_AUGMENT_MAX_PAIRS) a->pair[a->npairs][0] = e, a->pair[a->npairs++][1] = n;
}

static void pairs_by_name(wc_augment *a, const char *const *names, int nfeat) {
    for (int c = 0; c < nfeat; c++)
        for (size_t k = 0; k < sizeof pair_suffix / sizeof pair_suffix[0]; k++) {
            if (!ends_with(names[c], pair_suffix[k][0])) continue;
            char partner[256];
            size_t stem = strlen(names[c]) - strlen(pair_suffix[k][0]);
            if (stem + strlen(pair_suffix[k][1]) >= sizeof partner) continue;
            snprintf(partner, sizeof partner, "%.*s%s", (int)stem, names[c], pair_suffix[k][1]);
            int n = find_channel(names, nfeat, partner);
            if (n >= 0 && !in_pair(a, c) && !in_pair(a, n)) add_pair(a, c, n);
        }
}

/* --vector-bands EAST:NORTH[,EAST:NORTH...] */
static int pairs_given(wc_augment *a, const char *spec, const char *const *names, int nfeat,
                       const char *path) {
    char *copy = wc_strdup(spec), *save = NULL;
    int rc = WC_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == WC_OK;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon || colon == tok || !colon[1]) {
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
            } else if (in_pair(a, ch[s]) || (s == 1 && ch[1] == ch[0])) {
                wc_error("--vector-bands: band '%s' of %s is in two vector pairs", side[s], path);
                rc = WC_ERR;
            }
        }
        if (rc != WC_OK) break;
        if (a->npairs == WC_AUGMENT_MAX_PAIRS) {
            wc_error("--vector-bands: at most %d pairs", WC_AUGMENT_MAX_PAIRS);
            rc = WC_ERR;
            break;
        }
        add_pair(a, ch[0], ch[1]);
    }
    free(copy);
    return rc;
}

static void describe_pairs(const wc_augment *a, const char *const *names, char *out, size_t n) {
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < a->npairs && len < n; k++)
        len += (size_t)snprintf(out + len, n - len, "%s%s:%s", k ? ", " : "", names[a->pair[k][0]],
                                names[a->pair[k][1]]);
}

int wc_augment_plan(wc_augment *a, int enabled, const char *vector_bands, const char *const *names,
                    int nfeat, const double gt[6], int has_gt, const char *path) {
    memset(a, 0, sizeof *a);
    a->norient = 1;
    /* sgn(gt1) sgn(gt5); a raster without georeferencing is read as an image, north up */
    a->axes_sign = !has_gt || (gt[1] < 0) != (gt[5] < 0) ? -1 : 1;
    const int given = vector_bands && strcmp(vector_bands, "none") != 0;
    if (given && pairs_given(a, vector_bands, names, nfeat, path) != WC_OK) return WC_ERR;
    if (!vector_bands) pairs_by_name(a, names, nfeat);
    if (!enabled) {
        snprintf(a->summary, sizeof a->summary, "off (--augment turns it on)");
        return WC_OK;
    }
    if (!vector_bands)
        for (int c = 0; c < nfeat; c++)
            if (looks_directional(names[c]) && !in_pair(a, c)) {
                snprintf(a->summary, sizeof a->summary,
                         "off: band '%s' looks like a direction but is not a vector pair "
                         "(--vector-bands EAST:NORTH turns it with the patch; --vector-bands "
                         "none treats every band as a scalar)",
                         names[c]);
                return WC_OK;
            }
    const int rotated = has_gt && (gt[2] != 0 || gt[4] != 0);
    if (rotated && a->npairs > 0) {
        snprintf(a->summary, sizeof a->summary,
                 "off: the geotransform of %s is rotated, so its vector bands do not turn with "
                 "the pixel axes",
                 path);
        return WC_OK;
    }
    const int square = !has_gt || rotated || (gt[1] == gt[5] || gt[1] == -gt[5]);
    a->norient = square ? WC_ORIENT_COUNT : 4;
    char pairs[400];
    describe_pairs(a, names, pairs, sizeof pairs);
    snprintf(a->summary, sizeof a->summary, "%s; vector bands %s",
             square ? "8 orientations (mirrors and quarter turns)"
                    : "4 orientations (mirrors; the pixels are not square)",
             a->npairs ? pairs : "none");
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

#define ORIENT_PLANE(P, o, plane, scratch)                                                         \
    do {                                                                                           \
        const size_t pp_ = (size_t)(P) * (P);                                                      \
        memcpy(scratch, plane, pp_ * sizeof *(plane));                                             \
        for (int r_ = 0; r_ < (P); r_++)                                                           \
            for (int c_ = 0; c_ < (P); c_++) {                                                     \
                int sr_, sc_;                                                                      \
                wc_orient_source(P, o, r_, c_, &sr_, &sc_);                                        \
                (plane)[(size_t)r_ * (P) + c_] = (scratch)[(size_t)sr_ * (P) + sc_];               \
            }                                                                                      \
    } while (0)

void wc_orient_plane_f32(int P, int o, float *plane, float *scratch) {
    if (o != 0) ORIENT_PLANE(P, o, plane, scratch);
}

void wc_orient_plane_u8(int P, int o, unsigned char *plane, unsigned char *scratch) {
    if (o != 0) ORIENT_PLANE(P, o, plane, scratch);
}
