/* test_optim.c: the optimizers and the schedule against the formulas (torch.optim's), written
 * out independently in double: AdamW with bias correction and decoupled weight decay, SGD with
 * momentum and coupled weight decay, biases never decayed; linear warmup then cosine. */
#include <string.h>

#include "harness.h"
#include "wildcpu/optim.h"
#include "wildcpu/util.h"

/* two tensors: a "weight" of 3 and a "bias" of 2 */
static const wc_tensor tensors[2] = {
    {.name = "w.weight", .ndim = 1, .shape = {3}, .offset = 0, .count = 3, .is_weight = 1},
    {.name = "w.bias", .ndim = 1, .shape = {2}, .offset = 3, .count = 2, .is_weight = 0},
};

static void test_schedule(void) {
    wc_optim_config c;
    wc_optim_config_default(&c, WC_OPTIM_ADAMW);
    c.lr = 1.0, c.min_lr_ratio = 0.1, c.warmup_steps = 4, c.total_steps = 14;
    double want_warm[4] = {0.25, 0.5, 0.75, 1.0};
    for (int s = 0; s < 4; s++)
        CHECK(fabs(wc_optim_lr(&c, s) - want_warm[s]) < 1e-12, "warmup step %d: %g", s,
              wc_optim_lr(&c, s));
    /* cosine from 1 at step 4 to 0.1 at step 13 */
    for (int s = 4; s < 14; s++) {
        double p = (s - 4) / 9.0, want = 0.1 + 0.45 * (1 + cos(M_PI * p));
        CHECK(fabs(wc_optim_lr(&c, s) - want) < 1e-12, "cosine step %d: %g vs %g", s,
              wc_optim_lr(&c, s), want);
    }
    CHECK(fabs(wc_optim_lr(&c, 100) - 0.1) < 1e-12, "after the end the rate stays at the minimum");
    /* where the decay ends by default (--lr-end): AdamW 0.4 of the peak (README, "How good is
     * the map?"), SGD 0.05 */
    wc_optim_config_default(&c, WC_OPTIM_ADAMW);
    CHECK(c.min_lr_ratio == 0.4, "AdamW's decay ends at 0.4 of the peak: %g", c.min_lr_ratio);
    wc_optim_config_default(&c, WC_OPTIM_SGD);
    CHECK(c.min_lr_ratio == 0.05, "SGD's decay ends at 0.05 of the peak: %g", c.min_lr_ratio);
}

static void test_adamw(void) {
    wc_optim_config c;
    wc_optim_config_default(&c, WC_OPTIM_ADAMW);
    c.lr = 0.01, c.weight_decay = 0.1, c.warmup_steps = 0, c.total_steps = 1000, c.min_lr_ratio = 1;
    wc_optim *o = wc_optim_create(&c, 5);
    float p[5] = {1.0f, -2.0f, 0.5f, 0.3f, -0.7f};
    double pd[5], m[5] = {0}, v[5] = {0};
    for (int i = 0; i < 5; i++) pd[i] = p[i];
    for (int t = 1; t <= 5; t++) {
        float g[5];
        for (int i = 0; i < 5; i++) g[i] = (float)(0.1 * (i + 1) * (t % 2 ? 1 : -0.5));
        wc_optim_step(o, p, g, tensors, 2);
        for (int i = 0; i < 5; i++) {
            double wd = i < 3 ? 0.1 : 0.0;
            pd[i] -= 0.01 * wd * pd[i];
            m[i] = 0.9 * m[i] + 0.1 * g[i];
            v[i] = 0.999 * v[i] + 0.001 * (double)g[i] * g[i];
            double mh = m[i] / (1 - pow(0.9, t)), vh = v[i] / (1 - pow(0.999, t));
            pd[i] -= 0.01 * mh / (sqrt(vh) + 1e-8);
        }
    }
    double worst = 0;
    for (int i = 0; i < 5; i++) worst = fmax(worst, fabs(p[i] - pd[i]));
    NOTE("AdamW after 5 steps: max |float - double reference| = %.2e", worst);
    CHECK(worst < 1e-6, "AdamW differs from the reference by %g", worst);
    CHECK(o->step == 5, "step count %ld", o->step);
    wc_optim_destroy(o);
}

static void test_sgd(void) {
    wc_optim_config c;
    wc_optim_config_default(&c, WC_OPTIM_SGD);
    c.lr = 0.1, c.weight_decay = 0.01, c.momentum = 0.9, c.warmup_steps = 0, c.total_steps = 1000,
    c.min_lr_ratio = 1;
    wc_optim *o = wc_optim_create(&c, 5);
    float p[5] = {1.0f, -2.0f, 0.5f, 0.3f, -0.7f};
    double pd[5], buf[5] = {0};
    for (int i = 0; i < 5; i++) pd[i] = p[i];
    for (int t = 1; t <= 5; t++) {
        float g[5];
        for (int i = 0; i < 5; i++) g[i] = (float)(0.2 * (i - 2) + 0.05 * t);
        wc_optim_step(o, p, g, tensors, 2);
        for (int i = 0; i < 5; i++) {
            double d = g[i] + (i < 3 ? 0.01 : 0.0) * pd[i];
            buf[i] = t == 1 ? d : 0.9 * buf[i] + d; /* torch starts the buffer at the gradient */
            pd[i] -= 0.1 * buf[i];
        }
    }
    double worst = 0;
    for (int i = 0; i < 5; i++) worst = fmax(worst, fabs(p[i] - pd[i]));
    NOTE("SGD after 5 steps: max |float - double reference| = %.2e", worst);
    CHECK(worst < 1e-6, "SGD differs from the reference by %g", worst);
    CHECK(o->v == NULL && wc_optim_state_bytes(o) == 5 * sizeof(float), "SGD keeps one moment");
    wc_optim_destroy(o);
}

int main(void) {
    RUN(test_schedule);
    RUN(test_adamw);
    RUN(test_sgd);
    HARNESS_EXIT();
}
