/* json.h: the JSON wildcpu writes (report.json, metrics.jsonl, safetensors headers, STAC items,
 * metrics files) and the little it reads back (a report's figures for --baseline, a metrics
 * line's step when a resumed run trims its log).
 *
 * Our own small module rather than json-c: wildcpu only writes documents and reads back flat
 * objects, and json-c would add a -dev package, a library to link and its API to learn for
 * about 300 lines of need.
 *
 * Writing: a builder appends to a growing buffer with the separators placed for the caller:
 * every string and key is escaped (quote, backslash, every control character; each invalid
 * UTF-8 sequence becomes U+FFFD), and a number that is not finite is written as null, so the
 * output is always valid JSON (RFC 8259) in valid UTF-8, whatever the values. Doubles are
 * printed in the shortest %.15g/%.16g/%.17g form that reads back to the same bits unless a
 * precision is given, and always look like doubles (7.0, not 7: a typed reader such as Python's
 * json then gets a float for a field whatever its value); integers are wc_json_int's. Misuse (a
 * value without its key inside an object, a key inside an array, an end with nothing open, a second
 * top-level value, nesting beyond WC_JSON_MAX_DEPTH, taking the text of an unfinished document) is
 * a programmer error: WC_ASSERT.
 *
 *     wc_json j;
 *     wc_json_init(&j);
 *     wc_json_object(&j);
 *     wc_json_key(&j, "step"); wc_json_int(&j, 12);
 *     wc_json_knum(&j, "loss", loss);   // key and value in one call
 *     wc_json_end(&j);                  // closes the object
 *     fputs(wc_json_text(&j), f); wc_json_free(&j);
 *
 * Reading: wc_json_parse checks a whole document strictly against RFC 8259 (no NaN, no
 * trailing commas, no comments, UTF-8 only, no byte-order mark) and gives the members of its
 * top-level object (numbers, strings, literals; nested values are validated and skipped).
 * Errors say where, by line and column. Limits, so that no input can exhaust the stack or the
 * memory: nesting up to WC_JSON_MAX_DEPTH, WC_JSON_MAX_TEXT bytes, WC_JSON_MAX_MEMBERS members
 * at the top level; a number beyond the range of a double, a duplicate top-level key, a lone
 * surrogate escape and \u0000 (it would cut a C string) are refused too.
 *
 * Numbers are formatted and read in the C locale's notation; wildcpu never calls setlocale,
 * and the writer turns another locale's decimal comma back into a point.
 *
 * Not here: files (files.h writes them atomically), what the members mean. The builder
 * allocates; it is not used inside a training step. */
#ifndef WILDCPU_JSON_H
#define WILDCPU_JSON_H

#include <stddef.h>
#include <stdint.h>

#define WC_JSON_MAX_DEPTH   32                 /* objects and arrays open at once */
#define WC_JSON_MAX_TEXT    ((size_t)64 << 20) /* bytes a document may have to be parsed */
#define WC_JSON_MAX_MEMBERS 4096               /* members of the top-level object */

typedef struct wc_json {
    char *buf; /* (cap) the text, NUL-terminated */
    size_t len, cap;
    int depth;                               /* objects and arrays open */
    unsigned char object[WC_JSON_MAX_DEPTH]; /* level d (0-based) is an object, else array */
    unsigned char first[WC_JSON_MAX_DEPTH];  /* nothing written yet at level d: no comma */
    int after_key;                           /* a key was written: its value comes next */
    int complete;                            /* a whole top-level value has been written */
} wc_json;

void wc_json_init(wc_json *j);
void wc_json_free(wc_json *j); /* NULL is fine */
/* The finished document, NUL-terminated: asserts that one top-level value was written and that
 * every object and array is closed, so what a caller writes out is always a whole document. */
const char *wc_json_text(const wc_json *j);
/* Empties the buffer for reuse (a new line of metrics.jsonl) without freeing it. */
void wc_json_reset(wc_json *j);

void wc_json_object(wc_json *j); /* { */
void wc_json_array(wc_json *j);  /* [ */
void wc_json_end(wc_json *j);    /* } or ] of the innermost open one */
void wc_json_key(wc_json *j, const char *key);
void wc_json_str(wc_json *j, const char *s); /* NULL is written as null */
void wc_json_num(wc_json *j, double v);      /* round-trip form; null when not finite */
void wc_json_numf(wc_json *j, double v,
                  int significant_digits); /* %.*g (1..17); null if not finite */
void wc_json_int(wc_json *j, int64_t v);
void wc_json_bool(wc_json *j, int v);
void wc_json_null(wc_json *j);
/* Shorthands for a key and its value. */
void wc_json_kstr(wc_json *j, const char *key, const char *s);
void wc_json_knum(wc_json *j, const char *key, double v);
void wc_json_kint(wc_json *j, const char *key, int64_t v);
void wc_json_kbool(wc_json *j, const char *key, int v);

/* A parsed top-level object: its members in order. */
typedef enum {
    WC_JSON_NULL,
    WC_JSON_BOOL,
    WC_JSON_NUMBER,
    WC_JSON_STRING,
    WC_JSON_NESTED
} wc_json_kind;
typedef struct wc_json_member {
    char *key; /* unescaped UTF-8 */
    wc_json_kind kind;
    double number;              /* WC_JSON_NUMBER, WC_JSON_BOOL (0 or 1) */
    char *string;               /* WC_JSON_STRING: unescaped UTF-8; NULL for the other kinds */
    size_t value_at, value_len; /* the value's text in the parsed text (to edit it in place) */
} wc_json_member;
typedef struct wc_json_doc {
    int n;
    wc_json_member *members; /* (n) */
} wc_json_doc;

/* Parses text (a JSON document whose top level is an object) up to its terminating NUL; a NUL
 * byte cannot be part of a JSON document, so a file holding one reads as ending there. Returns
 * WC_OK, or WC_ERR with why ("line 3, column 14: expected ':' after the key") and doc empty;
 * it logs nothing: the caller knows what the text was and words the message. Columns count
 * characters, from 1. doc is the caller's to free either way. */
int wc_json_parse(const char *text, wc_json_doc *doc, char *why, size_t why_size);
/* The same for len bytes that need not end with a NUL (one line of a JSON-lines file); a NUL
 * inside is an error at its position. */
int wc_json_parse_n(const char *text, size_t len, wc_json_doc *doc, char *why, size_t why_size);
void wc_json_doc_free(wc_json_doc *doc); /* NULL, or an empty doc, is fine */
/* The member named key, or NULL. */
const wc_json_member *wc_json_get(const wc_json_doc *doc, const char *key);
/* Its number, or NAN when absent, null or not a number (a bool is not a number). */
double wc_json_get_num(const wc_json_doc *doc, const char *key);
/* Its string, or NULL when absent or not a string. */
const char *wc_json_get_str(const wc_json_doc *doc, const char *key);

#endif
