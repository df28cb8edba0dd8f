/* maptool.c: checks on risk maps for tests/t_predict.sh, reading through GDAL directly (not
 * through wildcpu's raster module, so a bug there cannot hide itself).
 *
 *   maptool diff A B DX DY BORDER TOL   band 1 of B at (x, y) against A at (x+DX, y+DY), over
 *                                       B's pixels at least BORDER from B's edges: nodata must
 *                                       match and |a-b| <= TOL
 *   maptool nodata MAP INPUT LABEL      MAP's band 1 is nodata exactly where a band of INPUT
 *                                       other than the one described LABEL is nodata or NaN/Inf
 *   maptool range MAP LO HI             every valid value of band 1 lies in [LO, HI], some
 *                                       are valid, and they are not all equal
 *   maptool classes MAP CLASSES         CLASSES (the class raster) = the number of its
 *                                       `class_breaks` that MAP's band 1 exceeds, nodata
 *                                       exactly where MAP's is; prints each class's share
 *   maptool find MAP                    prints "nodata X Y" and "valid X Y": a pixel of each
 *
 * Exit status 0 when the check holds, 1 when it does not, 2 on usage or read errors. Small
 * rasters only: everything is read into memory. Not here: anything a test could not fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <gdal.h>

typedef struct band {
    int w, h, has_nodata;
    double nodata;
    double *v; /* (h, w) */
} band;

static GDALDatasetH open_or_die(const char *path) {
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!ds) {
        fprintf(stderr, "maptool: cannot open %s\n", path);
        exit(2);
    }
    return ds;
}

static band read_band(GDALDatasetH ds, int n) {
    band b = {0};
    GDALRasterBandH rb = GDALGetRasterBand(ds, n);
    if (!rb) {
        fprintf(stderr, "maptool: no band %d\n", n);
        exit(2);
    }
    b.w = GDALGetRasterXSize(ds), b.h = GDALGetRasterYSize(ds);
    b.nodata = GDALGetRasterNoDataValue(rb, &b.has_nodata);
    b.v = malloc(sizeof(double) * b.w * b.h);
    if (!b.v ||
        GDALRasterIO(rb, GF_Read, 0, 0, b.w, b.h, b.v, b.w, b.h, GDT_Float64, 0, 0) != CE_None) {
        fprintf(stderr, "maptool: cannot read band %d\n", n);
        exit(2);
    }
    return b;
}

static int is_nd(const band *b, double v) {
    return !isfinite(v) || (b->has_nodata && v == b->nodata);
}

static int cmd_diff(char **a) {
    GDALDatasetH da = open_or_die(a[0]), db = open_or_die(a[1]);
    band A = read_band(da, 1), B = read_band(db, 1);
    int dx = atoi(a[2]), dy = atoi(a[3]), border = atoi(a[4]);
    double tol = atof(a[5]), maxd = 0;
    long n = 0, nd_mismatch = 0, over = 0;
    for (int y = border; y < B.h - border; y++)
        for (int x = border; x < B.w - border; x++) {
            int ax = x + dx, ay = y + dy;
            if (ax < 0 || ay < 0 || ax >= A.w || ay >= A.h) continue;
            double va = A.v[(size_t)ay * A.w + ax], vb = B.v[(size_t)y * B.w + x];
            int na = is_nd(&A, va), nb = is_nd(&B, vb);
            n++;
            if (na != nb) {
                nd_mismatch++;
                continue;
            }
            if (na) continue;
            double d = fabs(va - vb);
            if (d > maxd) maxd = d;
            over += d > tol;
        }
    printf("# diff: %ld pixels compared, max |a-b| = %.3g, %ld above %g, %ld nodata mismatches\n",
           n, maxd, over, tol, nd_mismatch);
    return n > 0 && nd_mismatch == 0 && over == 0 ? 0 : 1;
}

static int cmd_nodata(char **a) {
    GDALDatasetH dm = open_or_die(a[0]), di = open_or_die(a[1]);
    band M = read_band(dm, 1);
    int nb = GDALGetRasterCount(di);
    if (GDALGetRasterXSize(di) != M.w || GDALGetRasterYSize(di) != M.h) {
        fprintf(stderr, "maptool: %s and %s differ in size\n", a[0], a[1]);
        return 2;
    }
    unsigned char *bad = calloc((size_t)M.w * M.h, 1);
    int used = 0;
    for (int i = 1; i <= nb; i++) {
        const char *desc = GDALGetDescription(GDALGetRasterBand(di, i));
        if (desc && strcmp(desc, a[2]) == 0) continue;
        used++;
        band B = read_band(di, i);
        for (size_t k = 0; k < (size_t)M.w * M.h; k++)
            if (is_nd(&B, B.v[k])) bad[k] = 1;
        free(B.v);
    }
    long expect = 0, got = 0, mismatch = 0;
    for (size_t k = 0; k < (size_t)M.w * M.h; k++) {
        int nd = is_nd(&M, M.v[k]);
        expect += bad[k], got += nd, mismatch += nd != bad[k];
    }
    printf("# nodata: %d feature bands; %ld pixels with a nodata feature, %ld nodata in the map, "
           "%ld mismatches\n",
           used, expect, got, mismatch);
    return used > 0 && expect > 0 && mismatch == 0 ? 0 : 1;
}

static int cmd_range(char **a) {
    GDALDatasetH dm = open_or_die(a[0]);
    band M = read_band(dm, 1);
    double lo = atof(a[1]), hi = atof(a[2]), mn = INFINITY, mx = -INFINITY;
    long valid = 0, out = 0;
    for (size_t k = 0; k < (size_t)M.w * M.h; k++) {
        if (is_nd(&M, M.v[k])) continue;
        valid++;
        mn = fmin(mn, M.v[k]), mx = fmax(mx, M.v[k]);
        out += M.v[k] < lo || M.v[k] > hi;
    }
    printf("# range: %ld valid, min %.6g, max %.6g, %ld outside [%g, %g]\n", valid, mn, mx, out, lo,
           hi);
    return valid > 0 && out == 0 && mx > mn ? 0 : 1;
}

static int cmd_classes(char **a) {
    GDALDatasetH dm = open_or_die(a[0]), dc = open_or_die(a[1]);
    const char *s = GDALGetMetadataItem(GDALGetRasterBand(dc, 1), "class_breaks", NULL);
    if (!s) {
        printf("# classes: %s has no class_breaks\n", a[1]);
        return 1;
    }
    double br[8];
    int nbr = 0;
    char **tok = CSLTokenizeString2(s, ",", 0);
    for (int i = 0; tok[i] && nbr < 8; i++) br[nbr++] = atof(tok[i]);
    CSLDestroy(tok);
    band P = read_band(dm, 1), C = read_band(dc, 1);
    if (P.w != C.w || P.h != C.h) {
        printf("# classes: %s is %dx%d, the map %dx%d\n", a[1], C.w, C.h, P.w, P.h);
        return 1;
    }
    long count[9] = {0}, valid = 0, wrong = 0, nd_mismatch = 0;
    for (size_t k = 0; k < (size_t)P.w * P.h; k++) {
        int np = is_nd(&P, P.v[k]), nc = is_nd(&C, C.v[k]);
        if (np || nc) {
            nd_mismatch += np != nc;
            continue;
        }
        int want = 0;
        while (want < nbr && (float)P.v[k] > (float)br[want]) want++;
        valid++;
        wrong += (int)C.v[k] != want;
        if (C.v[k] >= 0 && C.v[k] <= 8) count[(int)C.v[k]]++;
    }
    printf("# classes: %d breaks (%s); shares", nbr, s);
    for (int c = 0; c <= nbr; c++) printf(" %.4f", valid ? (double)count[c] / valid : 0.0);
    printf("; %ld pixels in the wrong class, %ld nodata mismatches\n", wrong, nd_mismatch);
    return nbr == 4 && valid > 0 && wrong == 0 && nd_mismatch == 0 ? 0 : 1;
}

static int cmd_find(char **a) {
    GDALDatasetH dm = open_or_die(a[0]);
    band M = read_band(dm, 1);
    int found_nd = 0, found_v = 0;
    for (int y = 0; y < M.h; y++)
        for (int x = 0; x < M.w; x++) {
            int nd = is_nd(&M, M.v[(size_t)y * M.w + x]);
            if (nd && !found_nd) printf("nodata %d %d\n", x, y), found_nd = 1;
            if (!nd && !found_v) printf("valid %d %d\n", x, y), found_v = 1;
        }
    return found_nd && found_v ? 0 : 1;
}

int main(int argc, char **argv) {
    GDALAllRegister();
    CPLSetConfigOption("GDAL_PAM_ENABLED", "YES");
    static const struct {
        const char *name;
        int nargs;
        int (*fn)(char **);
    } cmds[] = {{"diff", 6, cmd_diff},
                {"nodata", 3, cmd_nodata},
                {"range", 3, cmd_range},
                {"classes", 2, cmd_classes},
                {"find", 1, cmd_find}};
    for (size_t i = 0; argc >= 2 && i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0) {
            if (argc - 2 != cmds[i].nargs) break;
            return cmds[i].fn(argv + 2);
        }
    fprintf(stderr, "usage: maptool diff A B DX DY BORDER TOL | nodata MAP INPUT LABEL | "
                    "range MAP LO HI | classes MAP CLASSES | find MAP\n");
    return 2;
}
