/* wino_kernel.h: wino_gemm.c's register-blocked product, written once for any vector width and
 * included once per width (wino_gemm.c says why the products are ours). The includer defines:
 *
 *   KERNEL_PRODUCT  the name of the product function this inclusion defines
 *   KERNEL_TARGET   the target attribute's ISA string, e.g. "avx2,fma"
 *   VEC, MASK       the vector and lane-mask types; LANES floats per vector
 *   MR              rows of M (output channels) per kernel call, at most 12; NR is 2 LANES
 *   V_ZERO() V_LOAD(p) V_LOAD_MASKED(p, m) V_STORE(p, v) V_STORE_MASKED(p, m, v)
 *   V_FMA(a, b, c) (a b + c, one rounding) V_SET1(x) MASK_FIRST(n) (the first n lanes)
 *
 * and it undefines them all at the end. Each value of M is the sum over c of U[k][c] V[c][j],
 * one FMA per c in increasing c starting from zero, in every width: the widths give the same
 * bits, and the bits depend on the input tile alone. */

#define NR (2 * LANES) /* columns (tiles) per kernel call: two vectors */

/* M[0..rows)[0..cols) = U[0..rows) x V over C, cols <= NR. rows, nvec and masked are
 * constants in every call (below), so the branches fold away; the accumulators are named
 * variables, not an array (GCC 12 stores an array of vectors back to the stack every
 * iteration); `mask` selects the columns of the last vector when `masked`. */
#define ACC_DECL(r) VEC a##r##0 = V_ZERO(), a##r##1 = V_ZERO()
#define ACC_FMA(r)                                                                                 \
    if (rows > r) {                                                                                \
        const VEC u = V_SET1(U[(size_t)r * ldu + c]);                                              \
        a##r##0 = V_FMA(u, b0, a##r##0);                                                           \
        if (nvec == 2) a##r##1 = V_FMA(u, b1, a##r##1);                                            \
    }
#define ACC_STORE(r)                                                                               \
    if (rows > r) {                                                                                \
        float *o = M + (size_t)r * ldm;                                                            \
        if (nvec == 2) {                                                                           \
            V_STORE(o, a##r##0);                                                                   \
            if (masked)                                                                            \
                V_STORE_MASKED(o + LANES, mask, a##r##1);                                          \
            else                                                                                   \
                V_STORE(o + LANES, a##r##1);                                                       \
        } else if (masked) {                                                                       \
            V_STORE_MASKED(o, mask, a##r##0);                                                      \
        } else {                                                                                   \
            V_STORE(o, a##r##0);                                                                   \
        }                                                                                          \
    }
#define ACC_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#define KERNEL_NAME2(p, s) p##s
#define KERNEL_NAME(p, s)  KERNEL_NAME2(p, s)
#define KERNEL             KERNEL_NAME(KERNEL_PRODUCT, _kernel)
#define PANEL              KERNEL_NAME(KERNEL_PRODUCT, _panel)

__attribute__((target(KERNEL_TARGET), always_inline)) static inline void
KERNEL(const int rows, const int nvec, const int masked, MASK mask, int C, const float *restrict U,
       size_t ldu, const float *restrict V, size_t ldv, float *restrict M, size_t ldm) {
#define ACC_DECL_STMT(r) ACC_DECL(r);
    ACC_ALL(ACC_DECL_STMT)
#undef ACC_DECL_STMT
    for (int c = 0; c < C; c++) {
        const float *v = V + (size_t)c * ldv;
        VEC b0, b1 = V_ZERO();
        if (nvec == 2) {
            b0 = V_LOAD(v);
            b1 = masked ? V_LOAD_MASKED(v + LANES, mask) : V_LOAD(v + LANES);
        } else {
            b0 = masked ? V_LOAD_MASKED(v, mask) : V_LOAD(v);
        }
        ACC_ALL(ACC_FMA)
    }
    ACC_ALL(ACC_STORE)
}

/* One call of the kernel for `rows` (1..MR) and a column shape: 0 = NR full columns, 1 = NR
 * with the second vector masked, 2 = one vector, masked. */
#define ROW_CASE(r)                                                                                \
    case r:                                                                                        \
        KERNEL(r, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                                    \
        break;
#if MR > 6
#define ROWS_ABOVE_6 ROW_CASE(6) ROW_CASE(7) ROW_CASE(8) ROW_CASE(9) ROW_CASE(10) ROW_CASE(11)
#else
#define ROWS_ABOVE_6
#endif
#define ROWS_CASES()                                                                               \
    switch (rows) {                                                                                \
        ROW_CASE(1)                                                                                \
        ROW_CASE(2)                                                                                \
        ROW_CASE(3) ROW_CASE(4) ROW_CASE(5) ROWS_ABOVE_6 default                                   \
            : KERNEL(MR, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                             \
        break;                                                                                     \
    }

__attribute__((target(KERNEL_TARGET))) static void PANEL(int rows, int shape, MASK mask, int C,
                                                         const float *U, size_t ldu, const float *V,
                                                         size_t ldv, float *M, size_t ldm) {
    if (shape == 0) {
#define NV     2
#define MASKED 0
        ROWS_CASES()
#undef MASKED
#define MASKED 1
    } else if (shape == 1) {
        ROWS_CASES()
#undef NV
#define NV 1
    } else {
        ROWS_CASES()
#undef NV
#undef MASKED
    }
}

/* M (K x nt, ld ldm) = U (K x C, ld ldu) x V (C x nt, ld ldv). Rows of U outermost: a block
 * of MR rows (MR C floats) stays in L1 while the panels of V stream past it from L2 (columns
 * outermost, a V panel in L1 and U streaming, measured alike on Zen 3). */
__attribute__((target(KERNEL_TARGET))) static void KERNEL_PRODUCT(int K, int nt, int C,
                                                                  const float *U, size_t ldu,
                                                                  const float *V, size_t ldv,
                                                                  float *M, size_t ldm) {
    const int last = nt % NR ? nt % NR : NR;                /* columns of the last panel */
    const int in_last = last > LANES ? last - LANES : last; /* ... in its last vector */
    const int last_shape = last == NR ? 0 : last > LANES ? 1 : 2;
    const MASK mask = MASK_FIRST(in_last);
    for (int k = 0; k < K; k += MR) {
        const int rows = WC_MIN(MR, K - k);
        for (int j = 0; j < nt; j += NR)
            PANEL(rows, j + NR < nt ? 0 : last_shape, mask, C, U + (size_t)k * ldu, ldu, V + j, ldv,
                  M + (size_t)k * ldm + j, ldm);
    }
}

#undef NR
#undef ACC_DECL
#undef ACC_FMA
#undef ACC_STORE
#undef ACC_ALL
#undef KERNEL
#undef PANEL
#undef ROW_CASE
#undef ROWS_ABOVE_6
#undef ROWS_CASES
#undef KERNEL_PRODUCT
#undef KERNEL_TARGET
#undef VEC
#undef MASK
#undef LANES
#undef MR
#undef V_ZERO
#undef V_LOAD
#undef V_LOAD_MASKED
#undef V_STORE
#undef V_STORE_MASKED
#undef V_FMA
#undef V_SET1
#undef MASK_FIRST
