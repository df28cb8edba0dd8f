/* json.c: the JSON builder and the strict reader; see json.h.
 *
 * The builder never emits text that is not JSON: separators come from its own state, strings go
 * through one escaper that also repairs UTF-8, and non-finite numbers become null. The reader is
 * a recursive descent over RFC 8259's grammar whose recursion is bounded by WC_JSON_MAX_DEPTH, so
 * hostile input costs at most that many small stack frames.
 *
 * Not here: files, what any member means, a tree of nested values (wildcpu reads back only flat
 * objects; nested values are validated and skipped). */
#include "wildcpu/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/util.h"

/* ---- the builder ------------------------------------------------------------------------- */

static void reserve(wc_json *j, size_t more) {
    if (j->cap > j->len && more < j->cap - j->len) return; /* room for more and the NUL */
    size_t cap = j->cap ? j->cap : 256;
    while (cap - j->len <= more) {
        WC_ASSERT(cap <= SIZE_MAX / 2);
        cap *= 2;
    }
    char *b = realloc(j->buf, cap);
    if (!b) {
        char sz[32];
        wc_fatal("out of memory growing a JSON document to %s",
                 wc_fmt_bytes(sz, sizeof sz, (double)cap));
    }
    j->buf = b;
    j->cap = cap;
}

static void put(wc_json *j, const char *s, size_t n) {
    reserve(j, n);
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void putch(wc_json *j, char c) {
    put(j, &c, 1);
}

/* s as a JSON string, quotes included. */
static void put_string(wc_json *j, const char *s) {
    static const char hex[] = "0123456789abcdef";
    putch(j, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        const unsigned char c = *p;
        if (c >= 0x80) {
            size_t bad, n = wc_utf8_len(p, SIZE_MAX, &bad);
            if (n) {
                put(j, (const char *)p, n);
                p += n;
            } else {
                put(j, "\xEF\xBF\xBD", 3); /* U+FFFD REPLACEMENT CHARACTER */
                p += bad;
            }
            continue;
        }
        p++;
        switch (c) {
        case '"':
            put(j, "\\\"", 2);
            break;
        case '\\':
            put(j, "\\\\", 2);
            break;
        case '\b':
            put(j, "\\b", 2);
            break;
        case '\f':
            put(j, "\\f", 2);
            break;
        case '\n':
            put(j, "\\n", 2);
            break;
        case '\r':
            put(j, "\\r", 2);
            break;
        case '\t':
            put(j, "\\t", 2);
            break;
        default:
            if (c < 0x20) {
                const char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                put(j, u, sizeof u);
            } else {
                putch(j, (char)c);
            }
        }
    }
    putch(j, '"');
}

/* Where a value may go: after its key in an object, after a comma in an array, or as the one
 * top-level value. */
static void before_value(wc_json *j) {
    if (j->depth == 0) {
        WC_ASSERT(!j->complete && "a JSON document has one top-level value");
        return;
    }
    const int d = j->depth - 1;
    if (j->object[d]) {
        WC_ASSERT(j->after_key && "a value inside an object needs its key first");
        j->after_key = 0;
        return;
    }
    if (!j->first[d]) putch(j, ',');
    j->first[d] = 0;
}

static void after_value(wc_json *j) {
    if (j->depth == 0) j->complete = 1;
}

void wc_json_init(wc_json *j) {
    memset(j, 0, sizeof *j);
}

void wc_json_free(wc_json *j) {
    if (!j) return;
    free(j->buf);
    memset(j, 0, sizeof *j);
}

void wc_json_reset(wc_json *j) {
    char *buf = j->buf;
    size_t cap = j->cap;
    memset(j, 0, sizeof *j);
    j->buf = buf;
    j->cap = cap;
    if (buf) buf[0] = '\0';
}

const char *wc_json_text(const wc_json *j) {
    WC_ASSERT(j->complete && j->depth == 0 && "the JSON document is not finished");
    return j->buf;
}

static void open_container(wc_json *j, int object) {
    before_value(j);
    WC_ASSERT(j->depth < WC_JSON_MAX_DEPTH);
    putch(j, object ? '{' : '[');
    j->object[j->depth] = (unsigned char)object;
    j->first[j->depth] = 1;
    j->depth++;
}

void wc_json_object(wc_json *j) {
    open_container(j, 1);
}
void wc_json_array(wc_json *j) {
    open_container(j, 0);
}

void wc_json_end(wc_json *j) {
    WC_ASSERT(j->depth > 0 && "wc_json_end with nothing open");
    WC_ASSERT(!j->after_key && "a key without its value");
    j->depth--;
    putch(j, j->object[j->depth] ? '}' : ']');
    after_value(j);
}

void wc_json_key(wc_json *j, const char *key) {
    WC_ASSERT(key != NULL);
    WC_ASSERT(j->depth > 0 && j->object[j->depth - 1] && "a key outside an object");
    WC_ASSERT(!j->after_key && "two keys in a row");
    const int d = j->depth - 1;
    if (!j->first[d]) putch(j, ',');
    j->first[d] = 0;
    put_string(j, key);
    putch(j, ':');
    j->after_key = 1;
}

void wc_json_str(wc_json *j, const char *s) {
    if (!s) {
        wc_json_null(j);
        return;
    }
    before_value(j);
    put_string(j, s);
    after_value(j);
}

/* printf's %g in a locale other than C may write a decimal comma (or a longer mark): every
 * character of the number that is not a digit, sign or exponent is that mark, written as '.'. */
static void put_number_text(wc_json *j, const char *t) {
    int in_mark = 0;
    for (; *t; t++) {
        if ((*t >= '0' && *t <= '9') || *t == '-' || *t == '+' || *t == 'e' || *t == 'E') {
            putch(j, *t);
            in_mark = 0;
        } else if (!in_mark) {
            putch(j, '.');
            in_mark = 1;
        }
    }
}

static void put_double(wc_json *j, double v, int digits) {
    before_value(j);
    if (!isfinite(v)) {
        put(j, "null", 4);
        after_value(j);
        return;
    }
    char t[48];
    if (digits > 0) {
        snprintf(t, sizeof t, "%.*g", digits, v);
    } else {
        wc_fmt_exact(t, sizeof t, v);
    }
    /* %g writes 7.0 as "7": a double stays one ("7.0") so that a typed reader (Python's json)
     * sees the same type for a field whatever its value */
    if (strspn(t, "-0123456789") == strlen(t)) strcat(t, ".0");
    put_number_text(j, t);
    after_value(j);
}

void wc_json_num(wc_json *j, double v) {
    put_double(j, v, 0);
}

void wc_json_numf(wc_json *j, double v, int significant_digits) {
    WC_ASSERT(significant_digits >= 1 && significant_digits <= 17);
    put_double(j, v, significant_digits);
}

void wc_json_int(wc_json *j, int64_t v) {
    before_value(j);
    char t[24];
    int n = snprintf(t, sizeof t, "%" PRId64, v);
    put(j, t, (size_t)n);
    after_value(j);
}

void wc_json_bool(wc_json *j, int v) {
    before_value(j);
    if (v)
        put(j, "true", 4);
    else
        put(j, "false", 5);
    after_value(j);
}

void wc_json_null(wc_json *j) {
    before_value(j);
    put(j, "null", 4);
    after_value(j);
}

void wc_json_kstr(wc_json *j, const char *key, const char *s) {
    wc_json_key(j, key);
    wc_json_str(j, s);
}
void wc_json_knum(wc_json *j, const char *key, double v) {
    wc_json_key(j, key);
    wc_json_num(j, v);
}
void wc_json_kint(wc_json *j, const char *key, int64_t v) {
    wc_json_key(j, key);
    wc_json_int(j, v);
}
void wc_json_kbool(wc_json *j, const char *key, int v) {
    wc_json_key(j, key);
    wc_json_bool(j, v);
}

/* ---- the reader -------------------------------------------------------------------------- */

typedef struct parser {
    const unsigned char *s;
    size_t len, pos;
    char *why;
    size_t why_size;
    int failed;
    char *str; /* (str_cap) the string being unescaped */
    size_t str_len, str_cap;
} parser;

/* Records the first error, at byte offset at, as "line L, column C: message". */
static int fail_at(parser *p, size_t at, const char *fmt, ...) WC_PRINTF(3, 4);
static int fail_at(parser *p, size_t at, const char *fmt, ...) {
    if (p->failed) return WC_ERR;
    p->failed = 1;
    if (!p->why || p->why_size == 0) return WC_ERR;
    long line = 1, col = 1;
    for (size_t i = 0; i < at && i < p->len; i++) {
        if (p->s[i] == '\n')
            line++, col = 1;
        else if ((p->s[i] & 0xC0) != 0x80) /* a character starts here (not a continuation) */
            col++;
    }
    int n = snprintf(p->why, p->why_size, "line %ld, column %ld: ", line, col);
    if (n >= 0 && (size_t)n < p->why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->why + n, p->why_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return WC_ERR;
}

/* What is at offset at, for a message: "'x'", "byte 0x09", "the end of the text". */
static const char *found(const parser *p, size_t at, char *buf, size_t size) {
    if (at >= p->len)
        snprintf(buf, size, "the end of the text");
    else if (p->s[at] > 0x20 && p->s[at] < 0x7F)
        snprintf(buf, size, "'%c'", p->s[at]);
    else
        snprintf(buf, size, "byte 0x%02x", p->s[at]);
    return buf;
}

static int expected(parser *p, const char *what) {
    char f[32];
    return fail_at(p, p->pos, "expected %s, found %s", what, found(p, p->pos, f, sizeof f));
}

static void skip_ws(parser *p) {
    while (p->pos < p->len) {
        const unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static void str_put(parser *p, const void *b, size_t n) {
    if (p->str_cap - p->str_len <= n) {
        size_t cap = p->str_cap ? p->str_cap : 64;
        while (cap - p->str_len <= n) cap *= 2; /* bounded: the text is <= WC_JSON_MAX_TEXT */
        char *s = realloc(p->str, cap);
        if (!s) wc_fatal("out of memory reading a JSON string (%zu bytes)", cap);
        p->str = s;
        p->str_cap = cap;
    }
    memcpy(p->str + p->str_len, b, n);
    p->str_len += n;
    p->str[p->str_len] = '\0';
}

static int hex4(parser *p, size_t at, unsigned *out) {
    unsigned v = 0;
    for (size_t i = 0; i < 4; i++) {
        if (at + i >= p->len) return fail_at(p, at + i, "\\u needs four hexadecimal digits");
        const unsigned char c = p->s[at + i];
        unsigned d = c >= '0' && c <= '9'   ? c - '0'
                     : c >= 'a' && c <= 'f' ? c - 'a' + 10
                     : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                            : 16;
        if (d == 16) return fail_at(p, at + i, "\\u needs four hexadecimal digits");
        v = v * 16 + d;
    }
    *out = v;
    return WC_OK;
}

static void put_utf8(parser *p, unsigned cp) {
    unsigned char b[4];
    size_t n;
    if (cp < 0x80)
        b[0] = (unsigned char)cp, n = 1;
    else if (cp < 0x800)
        b[0] = (unsigned char)(0xC0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3F)), n = 2;
    else if (cp < 0x10000)
        b[0] = (unsigned char)(0xE0 | cp >> 12), b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)),
        b[2] = (unsigned char)(0x80 | (cp & 0x3F)), n = 3;
    else
        b[0] = (unsigned char)(0xF0 | cp >> 18), b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F)),
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (unsigned char)(0x80 | (cp & 0x3F)),
        n = 4;
    str_put(p, b, n);
}

/* At a '"': the string, unescaped, into p->str (p->str_len bytes). */
static int parse_string(parser *p) {
    const size_t start = p->pos++;
    p->str_len = 0;
    str_put(p, "", 0);
    for (;;) {
        if (p->pos >= p->len)
            return fail_at(p, start, "string not terminated (the text ends inside it)");
        const unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            return WC_OK;
        }
        if (c < 0x20)
            return fail_at(p, p->pos, "control character 0x%02x in a string (it must be escaped)",
                           c);
        if (c >= 0x80) {
            size_t bad, n = wc_utf8_len(p->s + p->pos, p->len - p->pos, &bad);
            if (!n) return fail_at(p, p->pos, "invalid UTF-8 (byte 0x%02x)", c);
            str_put(p, p->s + p->pos, n);
            p->pos += n;
            continue;
        }
        if (c != '\\') {
            str_put(p, &c, 1);
            p->pos++;
            continue;
        }
        const size_t esc = p->pos;
        const unsigned char e = p->pos + 1 < p->len ? p->s[p->pos + 1] : 0;
        p->pos += 2;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            str_put(p, &to[simple - "\"\\/bfnrt"], 1);
            continue;
        }
        if (e != 'u')
            return fail_at(p, esc,
                           "unknown escape (\\\", \\\\, \\/, \\b, \\f, \\n, \\r, "
                           "\\t and \\uXXXX are JSON's)");
        unsigned cp = 0;
        if (hex4(p, p->pos, &cp) != WC_OK) return WC_ERR;
        p->pos += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return fail_at(p, esc, "\\u%04X is a low surrogate without a high one before it", cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo = 0;
            if (p->pos + 1 >= p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                return fail_at(p, esc, "\\u%04X is a high surrogate without a low one after it",
                               cp);
            if (hex4(p, p->pos + 2, &lo) != WC_OK) return WC_ERR;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return fail_at(p, esc, "\\u%04X is a high surrogate without a low one after it",
                               cp);
            p->pos += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0) return fail_at(p, esc, "\\u0000 (a NUL character) is not supported");
        put_utf8(p, cp);
    }
}

/* At a '-' or a digit. */
static int parse_number(parser *p, double *out) {
    const size_t start = p->pos;
    const unsigned char *s = p->s;
#define DIGIT_AT(i) ((i) < p->len && s[i] >= '0' && s[i] <= '9')
    if (p->pos < p->len && s[p->pos] == '-') p->pos++;
    if (p->pos < p->len && s[p->pos] == '0') {
        p->pos++;
        if (DIGIT_AT(p->pos)) return fail_at(p, start, "a number with a leading zero");
    } else if (DIGIT_AT(p->pos)) {
        while (DIGIT_AT(p->pos)) p->pos++;
    } else {
        return expected(p, "a digit");
    }
    if (p->pos < p->len && s[p->pos] == '.') {
        p->pos++;
        if (!DIGIT_AT(p->pos)) return expected(p, "a digit after the decimal point");
        while (DIGIT_AT(p->pos)) p->pos++;
    }
    if (p->pos < p->len && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (s[p->pos] == '+' || s[p->pos] == '-')) p->pos++;
        if (!DIGIT_AT(p->pos)) return expected(p, "a digit in the exponent");
        while (DIGIT_AT(p->pos)) p->pos++;
    }
#undef DIGIT_AT
    /* strtod needs a NUL after the number; the text may go on, or not be NUL-terminated */
    const size_t n = p->pos - start;
    char local[64], *copy = n < sizeof local ? local : WC_ALLOC(n + 1);
    memcpy(copy, s + start, n);
    copy[n] = '\0';
    char *end;
    errno = 0;
    const double v = strtod(copy, &end);
    const int whole = end == copy + n;
    if (copy != local) free(copy);
    if (!whole)
        return fail_at(p, start, "number not understood by strtod (a locale other than C?)");
    if (isinf(v)) return fail_at(p, start, "number beyond the range of a double");
    *out = v; /* an underflow (ERANGE, tiny or 0) is the nearest double: accepted */
    return WC_OK;
}

static int parse_value(parser *p, int depth, wc_json_member *m);

/* At a '{' or '['. depth: levels open once this one is. Nested: m is NULL. */
static int parse_container(parser *p, int depth, wc_json_doc *doc) {
    const size_t start = p->pos;
    const int object = p->s[p->pos] == '{';
    const char close = object ? '}' : ']';
    if (depth > WC_JSON_MAX_DEPTH)
        return fail_at(p, start, "nested deeper than %d levels", WC_JSON_MAX_DEPTH);
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return WC_OK;
    }
    int cap = 0;
    for (;;) {
        wc_json_member *m = NULL;
        if (object) {
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return expected(p, "a key (a string in double quotes)");
            const size_t key_at = p->pos;
            if (parse_string(p) != WC_OK) return WC_ERR;
            if (doc) {
                /* quadratic, but WC_JSON_MAX_MEMBERS bounds it (~8M comparisons) */
                for (int i = 0; i < doc->n; i++)
                    if (strcmp(doc->members[i].key, p->str) == 0)
                        return fail_at(p, key_at, "duplicate key \"%.60s\"", p->str);
                if (doc->n >= WC_JSON_MAX_MEMBERS)
                    return fail_at(p, key_at, "more than %d members", WC_JSON_MAX_MEMBERS);
                if (doc->n == cap) {
                    cap = cap ? 2 * cap : 16;
                    wc_json_member *g = realloc(doc->members, sizeof *g * (size_t)cap);
                    if (!g) wc_fatal("out of memory reading a JSON object (%d members)", cap);
                    doc->members = g;
                }
                m = &doc->members[doc->n++];
                *m = (wc_json_member){.key = wc_strdup(p->str), .kind = WC_JSON_NULL};
            }
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') return expected(p, "':' after the key");
            p->pos++;
            skip_ws(p);
        }
        const size_t value_at = p->pos;
        if (parse_value(p, depth, m) != WC_OK) return WC_ERR;
        if (m) m->value_at = value_at, m->value_len = p->pos - value_at;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            skip_ws(p);
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return WC_OK;
        }
        return expected(p, object ? "',' or '}'" : "',' or ']'");
    }
}

static int literal(parser *p, const char *word) {
    const size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return expected(p, "a value (a string, a number, an object, an array, true, false or "
                           "null)");
    p->pos += n;
    return WC_OK;
}

/* A value at depth levels open; m receives it (a member of the top-level object) or is NULL. */
static int parse_value(parser *p, int depth, wc_json_member *m) {
    if (p->pos >= p->len) return expected(p, "a value");
    const unsigned char c = p->s[p->pos];
    double v = 0;
    switch (c) {
    case '{':
    case '[':
        if (m) m->kind = WC_JSON_NESTED;
        return parse_container(p, depth + 1, NULL);
    case '"':
        if (parse_string(p) != WC_OK) return WC_ERR;
        if (m) m->kind = WC_JSON_STRING, m->string = wc_strdup(p->str);
        return WC_OK;
    case 't':
    case 'f':
        if (literal(p, c == 't' ? "true" : "false") != WC_OK) return WC_ERR;
        if (m) m->kind = WC_JSON_BOOL, m->number = c == 't';
        return WC_OK;
    case 'n':
        return literal(p, "null"); /* m is already WC_JSON_NULL */
    case 'N':
    case 'I':
        return expected(p, "a value (JSON has no NaN or Infinity: null is what wildcpu writes)");
    default:
        if (c != '-' && !(c >= '0' && c <= '9'))
            return expected(p, "a value (a string, a number, an object, an array, true, false or "
                               "null)");
        if (parse_number(p, &v) != WC_OK) return WC_ERR;
        if (m) m->kind = WC_JSON_NUMBER, m->number = v;
        return WC_OK;
    }
}

int wc_json_parse_n(const char *text, size_t len, wc_json_doc *doc, char *why, size_t why_size) {
    WC_ASSERT(text != NULL && doc != NULL);
    *doc = (wc_json_doc){0, NULL};
    if (why && why_size) why[0] = '\0';
    parser p = {.s = (const unsigned char *)text, .len = len, .why = why, .why_size = why_size};
    int rc = WC_ERR;
    if (len > WC_JSON_MAX_TEXT) {
        char a[32], b[32];
        fail_at(&p, 0, "%s of text, more than the %s a document may have",
                wc_fmt_bytes(a, sizeof a, (double)len),
                wc_fmt_bytes(b, sizeof b, (double)WC_JSON_MAX_TEXT));
        goto out;
    }
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        fail_at(&p, 0, "a byte-order mark (RFC 8259: JSON text must not start with one)");
        goto out;
    }
    skip_ws(&p);
    if (p.pos >= p.len || p.s[p.pos] != '{') {
        expected(&p, "'{' (the document must be an object)");
        goto out;
    }
    if (parse_container(&p, 1, doc) != WC_OK) goto out;
    skip_ws(&p);
    if (p.pos < p.len) {
        char f[32];
        fail_at(&p, p.pos, "%s after the end of the document", found(&p, p.pos, f, sizeof f));
        goto out;
    }
    rc = WC_OK;
out:
    free(p.str);
    if (rc != WC_OK) wc_json_doc_free(doc);
    return rc;
}

int wc_json_parse(const char *text, wc_json_doc *doc, char *why, size_t why_size) {
    WC_ASSERT(text != NULL);
    return wc_json_parse_n(text, strlen(text), doc, why, why_size);
}

void wc_json_doc_free(wc_json_doc *doc) {
    if (!doc) return;
    for (int i = 0; i < doc->n; i++) {
        free(doc->members[i].key);
        free(doc->members[i].string);
    }
    free(doc->members);
    doc->members = NULL;
    doc->n = 0;
}

const wc_json_member *wc_json_get(const wc_json_doc *doc, const char *key) {
    for (int i = 0; i < doc->n; i++)
        if (strcmp(doc->members[i].key, key) == 0) return &doc->members[i];
    return NULL;
}

double wc_json_get_num(const wc_json_doc *doc, const char *key) {
    const wc_json_member *m = wc_json_get(doc, key);
    return m && m->kind == WC_JSON_NUMBER ? m->number : NAN;
}

const char *wc_json_get_str(const wc_json_doc *doc, const char *key) {
    const wc_json_member *m = wc_json_get(doc, key);
    return m && m->kind == WC_JSON_STRING ? m->string : NULL;
}
