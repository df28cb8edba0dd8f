/* fuzz_ckpt.c: fuzz target for the checkpoint reader, wc_ckpt_parse (libFuzzer's entry point;
 * tests/fuzz/replay.c runs the same function on saved inputs in the normal build).
 *
 * The input is a checkpoint file. Every input is parsed three ways, so mutations get past the
 * container's checksums instead of dying at them:
 *   1. as it is: the header checks, the CRC check;
 *   2. with the CRC field (bytes 40..43) recomputed: the size checks and the zlib stream;
 *   3. as an uncompressed payload, wrapped here into a valid container (header, zlib, CRC): the
 *      section list itself. Seeds hold real files for 1-2 and their payloads for 3.
 * A file that parses goes to check_checkpoint, which reads every byte of every section the
 * trainer and the model loader use, so a section whose size overstates its bytes is an ASan
 * report, and then frees it (a leak is a report too).
 *
 * Not here: the meaning of the sections (their decoder will be called from check_checkpoint),
 * files and directories (wc_ckpt_read only adds open/fstat/read around wc_ckpt_parse). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/snapshot.h"
#include "wildcpu/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The sections snapshot.c writes and reads (docs/checkpoint.md). */
static const char *const SECTIONS[] = {
    WC_SECTION_META,  WC_SECTION_CONFIG, WC_SECTION_FINGERPRINT, WC_SECTION_SPEC,
    WC_SECTION_FEATURES, WC_SECTION_NORM, WC_SECTION_STATE,   WC_SECTION_PARAMS,
    WC_SECTION_OPTIM_M, WC_SECTION_OPTIM_V, WC_SECTION_METRICS, WC_SECTION_PROGRESS};

/* Keeps the reads of check_checkpoint from being optimized away. */
static volatile unsigned char sink;

/* What is done with a checkpoint that parsed: each known section read whole, then the section
 * decoder and the network check every reader runs (wc_snapshot_check: decode, build the spec's
 * network, compare the parameter count), and every decoded field touched. */
static void check_checkpoint(wc_ckpt *ck) {
    unsigned char acc = 0;
    for (size_t i = 0; i < sizeof SECTIONS / sizeof SECTIONS[0]; i++) {
        const wc_ckpt_section *s = wc_ckpt_find(ck, SECTIONS[i]);
        if (!s) continue;
        const unsigned char *p = s->data;
        for (size_t j = 0; j < s->size; j++) acc ^= p[j];
    }
    /* every section, known or not, must lie inside the payload too */
    for (int i = 0; i < ck->nsections; i++) {
        const unsigned char *p = ck->sections[i].data;
        if (ck->sections[i].size) acc ^= p[0] ^ p[ck->sections[i].size - 1];
    }
    wc_snapshot snap = {0};
    char why[512];
    if (wc_snapshot_check(ck, &snap, why, sizeof why) == 0) {
        /* what a decoded snapshot promises: finite values, names within bounds */
        for (int c = 0; c < snap.nfeat; c++) {
            if (!(snap.std[c] > 0) || snap.mean[c] != snap.mean[c]) __builtin_trap();
            acc ^= (unsigned char)snap.feat_names[c][0];
        }
        for (size_t i = 0; i < snap.nparams; i++)
            if (snap.params[i] != snap.params[i] || snap.optim_m[i] != snap.optim_m[i])
                __builtin_trap();
        for (int t = 0; t < snap.ntensors; t++) acc ^= (unsigned char)snap.exponent[t];
        acc ^= (unsigned char)(snap.meta[0] ^ snap.config[0] ^ snap.spec[0] ^ snap.metrics[0]);
    }
    wc_snapshot_free(&snap);
    sink = acc;
    wc_ckpt_free(ck);
}

static void parse_one(const void *file, size_t size) {
    wc_ckpt ck;
    char why[512];
    if (wc_ckpt_parse(file, size, &ck, why, sizeof why) == 0) check_checkpoint(&ck);
    else wc_ckpt_free(&ck); /* must be harmless on a failed parse */
}

static void put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The CRC the reader expects (ckpt.h): header bytes 0..39 and 44..63, then the payload. */
static uint32_t container_crc(const unsigned char *file, size_t size) {
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, file, 40);
    c = crc32(c, file + 44, WC_CKPT_HEADER - 44);
    return (uint32_t)crc32(c, file + WC_CKPT_HEADER, (uInt)(size - WC_CKPT_HEADER));
}

/* 3: the input as the uncompressed payload of a well-formed container. */
static void parse_as_payload(const uint8_t *data, size_t size) {
    uLongf zsize = compressBound(size);
    unsigned char *file = malloc(WC_CKPT_HEADER + zsize);
    if (!file) return;
    if (compress2(file + WC_CKPT_HEADER, &zsize, data, size, 1) == Z_OK) {
        memset(file, 0, WC_CKPT_HEADER);
        memcpy(file, "WCKPT\r\n\x1a", 8);
        put_le(file + 8, WC_CKPT_VERSION, 4);
        put_le(file + 12, 0x01020304u, 4);
        put_le(file + 16, 7, 8);
        put_le(file + 24, size, 8);
        put_le(file + 32, zsize, 8);
        put_le(file + 40, container_crc(file, WC_CKPT_HEADER + zsize), 4);
        parse_one(file, WC_CKPT_HEADER + zsize);
    }
    free(file);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    wc_log_set_quiet(2);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* an exact-size copy, so a read one byte beyond the file is an ASan report */
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    parse_one(size ? copy : NULL, size);
    if (size >= WC_CKPT_HEADER && size - WC_CKPT_HEADER <= UINT32_MAX) {
        put_le(copy + 40, container_crc(copy, size), 4);
        parse_one(copy, size);
    }
    free(copy);
    parse_as_payload(data, size);
    return 0;
}
