/* test_util.c: the text util.c gives figures in messages: shares as percentages
 * (wc_fmt_percent), which must never read as none or all when they are not. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "wildcpu/util.h"

static void test_percent(void) {
    static const struct {
        double part, whole;
        const char *want;
    } cases[] = {
        {0, 100, "0.0"},
        {100, 100, "100.0"},
        {25, 100, "25.0"},
        {65524, 65536, "99.98"},
        {1, 65536, "0.002"},
        {1, 3, "33.3"},
        {1, 1e18, "1e-16"},
        {999999, 1e6, "99.9999"},
        {1, 1e12, "0.0000000001"},
        {0, 0, "0.0"},
        {1e15 - 1, 1e15, "99.9999999999999"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[24];
        wc_fmt_percent(got, sizeof got, cases[i].part, cases[i].whole);
        CHECK(strcmp(got, cases[i].want) == 0, "%g of %g: '%s', want '%s'", cases[i].part,
              cases[i].whole, got, cases[i].want);
    }
}

int main(void) {
    RUN(test_percent);
    HARNESS_EXIT();
}
