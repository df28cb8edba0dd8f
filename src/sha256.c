/* sha256.c: SHA-256 as FIPS 180-4 specifies it; see sha256.h. */
#include "wildcpu/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wildcpu/util.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 =
            k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void wc_sha256_init(wc_sha256 *s) {
    static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, H0, sizeof H0);
    s->bytes = 0;
    s->fill = 0;
}

void wc_sha256_update(wc_sha256 *s, const void *data, size_t n) {
    const unsigned char *p = data;
    s->bytes += n;
    while (n > 0) {
        if (s->fill == 0 && n >= 64) { /* whole blocks straight from the input */
            compress(s->h, p);
            p += 64, n -= 64;
            continue;
        }
        size_t take = WC_MIN(n, 64 - s->fill);
        memcpy(s->block + s->fill, p, take);
        s->fill += take, p += take, n -= take;
        if (s->fill == 64) compress(s->h, s->block), s->fill = 0;
    }
}

void wc_sha256_final(wc_sha256 *s, unsigned char digest[32]) {
    const uint64_t bits = s->bytes * 8;
    /* a 1 bit, zeros up to 56 bytes mod 64, the message length in bits, big-endian */
    static const unsigned char pad[64] = {0x80};
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    wc_sha256_update(s, pad, s->fill < 56 ? 56 - s->fill : 120 - s->fill);
    wc_sha256_update(s, len, 8);
    WC_ASSERT(s->fill == 0);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++) digest[4 * i + b] = (unsigned char)(s->h[i] >> (24 - 8 * b));
}

int wc_sha256_file(const char *path, char hex[65], int64_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        wc_error("cannot read %s to checksum it: %s", path, strerror(errno));
        return WC_ERR;
    }
    wc_sha256 s;
    wc_sha256_init(&s);
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) wc_sha256_update(&s, buf, n);
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        wc_error("reading %s to checksum it failed", path);
        return WC_ERR;
    }
    unsigned char d[32];
    *size = (int64_t)s.bytes; /* before the padding counts */
    wc_sha256_final(&s, d);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return WC_OK;
}
