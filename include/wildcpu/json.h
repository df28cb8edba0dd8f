/* json.h: the JSON wildcpu writes (report.json, metrics.jsonl, safetensors headers, STAC items,
 * metrics files) and the little it reads back (a report's figures for --baseline, a metrics
 * line's step when a resumed run trims its log).
 *
 * Writing: a builder appends to a growing buffer with the separators placed for the caller:
 * every string is escaped (quotes, backslashes, control characters; invalid UTF-8 bytes become
 * U+FFFD), and a number that is not finite is written as null, so the output is always valid
 * JSON (RFC 8259), whatever the values. Doubles are printed with 17 significant digits unless a
 * precision is given, so they read back to the same bits.
 *
 *     wc_json j;
 *     wc_json_init(&j);
 *     wc_json_object(&j);
 *     wc_json_key(&j, "step"); wc_json_int(&j, 12);
 *     wc_json_key(&j, "loss"); wc_json_num(&j, loss);
 *     wc_json_end(&j);            // closes the object
 *     fputs(wc_json_text(&j), f); wc_json_free(&j);
 *
 * Reading: wc_json_parse checks a whole document and gives the members of its top-level object
 * (numbers, strings, literals; nested values are skipped over but validated). Errors say where.
 *
 * Not here: files (files.h writes them atomically), what the members mean. The builder
 * allocates; it is not used inside a training step. */
#ifndef WILDCPU_JSON_H
#define WILDCPU_JSON_H

#include <stddef.h>
#include <stdint.h>

#define WC_JSON_MAX_DEPTH 32

typedef struct wc_json {
    char *buf;
    size_t len, cap;
    int depth;
    int first[WC_JSON_MAX_DEPTH]; /* nothing written yet at this depth: no comma needed */
    int after_key;                /* a key was written: its value comes next, no comma */
} wc_json;

void wc_json_init(wc_json *j);
void wc_json_free(wc_json *j);
/* The text so far, NUL-terminated (valid JSON once every object/array is closed). */
const char *wc_json_text(const wc_json *j);
/* Empties the buffer for reuse (a new line of metrics.jsonl) without freeing it. */
void wc_json_reset(wc_json *j);

void wc_json_object(wc_json *j); /* { */
void wc_json_array(wc_json *j);  /* [ */
void wc_json_end(wc_json *j);    /* } or ] of the innermost open one */
void wc_json_key(wc_json *j, const char *key);
void wc_json_str(wc_json *j, const char *s);   /* NULL is written as null */
void wc_json_num(wc_json *j, double v);        /* %.17g; null when not finite */
void wc_json_numf(wc_json *j, double v, int significant_digits); /* %.*g; null if not finite */
void wc_json_int(wc_json *j, int64_t v);
void wc_json_bool(wc_json *j, int v);
void wc_json_null(wc_json *j);
/* Shorthands for a key and its value. */
void wc_json_kstr(wc_json *j, const char *key, const char *s);
void wc_json_knum(wc_json *j, const char *key, double v);
void wc_json_kint(wc_json *j, const char *key, int64_t v);
void wc_json_kbool(wc_json *j, const char *key, int v);

/* A parsed top-level object: its members in order. */
typedef enum { WC_JSON_NULL, WC_JSON_BOOL, WC_JSON_NUMBER, WC_JSON_STRING, WC_JSON_NESTED } wc_json_kind;
typedef struct wc_json_member {
    char *key;
    wc_json_kind kind;
    double number;   /* WC_JSON_NUMBER, WC_JSON_BOOL (0 or 1) */
    char *string;    /* WC_JSON_STRING, unescaped */
} wc_json_member;
typedef struct wc_json_doc {
    int n;
    wc_json_member *members;
} wc_json_doc;

/* Parses text (a JSON document whose top level is an object). Returns WC_OK, or WC_ERR with
 * why ("line 3, column 14: expected ':'"). */
int wc_json_parse(const char *text, wc_json_doc *doc, char *why, size_t why_size);
void wc_json_doc_free(wc_json_doc *doc);
/* The member named key, or NULL. */
const wc_json_member *wc_json_get(const wc_json_doc *doc, const char *key);
/* Its number, or NAN when absent, null or not a number. */
double wc_json_get_num(const wc_json_doc *doc, const char *key);

#endif
