/* le.h: little-endian encoding of fixed-width fields, for the files wildcpu writes and reads
 * (checkpoints, safetensors). Each value is assembled byte by byte, so the bytes on disk are the
 * same on any host and a reader never depends on the compiler's layout or alignment; on a
 * little-endian host the compiler turns these loops into plain loads and stores.
 *
 * Not here: what the fields mean (ckpt.c, snapshot.c, export.c). */
#ifndef WILDCPU_LE_H
#define WILDCPU_LE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void wc_le_put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void wc_le_put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t wc_le_get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t wc_le_get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Arrays of IEEE-754 binary32 / binary64 values: their bit patterns, little-endian. */
static inline void wc_le_put_f32s(unsigned char *p, const float *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        wc_le_put_u32(p + 4 * i, u);
    }
}
static inline void wc_le_get_f32s(float *v, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = wc_le_get_u32(p + 4 * i);
        memcpy(&v[i], &u, 4);
    }
}
static inline void wc_le_put_f64s(unsigned char *p, const double *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &v[i], 8);
        wc_le_put_u64(p + 8 * i, u);
    }
}
static inline void wc_le_get_f64s(double *v, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t u = wc_le_get_u64(p + 8 * i);
        memcpy(&v[i], &u, 8);
    }
}

#endif
