/* sha256.h: SHA-256 (FIPS 180-4), for the checksums of the files a STAC item describes
 * (file:checksum). GDAL 3.6 has CPL_SHA256 but Debian does not install its header, and zlib has
 * no SHA-2: a hundred lines of our own, tested against the standard's vectors.
 *
 * Not here: anything cryptographic beyond the digest (no HMAC, no constant-time claims). */
#ifndef WILDCPU_SHA256_H
#define WILDCPU_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct wc_sha256 {
    uint32_t h[8];
    uint64_t bytes;          /* hashed so far */
    unsigned char block[64]; /* the pending partial block */
    size_t fill;             /* bytes of it */
} wc_sha256;

void wc_sha256_init(wc_sha256 *s);
void wc_sha256_update(wc_sha256 *s, const void *data, size_t n);
void wc_sha256_final(wc_sha256 *s, unsigned char digest[32]);

/* The digest of a whole file as 64 lower-case hex digits (hex: 65 bytes) and its size in bytes.
 * WC_OK, or WC_ERR after a message naming the file. */
int wc_sha256_file(const char *path, char hex[65], int64_t *size);

#endif
