/* test_sha256.c: SHA-256 against the vectors of FIPS 180-4 / NIST's examples (one block, two
 * blocks, a million 'a' fed in uneven pieces), the padding boundaries against a one-shot digest
 * of the same bytes, and a file's digest and size. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wildcpu/sha256.h"

static void hex_of(const unsigned char d[32], char hex[65]) {
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static void digest(const void *p, size_t n, char hex[65]) {
    wc_sha256 s;
    unsigned char d[32];
    wc_sha256_init(&s);
    wc_sha256_update(&s, p, n);
    wc_sha256_final(&s, d);
    hex_of(d, hex);
}

static void test_standard_vectors(void) {
    static const struct {
        const char *msg, *want;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
         "lmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char hex[65];
        digest(v[i].msg, strlen(v[i].msg), hex);
        CHECK(strcmp(hex, v[i].want) == 0, "sha256(\"%.20s...\") = %s, want %s", v[i].msg, hex,
              v[i].want);
    }
}

static void test_million_a_in_pieces(void) {
    enum { N = 1000000 };
    char *a = malloc(N);
    memset(a, 'a', N);
    wc_sha256 s;
    unsigned char d[32];
    char hex[65];
    wc_sha256_init(&s);
    for (size_t off = 0, k = 1; off < N; k = k * 7 % 1000 + 1) { /* pieces of 1..1000 bytes */
        size_t n = k < N - off ? k : N - off;
        wc_sha256_update(&s, a + off, n);
        off += n;
    }
    wc_sha256_final(&s, d);
    hex_of(d, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
          "sha256(10^6 x 'a') = %s", hex);
    free(a);
}

/* Lengths around the padding's boundaries (55, 56, 63, 64, 65 bytes ...): byte-at-a-time
 * updates equal one-shot ones, and all digests differ. */
static void test_padding_boundaries(void) {
    unsigned char buf[200];
    for (int i = 0; i < 200; i++) buf[i] = (unsigned char)(i * 37 + 11);
    char prev[65] = "";
    for (size_t n = 50; n < 140; n++) {
        char one[65], bytes[65];
        digest(buf, n, one);
        wc_sha256 s;
        unsigned char d[32];
        wc_sha256_init(&s);
        for (size_t i = 0; i < n; i++) wc_sha256_update(&s, buf + i, 1);
        wc_sha256_final(&s, d);
        hex_of(d, bytes);
        CHECK(strcmp(one, bytes) == 0, "length %zu: one-shot and bytewise digests differ", n);
        CHECK(strcmp(one, prev) != 0, "lengths %zu and %zu give the same digest", n - 1, n);
        memcpy(prev, one, sizeof prev);
    }
}

static void test_file(void) {
    char path[] = "/tmp/wildcpu-sha256-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    CHECK(write(fd, "abc", 3) == 3, "write");
    close(fd);
    char hex[65];
    int64_t size = -1;
    CHECK(wc_sha256_file(path, hex, &size) == 0, "checksum of %s", path);
    CHECK(size == 3, "size %lld", (long long)size);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
          "file digest %s", hex);
    unlink(path);
    CHECK(wc_sha256_file(path, hex, &size) != 0, "a missing file has no checksum");
}

int main(void) {
    RUN(test_standard_vectors);
    RUN(test_million_a_in_pieces);
    RUN(test_padding_boundaries);
    RUN(test_file);
    HARNESS_EXIT();
}
