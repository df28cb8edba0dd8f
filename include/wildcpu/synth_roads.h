/* synth_roads.h: the synthetic region's road network: least-cost paths over the terrain, the
 * way roads get built.
 *
 * Internal to the generator (synth.c); synth.h is its interface. Deterministic: the network is
 * a pure function of the terrain, the lakes and the random stream given.
 *
 * Not here: the distance to the roads (synth.c, through wc_synth_distance_transform), the
 * padded domain and its fields (synth_field.h). */
#ifndef WILDCPU_SYNTH_ROADS_H
#define WILDCPU_SYNTH_ROADS_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/rng.h"
#include "wildcpu/synth_field.h"

/* Draws the road network of the domain g into road (n x n: 1 on a road, else 0) from the smooth
 * terrain elev_smooth (m) and the lakes (n x n, 1 under water, where no road is drawn); rng
 * places the endpoints. Returns the number of road pixels. */
size_t wc_synth_roads(const wc_synth_gen *g, const float *elev_smooth, const uint8_t *lake,
                      wc_rng *rng, uint8_t *road);

#endif
