/* synth_roads.c: the road network of the synthetic region; see synth_roads.h.
 *
 * Roads are least-cost paths, the way roads get built. On cells of ROAD_CELL x ROAD_CELL pixels
 * a cell costs 1 + (gradient / 0.12)^2 + (elevation above 1700 m) / 250 m, and 1000 more under
 * water. Endpoints: 2 + size/256 entry points on the border of the padded square and size/128
 * ranches or trailheads (the lowest cell near a random point). Each endpoint in turn is joined
 * to the network built so far by its cheapest path, so roads meet at junctions, follow valleys
 * and gentle ground, and form one network.
 *
 * Not here: the distance to the roads and what it does to the risk (synth.c). */
#include "wildcpu/synth_roads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/synth.h"
#include "wildcpu/util.h"

/* Roads are planned on cells of ROAD_CELL x ROAD_CELL pixels (120 m): plenty for a road, and
 * 16 times fewer cells for the path search than pixels. */
#define ROAD_CELL 4

/* Binary min-heap of (cost, cell) for the road search. Ties are broken by cell index, so the paths
 * are a pure function of the costs. Entries are never decreased, only pushed again; stale ones
 * are skipped when popped. */
typedef struct heap {
    double *key;
    int32_t *cell;
    size_t len, cap;
} heap;

static inline int heap_less(const heap *h, size_t a, size_t b) {
    return h->key[a] < h->key[b] || (h->key[a] == h->key[b] && h->cell[a] < h->cell[b]);
}

static void heap_swap(heap *h, size_t a, size_t b) {
    double k = h->key[a];
    int32_t c = h->cell[a];
    h->key[a] = h->key[b];
    h->cell[a] = h->cell[b];
    h->key[b] = k;
    h->cell[b] = c;
}

static void heap_push(heap *h, double key, int32_t cell) {
    if (h->len == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 1024;
        double *k = WC_ALLOC(h->cap * sizeof(double));
        int32_t *c = WC_ALLOC(h->cap * sizeof(int32_t));
        if (h->len) {
            memcpy(k, h->key, h->len * sizeof(double));
            memcpy(c, h->cell, h->len * sizeof(int32_t));
        }
        free(h->key);
        free(h->cell);
        h->key = k;
        h->cell = c;
    }
    size_t i = h->len++;
    h->key[i] = key;
    h->cell[i] = cell;
    while (i > 0 && heap_less(h, i, (i - 1) / 2)) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_pop(heap *h, double *key, int32_t *cell) {
    *key = h->key[0];
    *cell = h->cell[0];
    h->len--;
    if (h->len == 0) return;
    h->key[0] = h->key[h->len];
    h->cell[0] = h->cell[h->len];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && heap_less(h, l, m)) m = l;
        if (r < h->len && heap_less(h, r, m)) m = r;
        if (m == i) break;
        heap_swap(h, i, m);
        i = m;
    }
}

/* Length of the shortest 8-connected path between two cells, on a uniform unit cost. */
static inline double octile(int ai, int aj, int bi, int bj) {
    int di = abs(ai - bi), dj = abs(aj - bj);
    return WC_MAX(di, dj) + 0.41421356237309515 * WC_MIN(di, dj);
}

/* The coarse cells the roads are planned on, and the path search's state. */
typedef struct cells {
    int m;          /* cells per side */
    size_t mm;      /* m * m */
    float *ce;      /* (m, m) mean smooth elevation, m */
    float *cost;    /* (m, m) cost of crossing the cell */
    uint8_t *clake; /* (m, m) water anywhere in the cell */
    double *dist;   /* (m, m) the search's cost from the network */
    int32_t *pred;  /* (m, m) the search's previous cell on the cheapest path, -1 at its start */
    uint8_t *net;   /* (m, m) cells the network has reached */
    heap h;
} cells;

/* Each cell's mean smooth elevation, and whether any water lies in it. */
static void cell_terrain(const wc_synth_gen *g, const float *elev_smooth, const uint8_t *lake,
                         cells *c) {
    const int n = g->n, m = c->m;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double s = 0;
            for (int di = 0; di < ROAD_CELL; di++)
                for (int dj = 0; dj < ROAD_CELL; dj++) {
                    size_t p = (size_t)(ROAD_CELL * i + di) * n + ROAD_CELL * j + dj;
                    s += elev_smooth[p];
                    c->clake[(size_t)i * m + j] |= lake[p];
                }
            c->ce[(size_t)i * m + j] = (float)(s / (ROAD_CELL * ROAD_CELL));
        }
}

/* What crossing each cell costs: its gradient (central differences, one-sided at the edges),
 * its height above 1700 m, and water. */
static void cell_costs(cells *c) {
    const int m = c->m;
    const float *ce = c->ce;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            size_t k = (size_t)i * m + j;
            int i0 = WC_MAX(i - 1, 0), i1 = WC_MIN(i + 1, m - 1);
            int j0 = WC_MAX(j - 1, 0), j1 = WC_MIN(j + 1, m - 1);
            double cell = ROAD_CELL * WC_SYNTH_PIXEL_M;
            double gx = (ce[(size_t)i * m + j1] - ce[(size_t)i * m + j0]) / ((j1 - j0) * cell);
            double gy = (ce[(size_t)i1 * m + j] - ce[(size_t)i0 * m + j]) / ((i1 - i0) * cell);
            double grad2 = (gx * gx + gy * gy) / (0.12 * 0.12);
            c->cost[k] =
                (float)(1 + grad2 + fmax(0, ce[k] - 1700) / 250 + (c->clake[k] ? 1000 : 0));
        }
}

/* The endpoints, as cells: nborder entry points on the border of the padded square, then
 * ninner ranches or trailheads, each the lowest dry cell near a random point of the region. */
static void place_endpoints(const wc_synth_gen *g, const cells *c, wc_rng *rng, int nborder,
                            int ninner, int32_t *ends) {
    const int m = c->m;
    for (int k = 0; k < nborder; k++) {
        int side = (int)wc_rng_below(rng, 4);
        int t = (int)(m * (0.1 + 0.8 * wc_rng_uniform(rng)));
        int i = side == 0 ? 0 : side == 1 ? m - 1 : t, j = side == 2 ? 0 : side == 3 ? m - 1 : t;
        ends[k] = (int32_t)(i * m + j);
    }
    int lo = g->pad / ROAD_CELL, span = g->size / ROAD_CELL, win = 16 / ROAD_CELL;
    for (int k = 0; k < ninner; k++) {
        int i0 = lo + (int)wc_rng_below(rng, (uint64_t)span);
        int j0 = lo + (int)wc_rng_below(rng, (uint64_t)span);
        int32_t best = (int32_t)(i0 * m + j0);
        for (int i = WC_MAX(i0 - win, 0); i <= WC_MIN(i0 + win, m - 1); i++)
            for (int j = WC_MAX(j0 - win, 0); j <= WC_MIN(j0 + win, m - 1); j++) {
                size_t q = (size_t)i * m + j;
                if (!c->clake[q] && (c->clake[best] || c->ce[q] < c->ce[best])) best = (int32_t)q;
            }
        ends[nborder + k] = best;
    }
}

/* The cheapest path from the network to cell `to`, left in c->pred: one search from every
 * network cell at once, stopped when `to` is reached. A*: costs are at least 1 per unit step,
 * so the octile distance to `to` is a consistent heuristic and the first time `to` is popped
 * its path is optimal. */
static void search(cells *c, int32_t to) {
    const int m = c->m;
    int ti = to / m, tj = to % m;
    c->h.len = 0;
    for (size_t k = 0; k < c->mm; k++) {
        c->dist[k] = c->net[k] ? 0 : HUGE_VAL;
        c->pred[k] = -1;
        if (c->net[k]) heap_push(&c->h, octile((int)k / m, (int)k % m, ti, tj), (int32_t)k);
    }
    while (c->h.len) {
        double f;
        int32_t k;
        heap_pop(&c->h, &f, &k);
        int ci = k / m, cj = k % m;
        double d = c->dist[k];
        if (f > d + octile(ci, cj, ti, tj)) continue; /* stale entry */
        if (k == to) break;
        for (int di = -1; di <= 1; di++)
            for (int dj = -1; dj <= 1; dj++) {
                int ni = ci + di, nj = cj + dj;
                if ((!di && !dj) || ni < 0 || nj < 0 || ni >= m || nj >= m) continue;
                int32_t q = (int32_t)(ni * m + nj);
                double step = (di && dj) ? 1.4142135623730951 : 1.0;
                double nd = d + step * 0.5 * ((double)c->cost[k] + c->cost[q]);
                if (nd < c->dist[q]) {
                    c->dist[q] = nd;
                    c->pred[q] = k;
                    heap_push(&c->h, nd + octile(ni, nj, ti, tj), q);
                }
            }
    }
}

/* Joins `to` to the network along the path the search found: traced back to the network, each
 * step drawn as an 8-connected line of pixels through the cells' centres. */
static void join(const wc_synth_gen *g, cells *c, int32_t to, uint8_t *road) {
    const int m = c->m;
    for (int32_t k = to; c->pred[k] >= 0; k = c->pred[k]) {
        int32_t q = c->pred[k];
        int ci = k / m, cj = k % m, qi = q / m, qj = q % m;
        for (int t = 0; t <= ROAD_CELL; t++) {
            int pi = ROAD_CELL * ci + ROAD_CELL / 2 + t * (qi - ci);
            int pj = ROAD_CELL * cj + ROAD_CELL / 2 + t * (qj - cj);
            road[(size_t)pi * g->n + pj] = 1;
        }
        c->net[k] = 1;
    }
    c->net[to] = 1;
}

size_t wc_synth_roads(const wc_synth_gen *g, const float *elev_smooth, const uint8_t *lake,
                      wc_rng *rng, uint8_t *road) {
    cells c = {.m = g->n / ROAD_CELL};
    c.mm = (size_t)c.m * c.m;
    c.ce = WC_ALLOC(c.mm * sizeof(float));
    c.cost = WC_ALLOC(c.mm * sizeof(float));
    c.clake = WC_CALLOC(c.mm, 1);
    cell_terrain(g, elev_smooth, lake, &c);
    cell_costs(&c);
    const int nborder = 2 + g->size / 256, ninner = WC_MAX(1, g->size / 128);
    int32_t *ends = WC_ALLOC((size_t)(nborder + ninner) * sizeof(int32_t));
    place_endpoints(g, &c, rng, nborder, ninner, ends);

    /* Each endpoint in turn joins the network built so far by its cheapest path, so roads meet
     * at junctions instead of running side by side. */
    c.dist = WC_ALLOC(c.mm * sizeof(double));
    c.pred = WC_ALLOC(c.mm * sizeof(int32_t));
    c.net = WC_CALLOC(c.mm, 1);
    c.net[ends[0]] = 1;
    memset(road, 0, g->npix);
    for (int k = 1; k < nborder + ninner; k++) {
        search(&c, ends[k]);
        join(g, &c, ends[k], road);
    }
    size_t nroad = 0;
    for (size_t p = 0; p < g->npix; p++) {
        if (lake[p]) road[p] = 0;
        nroad += road[p];
    }
    free(c.h.key);
    free(c.h.cell);
    free(c.net);
    free(c.dist);
    free(c.pred);
    free(ends);
    free(c.clake);
    free(c.cost);
    free(c.ce);
    return nroad;
}
