/* optim.h: AdamW and SGD with momentum, with a linear-warmup-then-cosine learning rate.
 *
 * Each optimizer moment is ONE contiguous buffer with the parameters' layout, so a checkpoint
 * saves it with one write. Weight decay applies to convolution weights, not biases (the usual
 * practice: decaying a bias only shifts activations). AdamW decays decoupled from the gradient
 * (p -= lr * wd * p, as torch.optim.AdamW); SGD adds wd * p to the gradient (as torch.optim.SGD).
 * Updates are elementwise in a fixed order, so they are bitwise reproducible.
 *
 * Not here: gradient averaging (the caller passes the mean gradient), clipping, the network. */
#ifndef WILDCPU_OPTIM_H
#define WILDCPU_OPTIM_H

#include <stddef.h>

#include "wildcpu/net.h"

typedef enum wc_optim_kind { WC_OPTIM_ADAMW = 0, WC_OPTIM_SGD = 1 } wc_optim_kind;

typedef struct wc_optim_config {
    wc_optim_kind kind;
    double lr;           /* peak learning rate, reached at the end of warmup */
    double min_lr_ratio; /* the cosine decays to lr * min_lr_ratio at the last step */
    double weight_decay;
    double beta1, beta2, eps; /* AdamW */
    double momentum;          /* SGD */
    long warmup_steps;        /* linear from lr/warmup to lr over the first warmup steps */
    long total_steps;         /* the cosine spans [warmup_steps, total_steps) */
} wc_optim_config;

typedef struct wc_optim {
    wc_optim_config cfg;
    size_t n;
    float *m;  /* (n) AdamW first moment, or SGD momentum buffer */
    float *v;  /* (n) AdamW second moment; NULL for SGD */
    long step; /* updates applied so far */
} wc_optim;

/* Defaults for a kind: AdamW lr 5e-4, wd 1e-2, betas (0.9, 0.999), eps 1e-8, min_lr_ratio 0.4;
 * SGD lr 0.05, momentum 0.9, wd 1e-4, min_lr_ratio 0.05. Warmup and total steps are left 0. */
void wc_optim_config_default(wc_optim_config *cfg, wc_optim_kind kind);
wc_optim *wc_optim_create(const wc_optim_config *cfg, size_t nparams);
void wc_optim_destroy(wc_optim *opt);
/* Learning rate of update number `step` (0-based). */
double wc_optim_lr(const wc_optim_config *cfg, long step);
/* One update of params (n) from the mean gradient grads (n); tensors say which are weights.
 * Returns -1, or the index of the first tensor whose parameters or moments the update made
 * non-finite (a diverged run: the caller stops before anything is saved). */
int wc_optim_step(wc_optim *opt, float *params, const float *grads, const wc_tensor *tensors,
                  int ntensors);
/* Bytes of optimizer state (for the memory plan). */
size_t wc_optim_state_bytes(const wc_optim *opt);

#endif
