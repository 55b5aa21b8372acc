/*
 * dyadic24_subject.c - a conformant C implementation of the proposal rule dyadic24-floor-first-v1
 * (spec/dyadic24-floor-first-v1.md) speaking the JSON-lines protocol dyadic24-jsonl-1, minor
 * version 1 (conformance/PROTOCOL.md): binary32 / binary16 / bfloat16 logits, binary frames,
 * invalid calls answered with an error naming the argument (clause 1.5), and the exp method.
 *
 * It is the "compiled --cmd subject" of benchmarks/bench_conform.py:
 *
 *   cc -O2 -std=c11 -ffp-contract=off -fno-fast-math -o /tmp/dyadic24_subject dyadic24_subject.c -lm
 *   dyadic24 conform --cmd /tmp/dyadic24_subject
 *
 * One file, C11 plus POSIX read(2) (stdin must be read with partial reads: fread blocks until its
 * whole count has arrived, which deadlocks a request/response pipe), libc and libm only.
 *
 * Arithmetic (clause 0.3): every step of clauses 5-7 is one IEEE operation in the stated format.
 * The build MUST NOT contract (use -ffp-contract=off) nor use fast-math; binary32 / binary64
 * expressions must be evaluated in their own format (FLT_EVAL_METHOD == 0, checked below), and
 * flush-to-zero / denormals-are-zero are switched off at start-up on x86 (MXCSR).
 *
 * Exponential (clause 5.3): y = exp((double)z) from libm (glibc: error < 1 ulp of binary64, i.e. below
 * 2^-52 relative), rounded once to binary32. When y lies within 2^-48 (relative) of a binary32 rounding
 * midpoint (normal, subnormal, 2^-150 between +0 and the least subnormal, or the overflow threshold
 * 2^128 - 2^103), exp(z) is recomputed in double-double arithmetic (error about 2^-95 relative) and
 * that value is rounded; the exhaustive search of vectors/data/exp_near_midpoints.json finds no z in
 * [-104, 0] whose exp(z) lies closer than 2^-52.6 to a midpoint. `conform --exp-sweep` checks every z.
 *
 * Limits: V <= 2^31 - 1 and B x V bounded by memory (a call that cannot be allocated is answered
 * with an error naming logits, clause 1.1). No trace support (the handshake says "trace": false).
 *
 * Options: --selftest (Philox known answers and a few exp values, then exit).
 */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "binary32 and binary64 expressions must be evaluated in their own format (FLT_EVAL_METHOD == 0; on x86 build for SSE, e.g. x86-64)"
#endif
#if defined(__FAST_MATH__)
#error "do not build with -ffast-math / -Ofast (clause 0.3)"
#endif
#if defined(__FP_FAST_FMA) && defined(__GNUC__) && !defined(__clang__)
/* FMA hardware is fine as long as nothing is contracted: -ffp-contract=off is required (README). */
#endif

#define K_MAX 32
#define TICKETS 16777216 /* 2^24 */
#define SEMANTIC_ID "dyadic24-floor-first-v1"

enum { ST_OK = 0, ST_NAN_LOGIT = 1, ST_POS_INF_LOGIT = 2, ST_ZERO_MASS = 3, ST_BAD_TEMPERATURE = 4 };
enum { FMT_B32 = 0, FMT_B16 = 1, FMT_BF16 = 2 };

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double u2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* ============================================================================================
 * Clause 9.1: Philox4x32-10
 * ============================================================================================ */
#define PH_M0 0xD2511F53u
#define PH_M1 0xCD9E8D57u
#define PH_W0 0x9E3779B9u
#define PH_W1 0xBB67AE85u

static void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
    uint32_t c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PH_M0 * c0;
        uint64_t p1 = (uint64_t)PH_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += PH_W0;
        k1 += PH_W1;
    }
    c[0] = c0; c[1] = c1; c[2] = c2; c[3] = c3;
}

/* Clauses 9.2-9.4: u = x[0] >> 8 of the draw block. */
static uint32_t draw_u(uint64_t seed, uint64_t round, uint64_t position) {
    uint32_t kc[4] = {0x70726F70u, 0, 0, 0};
    philox4x32_10(kc, (uint32_t)seed, (uint32_t)(seed >> 32));
    uint32_t x[4] = {(uint32_t)position, (uint32_t)(position >> 32), (uint32_t)round, (uint32_t)(round >> 32)};
    philox4x32_10(x, kc[0], kc[1]);
    return x[0] >> 8;
}

/* ============================================================================================
 * Clause 5.3: correctly rounded binary32 exp
 * ============================================================================================ */

/* ---- double-double arithmetic (error-free transformations; no FMA, no contraction) ---- */
typedef struct { double hi, lo; } dd;

static inline dd two_sum(double a, double b) {
    double s = a + b;
    double bb = s - a;
    double e = (a - (s - bb)) + (b - bb);
    dd r = {s, e};
    return r;
}
static inline dd quick_two_sum(double a, double b) { /* |a| >= |b| */
    double s = a + b;
    double e = b - (s - a);
    dd r = {s, e};
    return r;
}
static inline void split(double a, double *hi, double *lo) {
    double t = 134217729.0 * a; /* 2^27 + 1 */
    double h = t - (t - a);
    *hi = h;
    *lo = a - h;
}
static inline dd two_prod(double a, double b) {
    double p = a * b, ah, al, bh, bl;
    split(a, &ah, &al);
    split(b, &bh, &bl);
    double e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    dd r = {p, e};
    return r;
}
static inline dd dd_add(dd a, dd b) {
    dd s = two_sum(a.hi, b.hi);
    dd t = two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = quick_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return quick_two_sum(s.hi, s.lo);
}
static inline dd dd_mul(dd a, dd b) {
    dd p = two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return quick_two_sum(p.hi, p.lo);
}
static inline dd dd_mul_d(dd a, double b) {
    dd p = two_prod(a.hi, b);
    p.lo += a.lo * b;
    return quick_two_sum(p.hi, p.lo);
}
static inline dd dd_from(double a) { dd r = {a, 0.0}; return r; }

/* ln 2 = LN2_HI + LN2_LO (about 2^-107 relative); 1/k! as double-doubles, built at start-up. */
static const dd LN2 = {6.931471805599452862e-01, 2.319046813846299558e-17};
static dd INV_FACT[16];

static void init_inv_fact(void) {
    double f = 1.0;
    for (int k = 1; k < 16; k++) {
        f *= (double)k; /* exact up to 18! */
        double q = 1.0 / f;
        dd pq = two_prod(q, f); /* q * f exactly */
        double r = ((1.0 - pq.hi) - pq.lo) / f;
        dd v = quick_two_sum(q, r);
        INV_FACT[k] = v;
    }
}

/* exp(z) for a finite double z in [-110, 90] as a double-double with relative error ~2^-95. */
static dd exp_dd(double z) {
    double n = nearbyint(z / 6.931471805599452862e-01);
    /* r = z - n ln2 in double-double */
    dd nl = dd_mul_d(LN2, n);
    dd r = dd_add(dd_from(z), (dd){-nl.hi, -nl.lo});
    /* s = r / 2^10 (exact), exp(s) - 1 by Taylor to degree 12, then 10 squarings in expm1 form */
    dd s = {r.hi * 0x1p-10, r.lo * 0x1p-10};
    dd m = INV_FACT[12];
    for (int k = 11; k >= 1; k--) m = dd_add(dd_mul(m, s), INV_FACT[k]);
    m = dd_mul(m, s); /* expm1(s) */
    for (int i = 0; i < 10; i++) {
        /* expm1(2x) = expm1(x) * (expm1(x) + 2) */
        dd t = dd_add(m, dd_from(2.0));
        m = dd_mul(m, t);
    }
    dd e = dd_add(dd_from(1.0), m);
    int ni = (int)n;
    e.hi = ldexp(e.hi, ni);
    e.lo = ldexp(e.lo, ni);
    return e;
}

/* binary32 bits b -> its value as a double, with "2^128" for the pattern after the largest finite
 * value (the overflow threshold 2^128 - 2^103 is the midpoint below it, clause 0.3). */
static inline double grid64(uint32_t b) {
    if (b >= 0x7F800000u) return 0x1p128;
    return (double)u2f(b);
}

/* Is the non-negative double y within rel * y of a binary32 rounding midpoint next to r = RN32(y)? */
static int near_midpoint(double y, uint32_t rb, double rel) {
    double lim = y * rel;
    double rv = grid64(rb);
    if (rb < 0x7F800000u) {
        double up = grid64(rb + 1);
        double mid = (rv + up) * 0.5; /* exact: 25 significant bits */
        if (fabs(y - mid) <= lim) return 1;
    }
    if (rb > 0) {
        double down = grid64(rb - 1);
        double mid = (rv + down) * 0.5;
        if (fabs(y - mid) <= lim) return 1;
    }
    return 0;
}

/* RN32 of the double-double hi + lo (|lo| <= ulp(hi)/2): RN32(hi) unless hi is itself a binary32
 * rounding midpoint, in which case the sign of lo decides. */
static uint32_t rn32_dd(dd v) {
    float f = (float)v.hi;
    if (v.lo != 0.0 && near_midpoint(v.hi, f2u(f), 0.0)) {
        double nudged = nextafter(v.hi, v.lo > 0 ? INFINITY : -INFINITY);
        f = (float)nudged;
    }
    return f2u(f);
}

static long exp_fallbacks = 0;

/* RN32(exp(z)) for a binary32 pattern zb (clause 5.3); subnormal results kept, exp(-inf) = +0. */
static uint32_t exp32_bits(uint32_t zb) {
    uint32_t a = zb & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7FC00000u;             /* NaN (outside the rule) */
    if (a == 0) return 0x3F800000u;                        /* exp(+-0) = 1 */
    if (zb >= 0xC2D00000u) return 0;                       /* z <= -104 (and -inf): exp(z) < 2^-150 */
    if (zb < 0x80000000u && zb >= 0x42B20000u) return 0x7F800000u; /* z >= 89: overflow */
    double z = (double)u2f(zb);
    double y = exp(z);
    float r = (float)y;
    uint32_t rb = f2u(r);
    if (near_midpoint(y, rb, 0x1p-48)) {
        exp_fallbacks++;
        rb = rn32_dd(exp_dd(z));
    }
    return rb;
}

/* ============================================================================================
 * Clause 1.2: exact widening of binary16 (table) and bfloat16 (shift)
 * ============================================================================================ */
static uint32_t *H2F;

static uint32_t half_to_single_bits(uint16_t h) {
    uint32_t s = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return s | 0x7F800000u | (m << 13); /* inf, NaN (non-zero fraction stays) */
    if (e == 0) {
        if (m == 0) return s;
        int b = 9; /* highest set bit of m; value = m * 2^-24 */
        while (!(m & (1u << b))) b--;
        uint32_t exp32 = (uint32_t)(b - 24 + 127);
        uint32_t frac = (m << (23 - b)) & 0x7FFFFFu;
        return s | (exp32 << 23) | frac;
    }
    return s | ((e + 112u) << 23) | (m << 13);
}

static void init_h2f(void) {
    H2F = (uint32_t *)malloc(65536 * sizeof(uint32_t));
    if (!H2F) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (uint32_t h = 0; h < 65536; h++) H2F[h] = half_to_single_bits((uint16_t)h);
}

/* ============================================================================================
 * Clauses 2-3: status scan and candidate selection in one pass
 * ============================================================================================ */

/* kappa(x) of clause 3.1's note: x if the sign is clear, -(x & 0x7fffffff) otherwise (both zeros 0).
 * The 64-bit key (kappa biased to unsigned, then 0xFFFFFFFF - id) orders tokens exactly as 3.1. */
static inline int32_t kappa(uint32_t x) {
    int32_t s = (int32_t)x >> 31;
    int32_t a = (int32_t)(x & 0x7FFFFFFFu);
    return (a ^ s) - s;
}
static inline uint64_t make_key(int32_t k, uint32_t id) {
    return ((uint64_t)((uint32_t)k ^ 0x80000000u) << 32) | (uint32_t)(0xFFFFFFFFu - id);
}
static inline int32_t key_kappa(uint64_t key) { return (int32_t)((uint32_t)(key >> 32) ^ 0x80000000u); }
static inline uint32_t key_id(uint64_t key) { return 0xFFFFFFFFu - (uint32_t)key; }

/* The K best keys seen so far, as a binary min-heap (keys[0] is the smallest: the one to evict). */
typedef struct {
    uint64_t keys[K_MAX];
    int n;
    int32_t thr; /* kappa of keys[0]: an element must have a larger kappa to enter */
    int nan, pinf, notninf;
} Sel;

static void sel_sift_down(Sel *s, int i) {
    uint64_t v = s->keys[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->n) break;
        if (c + 1 < s->n && s->keys[c + 1] < s->keys[c]) c++;
        if (s->keys[c] >= v) break;
        s->keys[i] = s->keys[c];
        i = c;
    }
    s->keys[i] = v;
}

static inline void sel_flags(Sel *s, uint32_t x) {
    uint32_t a = x & 0x7FFFFFFFu;
    s->nan |= a > 0x7F800000u;
    s->pinf |= x == 0x7F800000u;
    s->notninf |= x != 0xFF800000u;
}

/* Elements [i0, i1) one by one: flags, and insertion of every element that beats the threshold.
 * A later element with kappa equal to the threshold has a higher ID, hence a lower key: rejected. */
static inline void sel_scalar(Sel *s, const uint32_t *x, uint32_t i0, uint32_t i1) {
    for (uint32_t i = i0; i < i1; i++) {
        uint32_t v = x[i];
        sel_flags(s, v);
        int32_t k = kappa(v);
        if (k > s->thr) {
            s->keys[0] = make_key(k, i);
            sel_sift_down(s, 0);
            s->thr = key_kappa(s->keys[0]);
        }
    }
}

#if defined(__GNUC__)
typedef int32_t v4i __attribute__((vector_size(16)));
static inline v4i v4load(const uint32_t *p) { v4i v; memcpy(&v, p, 16); return v; }
#define BLOCK 64
#endif

/* Scan a row of V binary32 patterns: status flags (clause 2.1) and the K best keys (clause 3.2). */
static void scan_row(const uint32_t *x, uint32_t V, int K, Sel *s) {
    s->nan = s->pinf = s->notninf = 0;
    s->n = K;
    for (int j = 0; j < K; j++) {
        sel_flags(s, x[j]);
        s->keys[j] = make_key(kappa(x[j]), (uint32_t)j);
    }
    for (int j = K / 2 - 1; j >= 0; j--) sel_sift_down(s, j);
    s->thr = key_kappa(s->keys[0]);
    uint32_t i = (uint32_t)K;
#if defined(__GNUC__)
    const v4i sabs = {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF};
    const v4i vinf = {0x7F800000, 0x7F800000, 0x7F800000, 0x7F800000};
    const v4i vninf = {(int32_t)0xFF800000, (int32_t)0xFF800000, (int32_t)0xFF800000, (int32_t)0xFF800000};
    v4i notninf = {0, 0, 0, 0};
    while (i + BLOCK <= V) {
        const uint32_t *p = x + i;
        v4i thr = {s->thr, s->thr, s->thr, s->thr};
        v4i above = {0, 0, 0, 0}, spec = {0, 0, 0, 0};
        for (int j = 0; j < BLOCK; j += 4) {
            v4i v = v4load(p + j);
            v4i sg = v >> 31;
            v4i a = v & sabs;
            v4i k = (a ^ sg) - sg;
            above |= (k > thr);
            spec |= (a > vinf) | (v == vinf);
            notninf |= (v != vninf);
        }
        int any_above = (above[0] | above[1] | above[2] | above[3]) != 0;
        int any_spec = (spec[0] | spec[1] | spec[2] | spec[3]) != 0;
        if (any_above || any_spec) {
            sel_scalar(s, x, i, i + BLOCK);
            if (s->nan) return; /* NAN_LOGIT is final (clause 2.1, row 1) */
        }
        i += BLOCK;
    }
    if (notninf[0] | notninf[1] | notninf[2] | notninf[3]) s->notninf = 1;
#endif
    sel_scalar(s, x, i, V);
}

/* ============================================================================================
 * One row: clauses 2-9
 * ============================================================================================ */
typedef struct {
    int32_t status, token;
    int32_t ids[K_MAX], tickets[K_MAX];
} RowOut;

static void fail_row(RowOut *o, int32_t status) {
    o->status = status;
    o->token = -1;
    for (int j = 0; j < K_MAX; j++) { o->ids[j] = -1; o->tickets[j] = 0; }
}

static void propose_row(const uint32_t *x, uint32_t V, uint32_t tb, float tau, uint64_t seed, uint64_t rnd,
                        uint64_t pos, RowOut *o) {
    int K = V < K_MAX ? (int)V : K_MAX;
    Sel s = {{0}, 0, 0, 0, 0, 0};
    scan_row(x, V, K, &s);
    /* clause 2.1: status precedence */
    if (s.nan) { fail_row(o, ST_NAN_LOGIT); return; }
    if (s.pinf) { fail_row(o, ST_POS_INF_LOGIT); return; }
    if (!s.notninf) { fail_row(o, ST_ZERO_MASS); return; }
    uint32_t ta = tb & 0x7FFFFFFFu;
    if (ta > 0x7F800000u || (tb >> 31 && ta != 0) || tb == 0x7F800000u) { fail_row(o, ST_BAD_TEMPERATURE); return; }

    /* clause 3: a* = the largest key */
    uint64_t best = s.keys[0];
    for (int j = 1; j < K; j++)
        if (s.keys[j] > best) best = s.keys[j];
    uint32_t astar = key_id(best);

    o->status = ST_OK;
    for (int j = 0; j < K_MAX; j++) { o->ids[j] = -1; o->tickets[j] = 0; }
    if (ta == 0) { /* clause 4.1: greedy (T == +0 or -0) */
        o->token = (int32_t)astar;
        o->ids[0] = (int32_t)astar;
        o->tickets[0] = TICKETS;
        return;
    }

    /* clause 6.1: slots in ascending ID order */
    uint32_t sid[K_MAX];
    for (int j = 0; j < K; j++) sid[j] = key_id(s.keys[j]);
    for (int j = 1; j < K; j++) { /* insertion sort, K <= 32 */
        uint32_t v = sid[j];
        int q = j - 1;
        while (q >= 0 && sid[q] > v) { sid[q + 1] = sid[q]; q--; }
        sid[q + 1] = v;
    }

    /* clause 5: d = RN32(l - m), z = RN32(d / tau), e = RN32(exp(z)) */
    float m = u2f(x[astar]);
    double lv[K_MAX];
    float e[K_MAX];
    int aslot = 0;
    for (int k = 0; k < K; k++) {
        float d = u2f(x[sid[k]]) - m; /* binary32 (FLT_EVAL_METHOD == 0) */
        float z = d / tau;
        e[k] = u2f(exp32_bits(f2u(z)));
        lv[k] = (double)e[k];
        if (sid[k] == astar) aslot = k;
    }
    for (int k = K; k < K_MAX; k++) lv[k] = 0.0;

    /* clause 6.2: the fixed binary64 pairwise tree over 32 slots */
    for (int w = K_MAX / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) lv[k] = lv[2 * k] + lv[2 * k + 1];
    double S = lv[0];

    /* clause 7: p = RN64(e / S), c = floor(p * 2^24), remainder to a* */
    int64_t t[K_MAX];
    int64_t sum = 0;
    for (int k = 0; k < K; k++) {
        double p = (double)e[k] / S;
        int64_t c = (int64_t)(p * 16777216.0); /* exact product, p >= 0: truncation is floor */
        t[k] = c;
        sum += c;
    }
    t[aslot] += (int64_t)TICKETS - sum;

    /* clause 8.1: support = slots with t > 0, ascending ID */
    int ns = 0;
    for (int k = 0; k < K; k++)
        if (t[k] > 0) { o->ids[ns] = (int32_t)sid[k]; o->tickets[ns] = (int32_t)t[k]; ns++; }

    /* clause 9: the draw */
    uint32_t u = draw_u(seed, rnd, pos);
    uint32_t lo = 0;
    o->token = o->ids[ns - 1];
    for (int j = 0; j < ns; j++) {
        uint32_t hi = lo + (uint32_t)o->tickets[j];
        if (u < hi) { o->token = o->ids[j]; break; }
        lo = hi;
    }
}

/* ============================================================================================
 * Input: stdin with partial reads into one growing buffer
 * ============================================================================================ */
static unsigned char *ib;
static size_t ib_cap, ib_beg, ib_end;
static int ib_eof;

static int ib_fill(void) { /* read more; 0 at EOF */
    if (ib_eof) return 0;
    if (ib_beg > 0 && (ib_end == ib_beg || ib_beg > ib_cap / 2)) {
        memmove(ib, ib + ib_beg, ib_end - ib_beg);
        ib_end -= ib_beg;
        ib_beg = 0;
    }
    if (ib_end == ib_cap) {
        size_t nc = ib_cap * 2;
        unsigned char *nb = (unsigned char *)realloc(ib, nc);
        if (!nb) { fprintf(stderr, "dyadic24_subject: out of memory (input line)\n"); exit(1); }
        ib = nb;
        ib_cap = nc;
    }
    for (;;) {
        ssize_t n = read(0, ib + ib_end, ib_cap - ib_end);
        if (n > 0) { ib_end += (size_t)n; return 1; }
        if (n == 0) { ib_eof = 1; return 0; }
        if (errno != EINTR) { ib_eof = 1; return 0; }
    }
}

/* Next line (without its '\n', NUL-terminated in place); NULL at EOF. Valid until the next read. */
static char *read_line(size_t *len) {
    size_t scanned = 0;
    for (;;) {
        unsigned char *start = ib + ib_beg;
        size_t avail = ib_end - ib_beg;
        unsigned char *nl = avail > scanned ? memchr(start + scanned, '\n', avail - scanned) : NULL;
        if (nl) {
            *nl = 0;
            *len = (size_t)(nl - start);
            ib_beg += *len + 1;
            return (char *)start;
        }
        scanned = avail;
        if (!ib_fill()) {
            if (ib_end > ib_beg) { /* last line without newline */
                if (ib_end == ib_cap) {
                    unsigned char *nb = (unsigned char *)realloc(ib, ib_cap + 1);
                    if (!nb) exit(1);
                    ib = nb;
                    ib_cap++;
                }
                ib[ib_end] = 0;
                *len = ib_end - ib_beg;
                char *r = (char *)ib + ib_beg;
                ib_beg = ib_end;
                return r;
            }
            return NULL;
        }
    }
}

/* Read exactly n bytes into dst (first the buffered ones). Returns the number actually read. */
static size_t read_exact(unsigned char *dst, size_t n) {
    size_t got = ib_end - ib_beg;
    if (got > n) got = n;
    memcpy(dst, ib + ib_beg, got);
    ib_beg += got;
    while (got < n) {
        ssize_t r = read(0, dst + got, n - got);
        if (r > 0) got += (size_t)r;
        else if (r < 0 && errno == EINTR) continue;
        else { ib_eof = 1; break; }
    }
    return got;
}

/* ============================================================================================
 * Output
 * ============================================================================================ */
static char *ob;
static size_t ob_cap, ob_len;

static void ob_reserve(size_t extra) {
    if (ob_len + extra <= ob_cap) return;
    size_t nc = ob_cap ? ob_cap : 1 << 16;
    while (nc < ob_len + extra) nc *= 2;
    char *nb = (char *)realloc(ob, nc);
    if (!nb) { fprintf(stderr, "dyadic24_subject: out of memory (output)\n"); exit(1); }
    ob = nb;
    ob_cap = nc;
}
static inline void ob_put(const char *s, size_t n) { ob_reserve(n); memcpy(ob + ob_len, s, n); ob_len += n; }
static inline void ob_str(const char *s) { ob_put(s, strlen(s)); }
static inline void ob_i64(int64_t v) { /* caller reserved 21 bytes */
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do { tmp[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) tmp[n++] = '-';
    char *d = ob + ob_len;
    for (int j = 0; j < n; j++) d[j] = tmp[n - 1 - j];
    ob_len += (size_t)n;
}
static void ob_flush(void) {
    fwrite(ob, 1, ob_len, stdout);
    fflush(stdout);
    ob_len = 0;
}

static void ob_json_string(const char *s) { /* s is plain ASCII without quotes/backslashes here */
    ob_put("\"", 1);
    for (; *s; s++) {
        char c = *s;
        if (c == '"' || c == '\\') ob_put("\\", 1);
        if ((unsigned char)c < 0x20) c = ' ';
        ob_put(&c, 1);
    }
    ob_put("\"", 1);
}

/* ============================================================================================
 * A small JSON reader for the request object: top-level keys with the spans of their values
 * ============================================================================================ */
typedef struct { const char *b, *e; char type; } Span; /* type: s n a o t f z ('z' = null), 0 = absent */

static const char *ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* Skip one JSON value starting at p; return the end or NULL on a syntax error. */
static const char *skip_value(const char *p, const char *end, char *type) {
    p = ws(p, end);
    if (p >= end) return NULL;
    char c = *p;
    if (c == '"') {
        *type = 's';
        p++;
        while (p < end && *p != '"') {
            if (*p == '\\') { p++; if (p >= end) return NULL; }
            p++;
        }
        return p < end ? p + 1 : NULL;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        *type = c == '{' ? 'o' : 'a';
        p = ws(p + 1, end);
        if (p < end && *p == close) return p + 1;
        for (;;) {
            char t;
            if (c == '{') {
                p = ws(p, end);
                if (p >= end || *p != '"') return NULL;
                p = skip_value(p, end, &t);
                if (!p) return NULL;
                p = ws(p, end);
                if (p >= end || *p != ':') return NULL;
                p++;
            }
            p = skip_value(p, end, &t);
            if (!p) return NULL;
            p = ws(p, end);
            if (p >= end) return NULL;
            if (*p == ',') { p++; continue; }
            if (*p == close) return p + 1;
            return NULL;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        *type = 'n';
        p++;
        while (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-'))
            p++;
        return p;
    }
    if (end - p >= 4 && !memcmp(p, "true", 4)) { *type = 't'; return p + 4; }
    if (end - p >= 5 && !memcmp(p, "false", 5)) { *type = 'f'; return p + 5; }
    if (end - p >= 4 && !memcmp(p, "null", 4)) { *type = 'z'; return p + 4; }
    return NULL;
}

enum { KEY_ID, KEY_METHOD, KEY_START, KEY_COUNT, KEY_TAU, KEY_VOCAB, KEY_FORMAT, KEY_FRAME, KEY_LOGITS,
       KEY_TEMP, KEY_SEED, KEY_ROUND, KEY_POS, KEY_TRACE, NKEYS };
static const char *const KEY_NAMES[NKEYS] = {"id", "method", "start", "count", "tauBits", "vocab", "format",
                                             "frame", "logits", "temperature", "seed", "round", "position", "trace"};

/* Parse the top-level object into spans; 0 on a syntax error. */
static int parse_object(const char *p, const char *end, Span sp[NKEYS]) {
    for (int k = 0; k < NKEYS; k++) sp[k].type = 0;
    p = ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return ws(p + 1, end) == end;
    for (;;) {
        p = ws(p, end);
        char t;
        if (p >= end || *p != '"') return 0;
        const char *kb = p + 1;
        p = skip_value(p, end, &t);
        if (!p) return 0;
        const char *ke = p - 1;
        p = ws(p, end);
        if (p >= end || *p != ':') return 0;
        p = ws(p + 1, end);
        const char *vb = p;
        p = skip_value(p, end, &t);
        if (!p) return 0;
        for (int k = 0; k < NKEYS; k++) {
            size_t kl = strlen(KEY_NAMES[k]);
            if ((size_t)(ke - kb) == kl && !memcmp(kb, KEY_NAMES[k], kl)) {
                sp[k].b = vb; sp[k].e = p; sp[k].type = t;
            }
        }
        p = ws(p, end);
        if (p >= end) return 0;
        if (*p == ',') { p++; continue; }
        if (*p == '}') return ws(p + 1, end) == end;
        return 0;
    }
}

/* A JSON integer (no fraction, no exponent) in [lo, hi]. */
static int span_int(const Span *s, int64_t lo, int64_t hi, int64_t *out) {
    if (s->type != 'n') return 0;
    const char *p = s->b, *e = s->e;
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (p >= e) return 0;
    if (*p == '0' && e - p > 1) return 0;
    uint64_t v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return 0;
        if (v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > (uint64_t)INT64_MAX) return 0;
    }
    int64_t r = neg ? -(int64_t)v : (int64_t)v;
    if (r < lo || r > hi) return 0;
    *out = r;
    return 1;
}

/* String contents (between the quotes); 0 if not a string or it holds an escape. */
static int span_str(const Span *s, const char **b, size_t *n) {
    if (s->type != 's') return 0;
    const char *p = s->b + 1, *e = s->e - 1;
    if (memchr(p, '\\', (size_t)(e - p))) return 0;
    *b = p;
    *n = (size_t)(e - p);
    return 1;
}
static int span_str_eq(const Span *s, const char *lit) {
    const char *b;
    size_t n;
    return span_str(s, &b, &n) && n == strlen(lit) && !memcmp(b, lit, n);
}

static signed char HEXV[256];
static void init_hex(void) {
    for (int i = 0; i < 256; i++) HEXV[i] = -1;
    for (int i = 0; i < 10; i++) HEXV['0' + i] = (signed char)i;
    for (int i = 0; i < 6; i++) { HEXV['a' + i] = (signed char)(10 + i); HEXV['A' + i] = (signed char)(10 + i); }
}
/* Decode `digits` hex digits (4 or 8); 0 on a non-hex character. */
static inline int hexword(const char *p, int digits, uint32_t *out) {
    uint32_t v = 0;
    for (int j = 0; j < digits; j++) {
        int h = HEXV[(unsigned char)p[j]];
        if (h < 0) return 0;
        v = (v << 4) | (uint32_t)h;
    }
    *out = v;
    return 1;
}

/* Iterate over the string elements of an array span. */
typedef struct { const char *p, *e; int done; } ArrIt;
static int arr_begin(const Span *s, ArrIt *it) {
    if (s->type != 'a') return 0;
    it->p = ws(s->b + 1, s->e);
    it->e = s->e - 1; /* the closing ']' */
    it->done = it->p >= it->e;
    return 1;
}
/* Next element; returns 1 with the element span, 0 at the end. */
static int arr_next(ArrIt *it, Span *el) {
    if (it->done) return 0;
    char t;
    const char *b = ws(it->p, it->e);
    const char *q = skip_value(b, it->e, &t);
    if (!q) { it->done = 1; return 0; }
    el->b = b; el->e = q; el->type = t;
    q = ws(q, it->e);
    if (q < it->e && *q == ',') q++;
    it->p = q;
    if (ws(q, it->e) >= it->e) it->done = 1;
    return 1;
}

/* An array of B decimal uint64 strings (clause 0.4, PROTOCOL.md: no sign, no leading zeros). */
static int parse_u64s(const Span *s, size_t B, uint64_t *out) {
    ArrIt it;
    Span el;
    if (!arr_begin(s, &it)) return 0;
    size_t n = 0;
    while (arr_next(&it, &el)) {
        const char *b;
        size_t len;
        if (n >= B || !span_str(&el, &b, &len) || len == 0 || len > 20) return 0;
        if (len > 1 && b[0] == '0') return 0;
        uint64_t v = 0;
        for (size_t j = 0; j < len; j++) {
            if (b[j] < '0' || b[j] > '9') return 0;
            uint64_t dgt = (uint64_t)(b[j] - '0');
            if (v > (UINT64_MAX - dgt) / 10) return 0; /* >= 2^64 */
            v = v * 10 + dgt;
        }
        out[n++] = v;
    }
    return n == B;
}

/* ============================================================================================
 * Requests
 * ============================================================================================ */
static unsigned char *frame_buf;
static size_t frame_cap;
static uint32_t *words; /* B x V binary32 patterns */
static size_t words_cap;
static uint32_t *tbits;
static uint64_t *seeds, *rounds, *positions;
static size_t rows_cap;
static RowOut *outs;

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    return q;
}

static int ensure_rows(size_t B) {
    if (B <= rows_cap) return 1;
    size_t nc = rows_cap ? rows_cap : 64;
    while (nc < B) nc *= 2;
    uint32_t *a = (uint32_t *)xrealloc(tbits, nc * sizeof(uint32_t));
    if (a) tbits = a;
    uint64_t *b = (uint64_t *)xrealloc(seeds, nc * sizeof(uint64_t));
    if (b) seeds = b;
    uint64_t *c = (uint64_t *)xrealloc(rounds, nc * sizeof(uint64_t));
    if (c) rounds = c;
    uint64_t *d = (uint64_t *)xrealloc(positions, nc * sizeof(uint64_t));
    if (d) positions = d;
    RowOut *o = (RowOut *)xrealloc(outs, nc * sizeof(RowOut));
    if (o) outs = o;
    if (!a || !b || !c || !d || !o) return 0;
    rows_cap = nc;
    return 1;
}

static int ensure_words(size_t n) {
    if (n <= words_cap) return 1;
    uint32_t *w = (uint32_t *)xrealloc(words, n * sizeof(uint32_t));
    if (!w) return 0;
    words = w;
    words_cap = n;
    return 1;
}

static void send_error(int has_id, int64_t id, const char *argument, const char *message) {
    ob_len = 0;
    ob_reserve(64);
    ob_str("{\"id\":");
    if (has_id) { ob_reserve(24); ob_i64(id); }
    else ob_str("null");
    ob_str(",\"error\":{\"argument\":");
    ob_json_string(argument);
    ob_str(",\"message\":");
    ob_json_string(message);
    ob_str("}}\n");
    ob_flush();
}

static void handle_exp(int64_t id, const Span *sp) {
    const char *b;
    size_t n;
    uint32_t start;
    int64_t count;
    if (!span_str(&sp[KEY_START], &b, &n) || n != 8 || !hexword(b, 8, &start) ||
        !span_int(&sp[KEY_COUNT], 1, (int64_t)1 << 32, &count) || (int64_t)start + count > ((int64_t)1 << 32)) {
        send_error(1, id, "request", "exp needs start (8 hex digits) and count >= 1 with start + count <= 2^32");
        return;
    }
    ob_len = 0;
    ob_reserve(64);
    ob_str("{\"id\":");
    ob_i64(id);
    ob_str(",\"frame\":");
    ob_i64(count * 4);
    ob_str("}\n");
    fwrite(ob, 1, ob_len, stdout);
    ob_len = 0;
    enum { CH = 1 << 16 };
    static unsigned char chunk[CH * 4];
    int64_t done = 0;
    while (done < count) {
        int64_t m = count - done < CH ? count - done : CH;
        for (int64_t j = 0; j < m; j++) {
            uint32_t r = exp32_bits(start + (uint32_t)(done + j));
            unsigned char *q = chunk + 4 * j;
            q[0] = (unsigned char)r; q[1] = (unsigned char)(r >> 8);
            q[2] = (unsigned char)(r >> 16); q[3] = (unsigned char)(r >> 24);
        }
        fwrite(chunk, 1, (size_t)m * 4, stdout);
        done += m;
    }
    fflush(stdout);
}

static void handle_request(char *line, size_t len) {
    Span sp[NKEYS];
    int ok = parse_object(line, line + len, sp);
    int64_t id = 0;
    int has_id = ok && span_int(&sp[KEY_ID], INT64_MIN, INT64_MAX, &id);
    /* the frame is consumed first, whatever else is wrong with the request */
    int64_t frame_len = -1;
    if (ok && sp[KEY_FRAME].type) {
        if (!span_int(&sp[KEY_FRAME], 0, INT64_MAX, &frame_len)) frame_len = -2;
        if (frame_len > 0) {
            if ((size_t)frame_len > frame_cap) {
                unsigned char *nb = (unsigned char *)xrealloc(frame_buf, (size_t)frame_len);
                if (!nb) { /* cannot hold it: consume and drop */
                    unsigned char tmp[65536];
                    int64_t left = frame_len;
                    while (left > 0) {
                        size_t k = read_exact(tmp, left > 65536 ? 65536 : (size_t)left);
                        if (!k) break;
                        left -= (int64_t)k;
                    }
                    send_error(has_id, id, "logits", "the frame does not fit in memory (clause 1.1)");
                    return;
                }
                frame_buf = nb;
                frame_cap = (size_t)frame_len;
            }
            if (read_exact(frame_buf, (size_t)frame_len) != (size_t)frame_len) {
                send_error(has_id, id, "logits", "the binary frame ended early");
                return;
            }
        }
    }
    if (!ok) { send_error(0, 0, "request", "the request line is not a JSON object"); return; }
    if (!has_id || id < 1) { send_error(0, 0, "request", "id must be a positive integer"); return; }

    if (sp[KEY_METHOD].type) {
        if (span_str_eq(&sp[KEY_METHOD], "exp")) { handle_exp(id, sp); return; }
        if (!span_str_eq(&sp[KEY_METHOD], "propose")) { send_error(1, id, "request", "unknown method"); return; }
    }

    /* logits: format, vocab, then the rows (a frame or packed hex strings) */
    int fmt = FMT_B32;
    if (sp[KEY_FORMAT].type) {
        if (span_str_eq(&sp[KEY_FORMAT], "binary32")) fmt = FMT_B32;
        else if (span_str_eq(&sp[KEY_FORMAT], "binary16")) fmt = FMT_B16;
        else if (span_str_eq(&sp[KEY_FORMAT], "bfloat16")) fmt = FMT_BF16;
        else { send_error(1, id, "logits", "unsupported format (clause 1.2: binary32, binary16, bfloat16)"); return; }
    }
    int64_t vocab;
    if (!span_int(&sp[KEY_VOCAB], 1, INT32_MAX, &vocab)) {
        send_error(1, id, "logits", "vocab must be an integer in [1, 2^31 - 1] (clause 1.1)");
        return;
    }
    size_t V = (size_t)vocab, width = fmt == FMT_B32 ? 4 : 2, B;
    if (sp[KEY_FRAME].type) {
        if (frame_len <= 0 || (size_t)frame_len % (width * V)) {
            send_error(1, id, "logits", "the frame is not B >= 1 whole rows of vocab logits (clause 1.1)");
            return;
        }
        B = (size_t)frame_len / (width * V);
        if (!ensure_words(B * V)) { send_error(1, id, "logits", "the call does not fit in memory (clause 1.1)"); return; }
        if (fmt == FMT_B32) {
            for (size_t j = 0; j < B * V; j++) {
                const unsigned char *q = frame_buf + 4 * j;
                words[j] = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
            }
        } else if (fmt == FMT_B16) {
            for (size_t j = 0; j < B * V; j++) words[j] = H2F[(uint32_t)frame_buf[2 * j] | (uint32_t)frame_buf[2 * j + 1] << 8];
        } else {
            for (size_t j = 0; j < B * V; j++)
                words[j] = ((uint32_t)frame_buf[2 * j] | (uint32_t)frame_buf[2 * j + 1] << 8) << 16;
        }
    } else {
        ArrIt it;
        Span el;
        if (!arr_begin(&sp[KEY_LOGITS], &it)) { send_error(1, id, "logits", "must be a non-empty list of rows: B >= 1 (clause 1.1)"); return; }
        int digits = fmt == FMT_B32 ? 8 : 4;
        B = 0;
        while (arr_next(&it, &el)) {
            const char *b;
            size_t n;
            if (!span_str(&el, &b, &n) || n != V * (size_t)digits) {
                send_error(1, id, "logits", "every row must be vocab packed hex words (clause 1.1)");
                return;
            }
            if (!ensure_words((B + 1) * V)) { send_error(1, id, "logits", "the call does not fit in memory (clause 1.1)"); return; }
            uint32_t *w = words + B * V;
            for (size_t j = 0; j < V; j++) {
                uint32_t v;
                if (!hexword(b + j * (size_t)digits, digits, &v)) {
                    send_error(1, id, "logits", "bad hex digit in a row");
                    return;
                }
                w[j] = fmt == FMT_B32 ? v : fmt == FMT_B16 ? H2F[v] : v << 16;
            }
            B++;
        }
        if (B == 0) { send_error(1, id, "logits", "must be a non-empty list of rows: B >= 1 (clause 1.1)"); return; }
    }
    if (!ensure_rows(B)) { send_error(1, id, "logits", "the call does not fit in memory (clause 1.1)"); return; }

    /* temperature: B words of 8 hex digits */
    {
        ArrIt it;
        Span el;
        size_t n = 0;
        int good = arr_begin(&sp[KEY_TEMP], &it);
        while (good && arr_next(&it, &el)) {
            const char *b;
            size_t len;
            uint32_t v;
            if (n >= B || !span_str(&el, &b, &len) || len != 8 || !hexword(b, 8, &v)) { good = 0; break; }
            tbits[n++] = v;
        }
        if (!good || n != B) {
            send_error(1, id, "temperature", "must be B 8-hex-digit binary32 words (clause 1.4)");
            return;
        }
    }
    /* tau: tauBits, 8 hex digits, finite and > 0 */
    uint32_t taub;
    {
        const char *b;
        size_t n;
        if (!sp[KEY_TAU].type) { send_error(1, id, "tau", "tauBits is required (PROTOCOL.md)"); return; }
        if (!span_str(&sp[KEY_TAU], &b, &n) || n != 8 || !hexword(b, 8, &taub)) {
            send_error(1, id, "tau", "tauBits must be 8 hex digits");
            return;
        }
        if (taub == 0 || taub >= 0x7F800000u) { /* +0, negative (sign set), inf, NaN */
            send_error(1, id, "tau", "must be finite and > 0 (clause 1.3)");
            return;
        }
    }
    if (!parse_u64s(&sp[KEY_SEED], B, seeds)) { send_error(1, id, "seed", "must be B decimal uint64 strings (clause 0.4)"); return; }
    if (!parse_u64s(&sp[KEY_ROUND], B, rounds)) { send_error(1, id, "round", "must be B decimal uint64 strings (clause 0.4)"); return; }
    if (!parse_u64s(&sp[KEY_POS], B, positions)) { send_error(1, id, "position", "must be B decimal uint64 strings (clause 0.4)"); return; }

    float tau = u2f(taub);
    for (size_t r = 0; r < B; r++)
        propose_row(words + r * V, (uint32_t)V, tbits[r], tau, seeds[r], rounds[r], positions[r], &outs[r]);

    /* response */
    ob_len = 0;
    ob_reserve(64 + B * (2 * 12 + 64 * 12 + 8));
    ob_str("{\"id\":");
    ob_i64(id);
    ob_str(",\"status\":[");
    for (size_t r = 0; r < B; r++) { if (r) ob[ob_len++] = ','; ob_i64(outs[r].status); }
    ob_str("],\"token\":[");
    for (size_t r = 0; r < B; r++) { if (r) ob[ob_len++] = ','; ob_i64(outs[r].token); }
    ob_str("],\"ids\":[");
    for (size_t r = 0; r < B; r++) {
        if (r) ob[ob_len++] = ',';
        ob[ob_len++] = '[';
        for (int j = 0; j < K_MAX; j++) { if (j) ob[ob_len++] = ','; ob_i64(outs[r].ids[j]); }
        ob[ob_len++] = ']';
    }
    ob_str("],\"tickets\":[");
    for (size_t r = 0; r < B; r++) {
        if (r) ob[ob_len++] = ',';
        ob[ob_len++] = '[';
        for (int j = 0; j < K_MAX; j++) { if (j) ob[ob_len++] = ','; ob_i64(outs[r].tickets[j]); }
        ob[ob_len++] = ']';
    }
    ob_str("]}\n");
    ob_flush();
}

/* ============================================================================================
 * Self test and main
 * ============================================================================================ */
static int selftest(void) {
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        uint32_t c[4] = {kat[i][0], kat[i][1], kat[i][2], kat[i][3]};
        philox4x32_10(c, kat[i][4], kat[i][5]);
        for (int j = 0; j < 4; j++)
            if (c[j] != kat[i][6 + j]) { printf("philox KAT %d word %d: %08x != %08x\n", i, j, c[j], kat[i][6 + j]); bad = 1; }
    }
    /* clause 5.3 note and worked example A.10 */
    static const uint32_t ex[][2] = {{0xc2cff1b5, 0}, {0xc2cff1b4, 1}, {0xc0092492, 0x3df04509}, {0xc0892492, 0x3c618183},
                                     {0x80000000, 0x3f800000}, {0xff800000, 0}, {0x00000000, 0x3f800000}};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        uint32_t r = exp32_bits(ex[i][0]);
        if (r != ex[i][1]) { printf("exp32(%08x) = %08x, expected %08x\n", ex[i][0], r, ex[i][1]); bad = 1; }
    }
    /* the double-double exp against libm away from midpoints */
    for (double z = -103.9; z < 0; z += 0.37) {
        dd v = exp_dd(z);
        double y = exp(z);
        if (fabs(v.hi - y) > 2 * fabs(y) * 0x1p-52) { printf("exp_dd(%g) = %a, libm %a\n", z, v.hi, y); bad = 1; }
    }
    /* A.10: u of s = 0x0123456789abcdef, n = 5, p = 1000 */
    if (draw_u(0x0123456789abcdefULL, 5, 1000) != 10421207u) { printf("A.10 u mismatch\n"); bad = 1; }
    printf(bad ? "selftest FAILED\n" : "selftest ok\n");
    return bad;
}

int main(int argc, char **argv) {
#ifdef HAVE_MXCSR
    _mm_setcsr(_mm_getcsr() & ~(0x8000u | 0x0040u)); /* FTZ and DAZ off (clause 0.3) */
#endif
    init_inv_fact();
    init_h2f();
    init_hex();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--selftest")) return selftest();
        fprintf(stderr, "usage: %s [--selftest]\n", argv[0]);
        return 2;
    }
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    ib_cap = 1 << 20;
    ib = (unsigned char *)malloc(ib_cap);
    if (!ib) return 1;

    fputs("{\"protocol\":\"dyadic24-jsonl-1\",\"minor\":1,\"semanticId\":\"" SEMANTIC_ID "\","
          "\"implementation\":\"dyadic24 C subject\",\"trace\":false,"
          "\"formats\":[\"binary32\",\"binary16\",\"bfloat16\"],\"frames\":true,\"exp\":true}\n",
          stdout);
    fflush(stdout);

    size_t len;
    char *line;
    while ((line = read_line(&len)) != NULL) {
        size_t k = 0;
        while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
        if (k == len) continue;
        handle_request(line, len);
    }
    if (getenv("DYADIC24_SUBJECT_STATS")) fprintf(stderr, "dyadic24_subject: %ld exp fallbacks\n", exp_fallbacks);
    return 0;
}
