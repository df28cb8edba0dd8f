/* ckpt.h: checkpoint files: versioned, checksummed, zlib-compressed, written atomically.
 *
 * A checkpoint is a list of named sections (bytes), stored as
 *
 *   header, 64 bytes, little-endian:
 *     0  magic    8 bytes "WCKPT\r\n\x1a"  (a text-mode copy or a truncated transfer breaks it)
 *     8  u32      format version (WC_CKPT_VERSION)
 *     12 u32      byte-order mark 0x01020304 as written by the writer's CPU
 *     16 u64      step
 *     24 u64      payload size uncompressed
 *     32 u64      payload size compressed
 *     40 u32      CRC-32 of header bytes 0..39 and 44..63 and of the compressed payload
 *     44 20 bytes reserved, zero
 *   payload, zlib-compressed: per section
 *     u32 name length, name bytes, u64 data length, data bytes
 *
 * so every byte of the file is covered by the CRC. Writing goes to a temporary file in the same
 * directory, then fflush, fsync, rename over the final name, and fsync of the directory: a crash
 * at any moment leaves the previous checkpoint intact and no torn file under a valid name. Only
 * after the new file is durable are checkpoints beyond the newest `keep` deleted.
 *
 * The sections the trainer stores, and their layout, are documented in docs/checkpoint.md.
 *
 * Not here: what the sections mean (train.c fills and reads them), MPI (rank 0 writes). */
#ifndef WILDCPU_CKPT_H
#define WILDCPU_CKPT_H

#include <stddef.h>
#include <stdint.h>

#define WC_CKPT_VERSION 1
#define WC_CKPT_HEADER 64

typedef struct wc_ckpt_section {
    char name[32];
    const void *data;
    size_t size;
} wc_ckpt_section;

/* A checkpoint read into memory; sections point into blob. */
typedef struct wc_ckpt {
    long step;
    uint32_t version;
    size_t file_bytes, payload_bytes;
    int nsections;
    wc_ckpt_section *sections;
    void *blob;
} wc_ckpt;

/* Writes DIR/ckpt-<step:08d>.wcp atomically, then keeps only the newest `keep` checkpoints.
 * Returns WC_OK, or WC_ERR after logging which call failed (the previous checkpoints are
 * untouched then and no partial file is left under a checkpoint name). seconds and bytes (may
 * be NULL) receive the write time and file size. */
int wc_ckpt_write(const char *dir, long step, const wc_ckpt_section *sections, int n, int keep,
                  double *seconds, size_t *bytes);

/* Deletes temporary files a crashed write left in dir (they never have a checkpoint's name, so
 * they are never mistaken for one; this only reclaims their space). */
void wc_ckpt_remove_stale(const char *dir);

/* Reads and validates one file. On failure returns WC_ERR and describes the problem in why
 * (empty file, truncated, bad magic, version from the future, CRC mismatch, ...). */
int wc_ckpt_read(const char *path, wc_ckpt *ck, char *why, size_t why_size);
void wc_ckpt_free(wc_ckpt *ck);
const wc_ckpt_section *wc_ckpt_find(const wc_ckpt *ck, const char *name);

/* Checkpoint files in dir, newest (highest step) first: paths and steps (callers free each path
 * and the arrays). Returns the count, 0 if none, -1 if dir cannot be read (other than missing). */
int wc_ckpt_list(const char *dir, char ***paths, long **steps);

/* The newest checkpoint of dir that validates, reporting (as warnings) each newer one that does
 * not and why. Returns WC_OK with ck and *path filled, or WC_ERR when there is no valid one
 * (*found_any tells whether invalid ones exist). */
int wc_ckpt_latest(const char *dir, wc_ckpt *ck, char **path, int *found_any);

/* "run directory or checkpoint file" -> the checkpoint to use (a directory means its newest
 * valid checkpoint, in DIR/checkpoints or DIR itself). */
int wc_ckpt_resolve(const char *path, wc_ckpt *ck, char **resolved);

#endif
