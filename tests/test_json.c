/* test_json.c: the JSON builder and reader (json.h).
 *
 * The builder's output is compared with texts written out here by hand (escapes of every control
 * character, the Unicode standard's own example of U+FFFD substitution), and every document it
 * writes, whatever bytes it was given, must pass the strict reader and an independent UTF-8
 * check written here. Doubles read back to the same bits. The reader refuses what RFC 8259
 * refuses, says where (line and column), and bounds nesting and number range. Misuse of the
 * builder aborts (checked in a child process). tests/t_json.sh checks wildcpu's real outputs
 * with Python's json module: the reference that shares no code with this one. */
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wildcpu/json.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* {"k":"<s>"} as the builder writes it; caller frees. */
static char *doc_with_string(const char *s) {
    wc_json j;
    wc_json_init(&j);
    wc_json_object(&j);
    wc_json_kstr(&j, "k", s);
    wc_json_end(&j);
    char *t = wc_strdup(wc_json_text(&j));
    wc_json_free(&j);
    return t;
}

/* The builder's JSON string for s, without the {"k": } around it; caller frees. */
static char *escaped(const char *s) {
    char *t = doc_with_string(s);
    size_t n = strlen(t);
    memmove(t, t + 5, n - 6); /* {"k": ... } */
    t[n - 6] = '\0';
    return t;
}

/* Well-formed UTF-8 (RFC 3629), decoded code point by code point: written independently of
 * json.c's table of second-byte ranges. */
static int valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], cp, len;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            len = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0)
            len = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0)
            len = 4, cp = c & 0x07;
        else
            return 0;
        if (i + len > n) return 0;
        for (unsigned k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

/* Parses text, expecting success; returns the doc (empty on failure, which is reported). */
static wc_json_doc parse_ok(const char *text) {
    wc_json_doc d;
    char why[256];
    int rc = wc_json_parse(text, &d, why, sizeof why);
    CHECK(rc == WC_OK, "parse of %.200s failed: %s", text, why);
    return d;
}

/* ---- the builder --------------------------------------------------------------------------- */

static void test_separators_and_nesting(void) {
    wc_json j;
    wc_json_init(&j);
    wc_json_object(&j);
    wc_json_kint(&j, "a", 1);
    wc_json_key(&j, "b");
    wc_json_array(&j);
    wc_json_int(&j, 1);
    wc_json_array(&j);
    wc_json_end(&j);
    wc_json_object(&j);
    wc_json_end(&j);
    wc_json_object(&j);
    wc_json_kbool(&j, "t", 1);
    wc_json_kbool(&j, "f", 0);
    wc_json_key(&j, "n");
    wc_json_null(&j);
    wc_json_kstr(&j, "s", NULL);
    wc_json_end(&j);
    wc_json_str(&j, "x");
    wc_json_end(&j);
    wc_json_knum(&j, "c", 0.5);
    wc_json_end(&j);
    const char *want = "{\"a\":1,\"b\":[1,[],{},{\"t\":true,\"f\":false,\"n\":null,\"s\":null},"
                       "\"x\"],\"c\":0.5}";
    CHECK(strcmp(wc_json_text(&j), want) == 0, "got %s", wc_json_text(&j));

    /* reuse: the same buffer, a fresh document; a top-level array is a document too */
    const char *before = j.buf;
    wc_json_reset(&j);
    wc_json_array(&j);
    wc_json_int(&j, INT64_MIN);
    wc_json_int(&j, INT64_MAX);
    wc_json_end(&j);
    CHECK(strcmp(wc_json_text(&j), "[-9223372036854775808,9223372036854775807]") == 0,
          "after reset: %s", wc_json_text(&j));
    CHECK(j.buf == before, "reset should keep the buffer");

    /* growth: a document far larger than the first allocation */
    wc_json_reset(&j);
    wc_json_array(&j);
    for (int i = 0; i < 100000; i++) wc_json_int(&j, i);
    wc_json_end(&j);
    const char *t = wc_json_text(&j);
    size_t n = strlen(t);
    CHECK(n == j.len && strncmp(t, "[0,1,2,", 7) == 0 && strcmp(t + n - 7, ",99999]") == 0,
          "large array: %zu bytes, ends %s", n, t + n - 7);
    wc_json_free(&j);
    wc_json_free(NULL);
}

static void test_escapes(void) {
    /* JSON's short escapes, the rest of the controls as \u00XX; '/' and DEL need none */
    static const char *want_ctl[32] = {
        NULL,      "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
        "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
        "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f"};
    for (int c = 1; c < 32; c++) {
        char in[4] = {'a', (char)c, 'b', 0}, want[16];
        snprintf(want, sizeof want, "\"a%sb\"", want_ctl[c]);
        char *got = escaped(in);
        CHECK(strcmp(got, want) == 0, "control 0x%02x: got %s, want %s", c, got, want);
        free(got);
    }
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"", "\"\""},
        {"plain", "\"plain\""},
        {"q\"uote", "\"q\\\"uote\""},
        {"back\\slash", "\"back\\\\slash\""},
        {"\\\"", "\"\\\\\\\"\""},
        {"a/b\x7f", "\"a/b\x7f\""},
        {"nan", "\"nan\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5",
         "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = escaped(cases[i].in);
        CHECK(strcmp(got, cases[i].want) == 0, "'%s': got %s, want %s", cases[i].in, got,
              cases[i].want);
        free(got);
    }
    /* keys go through the same escaper */
    wc_json j;
    wc_json_init(&j);
    wc_json_object(&j);
    wc_json_kint(&j, "k\"\n\xff", 1);
    wc_json_end(&j);
    CHECK(strcmp(wc_json_text(&j), "{\"k\\\"\\n\xef\xbf\xbd\":1}") == 0, "key: %s",
          wc_json_text(&j));
    wc_json_free(&j);
}

#define FFFD "\xef\xbf\xbd"
static void test_invalid_utf8(void) {
    static const struct {
        const char *in, *want, *what;
    } cases[] = {
        /* The Unicode Standard, section 3.9 (U+FFFD substitution of maximal subparts), its
         * example: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 */
        {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
         "a" FFFD FFFD FFFD "b" FFFD "c" FFFD FFFD "d", "the standard's example"},
        {"\x80", FFFD, "a lone continuation byte"},
        {"\xC0\x80", FFFD FFFD, "overlong NUL"},
        {"\xC1\xBF", FFFD FFFD, "overlong 2-byte"},
        {"\xE0\x80\x80", FFFD FFFD FFFD, "overlong 3-byte"},
        {"\xF0\x80\x80\x80", FFFD FFFD FFFD FFFD, "overlong 4-byte"},
        {"\xED\xA0\x80", FFFD FFFD FFFD, "an encoded surrogate"},
        {"\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD, "above U+10FFFF"},
        {"\xF5\xFF\xFE", FFFD FFFD FFFD, "bytes never in UTF-8"},
        {"x\xE2\x82", "x" FFFD, "a sequence cut by the end of the string"},
        {"\xE2\x82x", FFFD "x", "a sequence cut by ASCII"},
        {"\xF0\x9F\x98", FFFD, "a 4-byte sequence cut short"},
        {"\xC3\xA9\xC3", "\xC3\xA9" FFFD, "valid, then cut (a name truncated to a buffer)"},
        {"\xEF\xBF\xBD", FFFD, "U+FFFD itself is valid"},
        {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF", "U+10FFFF is valid"},
        {"\xED\x9F\xBF", "\xED\x9F\xBF", "U+D7FF is valid"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = escaped(cases[i].in), want[128];
        snprintf(want, sizeof want, "\"%s\"", cases[i].want);
        CHECK(strcmp(got, want) == 0, "%s: got %s, want %s", cases[i].what, got, want);
        CHECK(valid_utf8((const unsigned char *)got, strlen(got)), "%s: not UTF-8", cases[i].what);
        free(got);
    }
}

/* wc_text_sanitize (util.h) reads UTF-8 by the same rule as the builder (wc_utf8_len): each
 * byte of a control character (C0, DEL, C1) or of an ill-formed sequence becomes '?', the
 * length kept; printable UTF-8 stays. */
static void test_text_sanitize(void) {
    static const struct {
        const char *in, *want;
        size_t replaced;
    } cases[] = {
        {"a\x1b[31m", "a?[31m", 1},              /* ESC */
        {"tab\there\r\n\x7f", "tab?here???", 4}, /* C0 and DEL */
        {"\xC2\x9Bx", "??x", 2},                 /* C1 CSI, two bytes in UTF-8 */
        /* NBSP, e-acute, a CJK character */
        {"\xC2\xA0\xC3\xA9\xE6\x97\xA5", "\xC2\xA0\xC3\xA9\xE6\x97\xA5", 0},
        {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF", 0}, /* U+10FFFF */
        {"\xED\xA0\x80", "???", 3},                  /* an encoded surrogate */
        {"x\xE2\x82", "x??", 2},                     /* cut by the end of the string */
        {"\xC0\x80\xFF", "???", 3},                  /* overlong, never in UTF-8 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[64];
        snprintf(got, sizeof got, "%s", cases[i].in);
        const size_t n = wc_text_sanitize(got);
        CHECK(strcmp(got, cases[i].want) == 0 && n == cases[i].replaced,
              "case %zu: got %s (%zu replaced), want %s (%zu)", i, got, n, cases[i].want,
              cases[i].replaced);
    }
}

/* Whatever bytes a string holds, the document is valid JSON and valid UTF-8, and a string that
 * was valid UTF-8 reads back unchanged. */
static void test_any_bytes_give_valid_json(void) {
    wc_rng r;
    wc_rng_seed(&r, 11, 1, 0);
    int bad_docs = 0, changed = 0, valid_inputs = 0;
    static const char *pieces[] = {"\"",          "\\",           "\x01",
                                   "\x1f",        "\x7f",         "/",
                                   "\xc3\xa9",    "\xe2\x82\xac", "\xf0\x9f\x94\xa5",
                                   "\xef\xbf\xbd"};
    char s[80];
    for (int t = 0; t < 20000; t++) {
        /* half the strings valid UTF-8 (ASCII, controls, quote, backslash, multi-byte
         * characters), half with random bytes >= 0x80 among them as well */
        const int any_bytes = t % 2;
        size_t n = 0, want = (size_t)wc_rng_below(&r, 48);
        while (n < want) {
            uint64_t k = wc_rng_below(&r, any_bytes ? 3 : 2);
            if (k == 0) {
                s[n++] = (char)(1 + wc_rng_below(&r, 0x7F));
            } else if (k == 1) {
                const char *p = pieces[wc_rng_below(&r, sizeof pieces / sizeof pieces[0])];
                memcpy(s + n, p, strlen(p));
                n += strlen(p);
            } else {
                s[n++] = (char)(0x80 + wc_rng_below(&r, 0x80));
            }
        }
        s[n] = '\0';
        char *doc = doc_with_string(s);
        wc_json_doc d;
        char why[256];
        if (wc_json_parse(doc, &d, why, sizeof why) != WC_OK ||
            !valid_utf8((const unsigned char *)doc, strlen(doc))) {
            if (bad_docs++ < 3) NOTE("invalid document %s: %s", doc, why);
        } else if (valid_utf8((const unsigned char *)s, n)) {
            valid_inputs++;
            const char *back = wc_json_get_str(&d, "k");
            if (!back || strcmp(back, s) != 0) changed++;
        }
        wc_json_doc_free(&d);
        free(doc);
    }
    CHECK(bad_docs == 0, "%d of 20000 documents not valid JSON in UTF-8", bad_docs);
    CHECK(changed == 0, "%d of %d valid strings changed by a round trip", changed, valid_inputs);
    CHECK(valid_inputs > 1000, "only %d valid inputs: the test lost its point", valid_inputs);
    NOTE("20000 random strings: %d invalid documents; %d valid UTF-8 ones, %d changed by a round "
         "trip",
         bad_docs, valid_inputs, changed);
}

static void test_nonfinite_is_null(void) {
    wc_json j;
    wc_json_init(&j);
    wc_json_object(&j);
    wc_json_knum(&j, "nan", NAN);
    wc_json_knum(&j, "neg_nan", -NAN);
    wc_json_knum(&j, "inf", INFINITY);
    wc_json_knum(&j, "ninf", -INFINITY);
    wc_json_key(&j, "a");
    wc_json_array(&j);
    wc_json_num(&j, NAN);
    wc_json_numf(&j, INFINITY, 4);
    wc_json_numf(&j, 2.0 / 3.0, 4);
    wc_json_end(&j);
    wc_json_end(&j);
    const char *want = "{\"nan\":null,\"neg_nan\":null,\"inf\":null,\"ninf\":null,"
                       "\"a\":[null,null,0.6667]}";
    CHECK(strcmp(wc_json_text(&j), want) == 0, "got %s", wc_json_text(&j));
    wc_json_doc d = parse_ok(wc_json_text(&j));
    CHECK(d.n == 5 && d.members[0].kind == WC_JSON_NULL && isnan(wc_json_get_num(&d, "inf")),
          "nulls read back: %d members", d.n);
    wc_json_doc_free(&d);
    wc_json_free(&j);
}

static int same_bits(double a, double b) {
    return memcmp(&a, &b, sizeof a) == 0;
}

static void test_doubles_round_trip(void) {
    static const struct {
        double v;
        const char *text;
    } shortest[] = {
        {0.1, "0.1"},
        {1.0, "1.0"},
        {-0.0, "-0.0"},
        {1e300, "1e+300"},
        {0.5, "0.5"},
        {1.0 / 3.0, "0.3333333333333333"},
        {100.0, "100.0"},
        {123456.789, "123456.789"},
        {5e-324, "4.94065645841247e-324"},
        {0.1 + 0.2, "0.30000000000000004"},
    };
    for (size_t i = 0; i < sizeof shortest / sizeof shortest[0]; i++) {
        wc_json j;
        wc_json_init(&j);
        wc_json_num(&j, shortest[i].v);
        CHECK(strcmp(wc_json_text(&j), shortest[i].text) == 0, "%.17g written as %s, want %s",
              shortest[i].v, wc_json_text(&j), shortest[i].text);
        wc_json_free(&j);
    }
    /* random bit patterns (every finite double is as likely as its exponent) and the edges */
    wc_rng r;
    wc_rng_seed(&r, 5, 2, 0);
    const int n = 20000;
    double *v = WC_ALLOC(sizeof(double) * (n + 8));
    const double edges[] = {DBL_MAX, -DBL_MAX,           DBL_MIN,   5e-324,
                            -0.0,    9007199254740993.0, 0.1 + 0.2, 1e23};
    int m = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) v[m++] = edges[i];
    while (m < n + 8) {
        uint64_t bits = wc_rng_next(&r);
        double d;
        memcpy(&d, &bits, sizeof d);
        if (isfinite(d)) v[m++] = d;
    }
    wc_json j;
    wc_json_init(&j);
    wc_json_object(&j);
    for (int i = 0; i < m; i++) {
        char key[16];
        snprintf(key, sizeof key, "v%d", i);
        wc_json_knum(&j, key, v[i]);
    }
    wc_json_end(&j);
    /* more members than one document may have: read back in slices */
    wc_json_doc d;
    char why[256];
    int rc = wc_json_parse(wc_json_text(&j), &d, why, sizeof why);
    CHECK(rc == WC_ERR && strstr(why, "more than 4096 members"), "limit not applied: %s", why);
    wc_json_free(&j);
    int differ = 0;
    for (int lo = 0; lo < m; lo += 4000) {
        wc_json_init(&j);
        wc_json_object(&j);
        for (int i = lo; i < m && i < lo + 4000; i++) {
            char key[16];
            snprintf(key, sizeof key, "v%d", i);
            wc_json_knum(&j, key, v[i]);
        }
        wc_json_end(&j);
        d = parse_ok(wc_json_text(&j));
        for (int i = lo; i < m && i < lo + 4000; i++) {
            const wc_json_member *mm = &d.members[i - lo];
            if (mm->kind != WC_JSON_NUMBER || !same_bits(mm->number, v[i])) {
                if (differ++ < 3) NOTE("%.17g read back as %.17g", v[i], mm->number);
            }
        }
        wc_json_doc_free(&d);
        wc_json_free(&j);
    }
    CHECK(differ == 0, "%d of %d doubles did not read back to the same bits", differ, m);
    free(v);
}

/* ---- the reader ---------------------------------------------------------------------------- */

static void test_parse_members(void) {
    const char *text =
        " \r\n\t{ \"n\" : -12.5e-1 , \"i\":0, \"s\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\","
        "\"u\":\"\\u00e9\\u20AC\\ud83d\\udd25\\u001f\", \"t\":true,\"f\":false,"
        "\"z\":null, \"o\":{\"x\":[1,{\"y\":[]},\"]}\"]}, \"a\":[], \"e\":\"\","
        "\"caf\xc3\xa9\":1e2 } \n";
    wc_json_doc d = parse_ok(text);
    CHECK(d.n == 11, "%d members", d.n);
    if (d.n != 11) {
        wc_json_doc_free(&d);
        return;
    }
    CHECK(wc_json_get_num(&d, "n") == -1.25 && wc_json_get_num(&d, "i") == 0, "numbers");
    CHECK(strcmp(wc_json_get_str(&d, "s"), "a\"b\\c/d\b\f\n\r\t") == 0, "escapes: %s",
          wc_json_get_str(&d, "s"));
    CHECK(strcmp(wc_json_get_str(&d, "u"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5\x1f") == 0,
          "\\u escapes and a surrogate pair: %s", wc_json_get_str(&d, "u"));
    CHECK(d.members[4].kind == WC_JSON_BOOL && d.members[4].number == 1 &&
              d.members[5].kind == WC_JSON_BOOL && d.members[5].number == 0,
          "true and false");
    CHECK(isnan(wc_json_get_num(&d, "t")) && !wc_json_get_str(&d, "n"),
          "a bool is not a number, a number not a string");
    CHECK(d.members[6].kind == WC_JSON_NULL && isnan(wc_json_get_num(&d, "z")), "null");
    CHECK(d.members[7].kind == WC_JSON_NESTED && d.members[8].kind == WC_JSON_NESTED &&
              !d.members[7].string,
          "nested values are skipped");
    CHECK(strcmp(wc_json_get_str(&d, "e"), "") == 0 && wc_json_get_num(&d, "caf\xc3\xa9") == 100,
          "empty string, non-ASCII key");
    CHECK(!wc_json_get(&d, "missing") && isnan(wc_json_get_num(&d, "missing")) &&
              !wc_json_get_str(&d, "missing"),
          "absent member");
    wc_json_doc_free(&d);
    wc_json_doc_free(&d); /* an emptied doc frees again safely */
    d = parse_ok("{}");
    CHECK(d.n == 0, "empty object: %d", d.n);
    wc_json_doc_free(&d);
}

static void test_parse_errors(void) {
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"", "line 1, column 1: expected '{' (the document must be an object), found the end"},
        {"   \n  ", "line 2, column 3: expected '{'"},
        {"[1]", "line 1, column 1: expected '{' (the document must be an object), found '['"},
        {"\"s\"", "line 1, column 1: expected '{'"},
        {"\xEF\xBB\xBF{}", "line 1, column 1: a byte-order mark"},
        {"{", "line 1, column 2: expected a key (a string in double quotes), found the end"},
        {"{\"a\":1,}", "line 1, column 8: expected a key (a string in double quotes), found '}'"},
        {"{\"a\":[1,]}", "line 1, column 9: expected a value"},
        {"{\"a\" 1}", "line 1, column 6: expected ':' after the key, found '1'"},
        {"{\"a\":1 \"b\":2}", "line 1, column 8: expected ',' or '}', found '\"'"},
        {"{\"a\":[1 2]}", "line 1, column 9: expected ',' or ']', found '2'"},
        {"{'a':1}", "line 1, column 2: expected a key"},
        {"{a:1}", "line 1, column 2: expected a key"},
        {"{\"a\":NaN}", "line 1, column 6: expected a value (JSON has no NaN or Infinity"},
        {"{\"a\":Infinity}", "line 1, column 6: expected a value (JSON has no NaN or Infinity"},
        {"{\"a\":-Infinity}", "line 1, column 7: expected a digit, found 'I'"},
        {"{\"a\":nan}", "line 1, column 6: expected a value"},
        {"{\"a\":tru}", "line 1, column 6: expected a value"},
        {"{\"a\":nulll}", "line 1, column 10: expected ',' or '}', found 'l'"},
        {"{\"a\":01}", "line 1, column 6: a number with a leading zero"},
        {"{\"a\":-}", "line 1, column 7: expected a digit, found '}'"},
        {"{\"a\":1.}", "line 1, column 8: expected a digit after the decimal point"},
        {"{\"a\":.5}", "line 1, column 6: expected a value"},
        {"{\"a\":+1}", "line 1, column 6: expected a value"},
        {"{\"a\":1e}", "line 1, column 8: expected a digit in the exponent"},
        {"{\"a\":0x10}", "line 1, column 7: expected ',' or '}', found 'x'"},
        {"{\"a\":\"abc}", "line 1, column 6: string not terminated"},
        {"{\"a\":\"t\tb\"}", "line 1, column 8: control character 0x09 in a string"},
        {"{\"a\":\"l\nb\"}", "line 1, column 8: control character 0x0a in a string"},
        {"{\"a\":\"\\x41\"}", "line 1, column 7: unknown escape"},
        {"{\"a\":\"\\u12\"}", "line 1, column 11: \\u needs four hexadecimal digits"},
        {"{\"a\":\"\\ud83d\"}", "line 1, column 7: \\uD83D is a high surrogate without a low"},
        {"{\"a\":\"\\ud83d\\u0041\"}", "line 1, column 7: \\uD83D is a high surrogate"},
        {"{\"a\":\"\\ude00\"}", "line 1, column 7: \\uDE00 is a low surrogate without a high"},
        {"{\"a\":\"\\u0000\"}", "line 1, column 7: \\u0000 (a NUL character) is not supported"},
        {"{\"a\":\"\xff\"}", "line 1, column 7: invalid UTF-8 (byte 0xff)"},
        {"{\"a\":\"\xc3\"}", "line 1, column 7: invalid UTF-8 (byte 0xc3)"},
        {"{\"a\":\"\xed\xa0\x80\"}", "line 1, column 7: invalid UTF-8 (byte 0xed)"},
        {"{\"a\":1}x", "line 1, column 8: 'x' after the end of the document"},
        {"{\"a\":1}{}", "line 1, column 8: '{' after the end of the document"},
        {"{\"a\":1} // c", "line 1, column 9: '/' after the end"},
        {"{\"a\":1,\"a\":2}", "line 1, column 8: duplicate key \"a\""},
        {"{\"a\":1e309}", "line 1, column 6: number beyond the range of a double"},
        {"{\"a\":-1e400}", "line 1, column 6: number beyond the range of a double"},
        /* lines and columns: columns count characters, not bytes */
        {"{\n  \"x\": 1,\n  \"\xc3\xa9t\xc3\xa9\": \"\xc3\xa9\" x\n}",
         "line 3, column 14: expected ',' or '}', found 'x'"},
        {"{\r\n\"a\":\r\n}", "line 3, column 1: expected a value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wc_json_doc d;
        char why[256] = "untouched";
        int rc = wc_json_parse(cases[i].text, &d, why, sizeof why);
        CHECK(rc == WC_ERR && strncmp(why, cases[i].why, strlen(cases[i].why)) == 0,
              "%s: rc %d, why \"%s\", want \"%s...\"", cases[i].text, rc, why, cases[i].why);
        CHECK(d.n == 0 && d.members == NULL, "%s: doc not emptied", cases[i].text);
        wc_json_doc_free(&d);
    }
    /* no room for the message, or none at all: still an error, no overflow */
    wc_json_doc d;
    char tiny[8];
    CHECK(wc_json_parse("{x", &d, tiny, sizeof tiny) == WC_ERR && strlen(tiny) == 7, "tiny why");
    CHECK(wc_json_parse("{x", &d, NULL, 0) == WC_ERR, "no why");
}

static void test_parse_n(void) {
    /* a line of a JSON-lines buffer, not NUL-terminated where it ends */
    const char buf[] = "{\"step\":3}\n{\"step\":4,\"x\":[1,2]}\n";
    wc_json_doc d;
    char why[256];
    const char *second = strchr(buf, '\n') + 1;
    size_t len = (size_t)(strchr(second, '\n') - second);
    CHECK(wc_json_parse_n(second, len, &d, why, sizeof why) == WC_OK &&
              wc_json_get_num(&d, "step") == 4,
          "second line: %s", why);
    wc_json_doc_free(&d);
    CHECK(wc_json_parse_n(buf, sizeof buf - 1, &d, why, sizeof why) == WC_ERR &&
              strstr(why, "line 2, column 1: '{' after the end"),
          "two documents in one: %s", why);
    /* a number running into the end of the span is cut there, not read past it */
    const char cut[] = "{\"a\":12345}";
    CHECK(wc_json_parse_n(cut, 8, &d, why, sizeof why) == WC_ERR &&
              strstr(why, "column 9: expected ',' or '}', found the end"),
          "cut span: %s", why);
    /* NUL bytes are no part of JSON: an error where they are */
    const char nul[] = "{\"a\":1,\0\"b\":2}";
    CHECK(wc_json_parse_n(nul, sizeof nul - 1, &d, why, sizeof why) == WC_ERR &&
              strstr(why, "column 8: expected a key (a string in double quotes), found byte 0x00"),
          "NUL outside a string: %s", why);
    const char nul2[] = "{\"a\":\"x\0y\"}";
    CHECK(wc_json_parse_n(nul2, sizeof nul2 - 1, &d, why, sizeof why) == WC_ERR &&
              strstr(why, "column 8: control character 0x00"),
          "NUL inside a string: %s", why);
}

static void test_deep_nesting(void) {
    /* 32 levels (the top-level object is the first) are accepted, 33 refused */
    char ok[128], deep[128];
    int n = 0;
    n += snprintf(ok + n, sizeof ok - (size_t)n, "{\"a\":");
    for (int i = 1; i < WC_JSON_MAX_DEPTH; i++) ok[n++] = '[';
    for (int i = 1; i < WC_JSON_MAX_DEPTH; i++) ok[n++] = ']';
    snprintf(ok + n, sizeof ok - (size_t)n, "}");
    wc_json_doc d = parse_ok(ok);
    CHECK(d.n == 1 && d.members[0].kind == WC_JSON_NESTED, "32 levels");
    wc_json_doc_free(&d);
    n = snprintf(deep, sizeof deep, "{\"a\":");
    for (int i = 0; i < WC_JSON_MAX_DEPTH; i++) deep[n++] = '[';
    for (int i = 0; i < WC_JSON_MAX_DEPTH; i++) deep[n++] = ']';
    snprintf(deep + n, sizeof deep - (size_t)n, "}");
    char why[256];
    CHECK(wc_json_parse(deep, &d, why, sizeof why) == WC_ERR &&
              strcmp(why, "line 1, column 37: nested deeper than 32 levels") == 0,
          "33 levels: %s", why);
    /* a megabyte of '[' (a stack overflow for an unbounded recursive parser) */
    size_t big = 1 << 20;
    char *b = WC_ALLOC(big + 8);
    memcpy(b, "{\"a\":", 5);
    memset(b + 5, '[', big);
    b[5 + big] = '\0';
    CHECK(wc_json_parse(b, &d, why, sizeof why) == WC_ERR && strstr(why, "nested deeper"),
          "1 MiB of '[': %s", why);
    free(b);

    /* the builder's side of the same limit: 32 levels open at once */
    wc_json j;
    wc_json_init(&j);
    for (int i = 0; i < WC_JSON_MAX_DEPTH; i++) wc_json_array(&j);
    for (int i = 0; i < WC_JSON_MAX_DEPTH; i++) wc_json_end(&j);
    CHECK(strlen(wc_json_text(&j)) == 2 * WC_JSON_MAX_DEPTH, "builder at 32 levels");
    wc_json_free(&j);
}

static void test_huge_numbers(void) {
    /* big and long numbers that are doubles read as the nearest one; beyond DBL_MAX refused */
    static const struct {
        const char *text;
        double want;
    } cases[] = {
        {"1.7976931348623157e308", DBL_MAX},
        {"-1.7976931348623157e+308", -DBL_MAX},
        {"123456789012345678901234567890", 1.2345678901234568e29},
        {"1e-400", 0.0}, /* underflow: the nearest double, 0 */
        {"-1e-400", -0.0},
        {"4.9e-324", 5e-324}, /* the smallest subnormal */
        {"2.2250738585072014E-308", DBL_MIN},
        {"9007199254740993", 9007199254740992.0}, /* 2^53 + 1 rounds to even */
        {"-0", -0.0},
        {"0e0", 0.0},
        {"1E+2", 100.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"v\":%s}", cases[i].text);
        wc_json_doc d = parse_ok(text);
        double got = wc_json_get_num(&d, "v");
        CHECK(same_bits(got, cases[i].want), "%s read as %.17g, want %.17g", cases[i].text, got,
              cases[i].want);
        wc_json_doc_free(&d);
    }
    /* 1 followed by 308 zeros is 1e308; by 309 zeros too large. Long numbers take the heap. */
    char *t = WC_ALLOC(400);
    for (int zeros = 308; zeros <= 309; zeros++) {
        int n = snprintf(t, 400, "{\"v\":1");
        memset(t + n, '0', (size_t)zeros);
        snprintf(t + n + zeros, 400 - (size_t)(n + zeros), "}");
        wc_json_doc d;
        char why[256];
        int rc = wc_json_parse(t, &d, why, sizeof why);
        if (zeros == 308)
            CHECK(rc == WC_OK && wc_json_get_num(&d, "v") == 1e308, "1e308 in digits: %s", why);
        else
            CHECK(rc == WC_ERR && strstr(why, "beyond the range"), "1e309 in digits: %s", why);
        wc_json_doc_free(&d);
    }
    free(t);
    /* 100,000 digits after the point */
    size_t nd = 100000;
    char *longf = WC_ALLOC(nd + 16);
    int n = snprintf(longf, 16, "{\"v\":0.");
    memset(longf + n, '3', nd);
    snprintf(longf + n + nd, 4, "}");
    wc_json_doc d = parse_ok(longf);
    CHECK(wc_json_get_num(&d, "v") == 1.0 / 3.0, "0.333... read as %.17g",
          wc_json_get_num(&d, "v"));
    wc_json_doc_free(&d);
    free(longf);
}

/* ---- misuse of the builder is a programmer error: it aborts -------------------------------- */

typedef void (*misuse_fn)(wc_json *j);
static void value_without_key(wc_json *j) {
    wc_json_object(j);
    wc_json_int(j, 1);
}
static void key_in_array(wc_json *j) {
    wc_json_array(j);
    wc_json_key(j, "a");
}
static void key_at_top(wc_json *j) {
    wc_json_key(j, "a");
}
static void end_with_nothing_open(wc_json *j) {
    wc_json_object(j);
    wc_json_end(j);
    wc_json_end(j);
}
static void key_without_value(wc_json *j) {
    wc_json_object(j);
    wc_json_key(j, "a");
    wc_json_end(j);
}
static void two_keys(wc_json *j) {
    wc_json_object(j);
    wc_json_key(j, "a");
    wc_json_key(j, "b");
}
static void two_top_values(wc_json *j) {
    wc_json_int(j, 1);
    wc_json_int(j, 2);
}
static void text_of_open_doc(wc_json *j) {
    wc_json_object(j);
    wc_json_text(j);
}
static void text_of_empty_doc(wc_json *j) {
    wc_json_text(j);
}
static void too_deep(wc_json *j) {
    for (int i = 0; i <= WC_JSON_MAX_DEPTH; i++) wc_json_array(j);
}
static void bad_precision(wc_json *j) {
    wc_json_numf(j, 1.0, 18);
}

static void test_misuse_aborts(void) {
    static const struct {
        misuse_fn fn;
        const char *what;
    } cases[] = {
        {value_without_key, "a value without a key in an object"},
        {key_in_array, "a key in an array"},
        {key_at_top, "a key outside any object"},
        {end_with_nothing_open, "an end with nothing open"},
        {key_without_value, "a key without its value"},
        {two_keys, "two keys in a row"},
        {two_top_values, "two top-level values"},
        {text_of_open_doc, "the text of an unfinished document"},
        {text_of_empty_doc, "the text of an empty document"},
        {too_deep, "33 levels open"},
        {bad_precision, "18 significant digits"},
    };
    fflush(stdout);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (!freopen("/dev/null", "w", stderr)) _exit(3);
            wc_json j;
            wc_json_init(&j);
            cases[i].fn(&j);
            _exit(0); /* not reached if the builder asserts */
        }
        int st = 0;
        waitpid(pid, &st, 0);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: not refused (status 0x%x)",
              cases[i].what, st);
    }
}

int main(void) {
    wc_log_set_quiet(1);
    RUN(test_separators_and_nesting);
    RUN(test_escapes);
    RUN(test_invalid_utf8);
    RUN(test_text_sanitize);
    RUN(test_any_bytes_give_valid_json);
    RUN(test_nonfinite_is_null);
    RUN(test_doubles_round_trip);
    RUN(test_parse_members);
    RUN(test_parse_errors);
    RUN(test_parse_n);
    RUN(test_deep_nesting);
    RUN(test_huge_numbers);
    RUN(test_misuse_aborts);
    HARNESS_EXIT();
}
