"""The probability bins of include/wildcpu/metrics.h, for the tests' hand computations.

Written apart from metrics.c, in numpy: with q = min(p, 1 - p), one bin below 2^-53, 2^11 per
power of two (the top 11 bits of q's mantissa) up to 2^-5, then bins 2^-16 wide up to 1/2; the
half p >= 1/2 mirrored, a bin there holding q in (edge, next edge]."""
import numpy as np

H = 1 + 48 * 2048 + 30720  # the bins of one half
B = 2 * H


def _half_bin(q):
    log = 1 + (q.view(np.int64) >> 41) - (np.float64(2.0 ** -53).view(np.int64) >> 41)
    lin = 1 + 48 * 2048 + np.floor((q - 2.0 ** -5) * 65536).astype(np.int64)
    return np.where(q < 2.0 ** -53, 0, np.where(q >= 2.0 ** -5, lin, log))


def bins_of(prob):
    """The bin of each probability in prob (float64, in [0, 1])."""
    up = prob >= 0.5
    q = np.where(up, 1 - prob, prob)
    upper = B - 1 - np.where(q <= 2.0 ** -53, 0, _half_bin(np.nextafter(q, 0)))
    return np.where(up, upper, _half_bin(q))
