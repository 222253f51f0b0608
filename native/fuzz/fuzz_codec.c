/* The codec calls of the C ABI (docs/spec/descriptor.md §Dequantization, §Quantization,
 * §Sparse layouts, §Block-paged layout): hurray_dequantize, hurray_dequantize_to,
 * hurray_quantize, hurray_sparse_densify and hurray_paged_gather on every layout and
 * quantization kind, cross-checked against each other.
 *
 * Input: byte 0 selects how the descriptor is made.
 *  - even: built from the input's choices (element type, up to 3 small dimensions or a
 *    zero-element shape with a huge outer dimension, layout row-/column-major, strided, COO,
 *    CSR, CSC, BSR or block-paged, quantization none, cast, per-tensor or per-channel affine or
 *    one of the block kinds 4-9 with their parameters), buffers sized as the layout says
 *    (sometimes off by a little), sparse indices and page tables usually made valid;
 *  - odd: [u16 length][encoded descriptor] decoded with hurray_descriptor_decode (composite
 *    heads, impossible descriptors).
 * The rest of the input fills the buffers. Oracles:
 *  - no call returns INTERNAL_PANIC, and every call returns (libFuzzer's timeout);
 *  - hurray_dequantize and hurray_dequantize_to(FLOAT32) agree (status and bytes);
 *  - the status and output do not depend on spare buffer bytes (exact buffers vs 13 more);
 *  - every other target gives the same status, and FLOAT64 rounded to float32 is the float32
 *    result (but for 64-bit integers, which round once straight to float32);
 *  - sparse: dequantize == densify then dequantize of the plain tensor, or the same error;
 *    paged: the same with gather; densify and gather ignore spare output bytes;
 *  - quantize of finite values into a dense descriptor succeeds, ignores buffer slack, and
 *    dequantizes to finite values; plain float32 round-trips bit for bit, and for float16,
 *    bfloat16 and minifloats dequantize(quantize(dequantize(x))) == dequantize(x). */
#include <math.h>

#include "fuzz_common.h"

#define MAX_ELEMS 4096
#define SLACK 13

typedef struct {
    const uint8_t *p;
    size_t n, pos;
} In;

static uint8_t take(In *in) { return in->pos < in->n ? in->p[in->pos++] : 0; }
static uint64_t take_u64(In *in, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)take(in) << (8 * i);
    return v;
}

/* Bytes per element (0 for sub-byte types). */
static unsigned esize(uint8_t t) {
    switch (t) {
    case HURRAY_DTYPE_BOOL: case HURRAY_DTYPE_INT8: case HURRAY_DTYPE_UINT8:
    case HURRAY_DTYPE_FLOAT8_E4M3FN: case HURRAY_DTYPE_FLOAT8_E5M2: case HURRAY_DTYPE_FLOAT8_E4M3FNUZ:
    case HURRAY_DTYPE_FLOAT8_E5M2FNUZ: case HURRAY_DTYPE_FLOAT8_E3M4: case HURRAY_DTYPE_FLOAT8_E8M0FNU: return 1;
    case HURRAY_DTYPE_INT16: case HURRAY_DTYPE_UINT16: case HURRAY_DTYPE_FLOAT16: case HURRAY_DTYPE_BFLOAT16: return 2;
    case HURRAY_DTYPE_INT32: case HURRAY_DTYPE_UINT32: case HURRAY_DTYPE_FLOAT32: return 4;
    case HURRAY_DTYPE_INT64: case HURRAY_DTYPE_UINT64: case HURRAY_DTYPE_FLOAT64: case HURRAY_DTYPE_COMPLEX64: return 8;
    case HURRAY_DTYPE_COMPLEX128: return 16;
    default: return 0;
    }
}

typedef struct {
    HurrayDescriptor *d;
    size_t count;
    uint8_t *buf[64];
    size_t len[64];
} Tensor;

static void tensor_free(Tensor *t) {
    for (size_t i = 0; i < t->count; i++) free(t->buf[i]);
    if (t->d) FUZZ_CHECK(hurray_descriptor_destroy(t->d) == HURRAY_OK);
    t->d = NULL;
    t->count = 0;
}

/* Allocates the descriptor's buffers (capped: a huge declared size gets a short buffer, which
 * every call must refuse cleanly) and fills them from the input. */
static int fill_buffers(Tensor *t, In *in) {
    size_t count = 0;
    FUZZ_CHECK(hurray_descriptor_buffer_count(t->d, &count) == HURRAY_OK);
    t->count = count;
    for (size_t i = 0; i < count; i++) {
        HurrayBufferSpec s;
        FUZZ_CHECK(hurray_descriptor_buffer_spec(t->d, i, &s) == HURRAY_OK);
        size_t n = s.byte_size > (1u << 20) ? (1u << 20) : (size_t)s.byte_size;
        t->buf[i] = malloc(n + SLACK);
        FUZZ_CHECK(t->buf[i] != NULL);
        t->len[i] = n;
        for (size_t k = 0; k < n + SLACK; k++) t->buf[i][k] = in->n ? in->p[(in->pos + k * 7 + i) % in->n] : 0;
        in->pos += n / 2;
    }
    return 1;
}

static void put_index(uint8_t *b, int it64, size_t i, int64_t v) {
    if (it64) memcpy(b + 8 * i, &v, 8);
    else {
        int32_t w = (int32_t)v;
        memcpy(b + 4 * i, &w, 4);
    }
}

/* Makes sparse indices and page tables valid (most of the time) so that the value oracles run. */
static void sanitize(Tensor *t, In *in, uint8_t layout, const uint64_t *dims, size_t rank, uint64_t nnz, int it64,
                     uint32_t br, uint32_t bc, uint64_t pages) {
    if (layout == HURRAY_LAYOUT_COO && t->count == 2 && t->len[1] >= rank * nnz * (it64 ? 8 : 4)) {
        for (size_t k = 0; k < rank; k++)
            for (uint64_t j = 0; j < nnz; j++) put_index(t->buf[1], it64, k * nnz + j, dims[k] ? take(in) % dims[k] : 0);
    } else if ((layout == HURRAY_LAYOUT_CSR || layout == HURRAY_LAYOUT_CSC || layout == HURRAY_LAYOUT_BSR) &&
               t->count == 3 && rank == 2) {
        uint64_t outer = layout == HURRAY_LAYOUT_CSC ? dims[1] : layout == HURRAY_LAYOUT_BSR ? dims[0] / br : dims[0];
        uint64_t inner = layout == HURRAY_LAYOUT_CSC ? dims[0] : layout == HURRAY_LAYOUT_BSR ? dims[1] / bc : dims[1];
        size_t isz = it64 ? 8 : 4;
        if (t->len[1] < (outer + 1) * isz || t->len[2] < nnz * isz) return;
        uint64_t at = 0;
        put_index(t->buf[1], it64, 0, 0);
        for (uint64_t r = 1; r <= outer; r++) {
            uint64_t step = r == outer ? nnz - at : take(in) % (nnz - at + 1);
            at += step;
            put_index(t->buf[1], it64, r, (int64_t)at);
        }
        for (uint64_t j = 0; j < nnz; j++) put_index(t->buf[2], it64, j, inner ? take(in) % inner : 0);
    } else if (layout == HURRAY_LAYOUT_PAGED && t->count == 2 && pages) {
        size_t isz = it64 ? 8 : 4;
        for (size_t b = 0; b + 1 <= t->len[1] / isz; b++) put_index(t->buf[1], it64, b, take(in) % pages);
    }
}

static const uint8_t TYPES[] = {
    HURRAY_DTYPE_BOOL, HURRAY_DTYPE_INT8, HURRAY_DTYPE_INT16, HURRAY_DTYPE_INT32, HURRAY_DTYPE_INT64,
    HURRAY_DTYPE_UINT8, HURRAY_DTYPE_UINT16, HURRAY_DTYPE_UINT32, HURRAY_DTYPE_UINT64, HURRAY_DTYPE_FLOAT16,
    HURRAY_DTYPE_BFLOAT16, HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT64, HURRAY_DTYPE_COMPLEX64,
    HURRAY_DTYPE_COMPLEX128, HURRAY_DTYPE_FLOAT8_E4M3FN, HURRAY_DTYPE_FLOAT8_E5M2, HURRAY_DTYPE_INT4,
    HURRAY_DTYPE_UINT4, HURRAY_DTYPE_FLOAT8_E4M3FNUZ, HURRAY_DTYPE_FLOAT8_E5M2FNUZ, HURRAY_DTYPE_FLOAT8_E3M4,
    HURRAY_DTYPE_FLOAT6_E2M3FN, HURRAY_DTYPE_FLOAT6_E3M2FN, HURRAY_DTYPE_FLOAT4_E2M1FN, HURRAY_DTYPE_FLOAT8_E8M0FNU};

/* Builds a descriptor from the input's choices; 0 when the builder refuses it (fine: refusals
 * are part of the contract, and nothing else is then called). */
static int build(Tensor *t, In *in) {
    uint8_t et = TYPES[take(in) % sizeof TYPES];
    uint8_t shape_kind = take(in);
    size_t rank = shape_kind % 4;
    uint64_t dims[3] = {0, 0, 0};
    for (size_t i = 0; i < rank; i++) dims[i] = take(in) % 9;
    if ((shape_kind & 0xF0) == 0xF0 && rank >= 2) {
        dims[0] = (uint64_t)1 << (30 + take(in) % 30); /* huge outer dimension, zero elements */
        dims[rank - 1] = 0;
    }
    uint8_t lay = take(in) % 9;
    uint8_t qsel = take(in) % 10;
    uint8_t perturb = take(in);
    HurrayDescriptorBuilder *b = NULL;
    HurrayBlockQuant bq = {0};
    int block = qsel >= 4;
    if (block) {
        bq.kind = qsel;
        bq.dequantized_type = (uint8_t[]){HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT16, HURRAY_DTYPE_BFLOAT16,
                                          HURRAY_DTYPE_FLOAT64}[take(in) % 4];
        static const uint8_t st[] = {HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT8_E8M0FNU, HURRAY_DTYPE_FLOAT8_E4M3FN,
                                     HURRAY_DTYPE_FLOAT16, HURRAY_DTYPE_BFLOAT16, HURRAY_DTYPE_INT8};
        static const uint8_t natural[] = {0, 0, 0, 0, 0, 1, 2, 0, 3, 3};
        uint8_t sc = take(in);
        bq.scale_type = (sc & 0xC0) ? st[natural[qsel]] : st[sc % sizeof st];
        if (qsel == HURRAY_QUANT_NF4 && (sc & 1) && (sc & 0xC0)) bq.scale_type = HURRAY_DTYPE_INT8;
        static const uint8_t stored[] = {0, 0, 0, 0, HURRAY_DTYPE_UINT4, HURRAY_DTYPE_FLOAT8_E4M3FN,
                                         HURRAY_DTYPE_FLOAT4_E2M1FN, HURRAY_DTYPE_INT4, HURRAY_DTYPE_INT8, HURRAY_DTYPE_UINT4};
        uint8_t es = take(in);
        if (es & 0x80) et = stored[qsel];
        if (qsel == HURRAY_QUANT_MX && (es & 0x80)) et = (uint8_t[]){HURRAY_DTYPE_FLOAT8_E4M3FN, HURRAY_DTYPE_FLOAT8_E5M2,
                HURRAY_DTYPE_FLOAT6_E2M3FN, HURRAY_DTYPE_FLOAT6_E3M2FN, HURRAY_DTYPE_FLOAT4_E2M1FN, HURRAY_DTYPE_INT8}[es % 6];
        bq.axis = rank ? (qsel >= 8 ? (uint32_t)rank - 1 : take(in) % rank) : 0;
        if (qsel == HURRAY_QUANT_NF4) bq.axis = 0;
        uint8_t bs = take(in);
        bq.block = qsel >= 8 ? 32 : (bs & 0x80) ? (uint32_t)take_u64(in, 4) : (uint32_t)(bs % 8 + 1) * (qsel == 4 ? 2 : 1);
        if (qsel == HURRAY_QUANT_NF4 && (sc & 1) && (sc & 0xC0)) bq.block2 = take(in) % 5 + 1;
        /* Make the axis a multiple of the block so the kinds' own rules pass most of the time. */
        if (rank && qsel != HURRAY_QUANT_NF4 && !(bs & 0x40) && bq.block && bq.block <= 64 && dims[bq.axis] < (1u << 20))
            dims[bq.axis] = (dims[bq.axis] % 3) * bq.block;
        HurrayStatus s = hurray_quantize_plan(et, dims, rank, &bq, &t->d);
        FUZZ_NO_PANIC(s);
        if (s != HURRAY_OK) return 0;
        return fill_buffers(t, in);
    }
    HurrayStatus s = hurray_descriptor_builder_new(et, dims, rank, &b);
    FUZZ_NO_PANIC(s);
    if (s != HURRAY_OK) return 0;
    uint64_t nnz = take(in) % 12, pages = take(in) % 5;
    int it64 = take(in) & 1;
    uint32_t br = take(in) % 3 + 1, bc = take(in) % 3 + 1, ps = take(in) % 4 + 1;
    uint64_t n = rank == 0 ? 1 : dims[0] * (rank > 1 ? dims[1] : 1) * (rank > 2 ? dims[2] : 1);
    unsigned w = esize(et);
    size_t isz = it64 ? 8 : 4;
    uint64_t sizes[3] = {0, 0, 0};
    size_t nbuf = 0;
    int64_t strides[3];
    uint64_t offset = 0;
    switch (lay) {
    case 0: /* row-major: the builder sizes the buffer */
    case 1:
        s = hurray_descriptor_builder_set_layout(b, lay, NULL, 0);
        if (lay == 1 && (perturb & 1)) offset = perturb % 17;
        break;
    case 2: { /* strided, strides and offset from the input */
        for (size_t i = 0; i < rank; i++) strides[i] = (int8_t)take(in);
        offset = (perturb & 0x80) ? take_u64(in, 8) : take(in);
        s = hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_STRIDED, strides, rank);
        sizes[0] = (perturb & 0x40) ? take_u64(in, 8) : offset + 64 * w + take(in);
        nbuf = 1;
        break;
    }
    case 3: case 4: case 5: case 6: {
        uint8_t l = (uint8_t[]){HURRAY_LAYOUT_COO, HURRAY_LAYOUT_CSR, HURRAY_LAYOUT_CSC, HURRAY_LAYOUT_BSR}[lay - 3];
        if (l == HURRAY_LAYOUT_BSR && rank == 2) {
            dims[0] = dims[0] / br * br;
            dims[1] = dims[1] / bc * bc;
        }
        s = hurray_descriptor_builder_set_layout(b, l, NULL, 0);
        HurraySparse sp = {.index_type = it64 ? HURRAY_DTYPE_INT64 : HURRAY_DTYPE_INT32,
                           .canonical = perturb & 1,
                           .block_rows = l == HURRAY_LAYOUT_BSR ? br : 0,
                           .block_cols = l == HURRAY_LAYOUT_BSR ? bc : 0,
                           .nnz = nnz};
        if (s == HURRAY_OK) s = hurray_descriptor_builder_set_sparse(b, &sp);
        uint64_t be = l == HURRAY_LAYOUT_BSR ? (uint64_t)br * bc : 1;
        sizes[0] = nnz * be * w;
        if (l == HURRAY_LAYOUT_COO) {
            sizes[1] = rank * nnz * isz;
            nbuf = 2;
        } else {
            uint64_t outer = rank < 2 ? 0 : l == HURRAY_LAYOUT_CSC ? dims[1] : l == HURRAY_LAYOUT_BSR ? dims[0] / br : dims[0];
            sizes[1] = (outer + 1) * isz;
            sizes[2] = nnz * isz;
            nbuf = 3;
        }
        break;
    }
    case 7: { /* block-paged */
        s = hurray_descriptor_builder_set_layout(b, HURRAY_LAYOUT_PAGED, NULL, 0);
        uint64_t rows = rank ? dims[0] : 0, row = 1;
        for (size_t i = 1; i < rank; i++) row *= dims[i];
        uint64_t blocks = (rows + ps - 1) / ps;
        HurrayPaging pg = {.index_type = it64 ? HURRAY_DTYPE_INT64 : HURRAY_DTYPE_INT32,
                           .page_size = ps, .block_count = blocks, .page_count = pages};
        if (s == HURRAY_OK) s = hurray_descriptor_builder_set_paging(b, &pg);
        sizes[0] = pages * ps * row * w;
        sizes[1] = blocks * isz;
        nbuf = 2;
        break;
    }
    default: { /* dense with a quantization kind 1-3 */
        HurrayQuantization q = {.kind = (uint8_t)(qsel % 4), .dequantized_type = HURRAY_DTYPE_FLOAT32,
                                .axis = rank ? take(in) % rank : 0, .scale = (double)(int8_t)take(in) / 7.0,
                                .bias = (double)(int8_t)take(in)};
        if (q.kind == 0) q.kind = HURRAY_QUANT_CAST;
        s = hurray_descriptor_builder_set_quantization(b, &q);
        if (q.kind == HURRAY_QUANT_PER_CHANNEL_AFFINE) {
            sizes[0] = w ? n * w : (n * 4 + 7) / 8;
            sizes[1] = sizes[2] = (rank ? dims[q.axis] : 1) * 4;
            nbuf = 3;
        }
        break;
    }
    }
    if (s == HURRAY_OK && offset) s = hurray_descriptor_builder_set_byte_offset(b, offset);
    if ((perturb & 0x3E) == 0x3E && nbuf) sizes[perturb % nbuf] += (perturb & 0x40) ? 1 : (uint64_t)-1;
    for (size_t i = 0; s == HURRAY_OK && i < nbuf; i++) {
        HurrayBufferSpec spec = {.byte_size = sizes[i], .alignment = 64, .device_tag = HURRAY_DEVICE_CPU,
                                 .sync_mode = HURRAY_SYNC_PRODUCER_SYNCED};
        s = hurray_descriptor_builder_add_buffer(b, &spec);
    }
    FUZZ_NO_PANIC(s);
    if (s == HURRAY_OK) s = hurray_descriptor_builder_build(b, &t->d);
    FUZZ_NO_PANIC(s);
    FUZZ_CHECK(hurray_descriptor_builder_destroy(&b) == HURRAY_OK);
    if (s != HURRAY_OK) return 0;
    fill_buffers(t, in);
    uint8_t layout = 0;
    FUZZ_CHECK(hurray_descriptor_layout(t->d, &layout) == HURRAY_OK);
    if (!(perturb & 0x10)) sanitize(t, in, layout, dims, rank, nnz, it64, br, bc, pages);
    return 1;
}

static int from_bytes(Tensor *t, In *in) {
    size_t len = (size_t)take_u64(in, 2);
    if (len > in->n - in->pos) len = in->n - in->pos;
    HurrayStatus s = hurray_descriptor_decode(in->p + in->pos, len, &t->d);
    FUZZ_NO_PANIC(s);
    in->pos += len;
    if (s != HURRAY_OK) return 0;
    return fill_buffers(t, in);
}

/* hurray_dequantize_to with exact (slack 0) or longer buffers. */
static HurrayStatus deq_to(const Tensor *t, size_t slack, uint8_t type, uint8_t *out, size_t out_len) {
    const uint8_t *ptrs[64];
    size_t lens[64];
    for (size_t i = 0; i < t->count; i++) {
        ptrs[i] = t->buf[i];
        lens[i] = t->len[i] + slack;
    }
    HurrayStatus s = hurray_dequantize_to(t->d, ptrs, lens, t->count, type, out, out_len);
    FUZZ_NO_PANIC(s);
    return s;
}

static int same_f32(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i])) continue;
        if (memcmp(&a[i], &b[i], 4) != 0) return 0;
    }
    return 1;
}

/* The dense form of a sparse or paged tensor through `f`, checked against spare output bytes.
 * Returns its status; `*out` holds the bytes on success. */
static HurrayStatus expand(const Tensor *t, uint64_t dense, uint8_t **out,
                           HurrayStatus (*f)(const HurrayDescriptor *, const HurrayIoSlice *, size_t, void *, uint64_t)) {
    HurrayIoSlice io[64];
    for (size_t i = 0; i < t->count; i++) io[i] = (HurrayIoSlice){.ptr = t->buf[i], .len = t->len[i]};
    uint8_t *a = malloc(dense + 8), *b = malloc(dense + 8);
    FUZZ_CHECK(a && b);
    memset(b, 0xA5, dense + 8);
    HurrayStatus s = f(t->d, io, t->count, a, dense);
    FUZZ_NO_PANIC(s);
    HurrayStatus s2 = f(t->d, io, t->count, b, dense + 8);
    FUZZ_NO_PANIC(s2);
    FUZZ_CHECK(s == s2);
    if (s == HURRAY_OK) {
        FUZZ_CHECK(memcmp(a, b, dense) == 0);
        for (size_t k = 0; k < 8; k++) FUZZ_CHECK(b[dense + k] == 0xA5); /* nothing past the dense bytes */
    }
    if (dense) FUZZ_CHECK(f(t->d, io, t->count, a, dense - 1) == HURRAY_ERR_BUFFER_TOO_SMALL);
    free(b);
    *out = a;
    return s;
}

static int is_minifloat(uint8_t t) {
    return t == HURRAY_DTYPE_FLOAT8_E4M3FN || t == HURRAY_DTYPE_FLOAT8_E5M2 || t == HURRAY_DTYPE_FLOAT8_E4M3FNUZ ||
           t == HURRAY_DTYPE_FLOAT8_E5M2FNUZ || t == HURRAY_DTYPE_FLOAT8_E3M4 || t == HURRAY_DTYPE_FLOAT6_E2M3FN ||
           t == HURRAY_DTYPE_FLOAT6_E3M2FN || t == HURRAY_DTYPE_FLOAT4_E2M1FN;
}

/* Quantizes `in` (n floats) into fresh buffers of `t`'s table and dequantizes the result. */
static HurrayStatus quantize_round(const Tensor *t, const float *in, size_t n, float *out) {
    uint8_t *bufs[64], *slack[64];
    size_t lens[64], slens[64];
    for (size_t i = 0; i < t->count; i++) {
        HurrayBufferSpec s;
        FUZZ_CHECK(hurray_descriptor_buffer_spec(t->d, i, &s) == HURRAY_OK);
        /* A declared size beyond what the harness gives gets the capped buffer (refused). */
        lens[i] = s.byte_size > t->len[i] ? t->len[i] : (size_t)s.byte_size;
        slens[i] = lens[i] + SLACK;
        bufs[i] = malloc(lens[i] + 1);
        slack[i] = malloc(slens[i]);
        FUZZ_CHECK(bufs[i] && slack[i]);
    }
    HurrayStatus s = hurray_quantize(t->d, in, n, bufs, lens, t->count);
    FUZZ_NO_PANIC(s);
    HurrayStatus s2 = hurray_quantize(t->d, in, n, slack, slens, t->count);
    FUZZ_CHECK(s == s2);
    if (s == HURRAY_OK) {
        for (size_t i = 0; i < t->count; i++) FUZZ_CHECK(memcmp(bufs[i], slack[i], lens[i]) == 0);
        const uint8_t *c[64];
        for (size_t i = 0; i < t->count; i++) c[i] = bufs[i];
        HurrayStatus d = hurray_dequantize(t->d, c, lens, t->count, out, n);
        FUZZ_CHECK(d == HURRAY_OK);
    }
    for (size_t i = 0; i < t->count; i++) {
        free(bufs[i]);
        free(slack[i]);
    }
    return s;
}

static void check(Tensor *t, In *in) {
    HurrayDescriptorFields f;
    FUZZ_CHECK(hurray_descriptor_fields(t->d, &f) == HURRAY_OK);
    uint64_t n = f.element_count;
    if (n > MAX_ELEMS) {
        /* Still must not panic or hang: a wrong output length is refused up front. */
        float one;
        uint8_t b[8];
        const uint8_t *p[64];
        for (size_t i = 0; i < t->count; i++) p[i] = t->buf[i];
        FUZZ_NO_PANIC(hurray_dequantize(t->d, p, t->len, t->count, &one, 1));
        FUZZ_NO_PANIC(deq_to(t, 0, HURRAY_DTYPE_FLOAT32, b, sizeof b));
        return;
    }
    float *f32 = malloc(n * 4 + 4), *f32b = malloc(n * 4 + 4);
    uint8_t *wide = malloc(n * 8 + SLACK), *wide2 = malloc(n * 8 + SLACK);
    FUZZ_CHECK(f32 && f32b && wide && wide2);
    const uint8_t *ptrs[64];
    for (size_t i = 0; i < t->count; i++) ptrs[i] = t->buf[i];
    HurrayStatus s = hurray_dequantize(t->d, ptrs, t->len, t->count, f32, (size_t)n);
    FUZZ_NO_PANIC(s);
    HurrayStatus s32 = deq_to(t, 0, HURRAY_DTYPE_FLOAT32, wide, (size_t)n * 4);
    FUZZ_CHECK(s32 == s);
    if (s == HURRAY_OK) FUZZ_CHECK(memcmp(wide, f32, n * 4) == 0);
    /* Spare bytes in every buffer change nothing. */
    HurrayStatus ss = deq_to(t, SLACK, HURRAY_DTYPE_FLOAT32, wide2, (size_t)n * 4);
    FUZZ_CHECK(ss == s);
    if (s == HURRAY_OK) FUZZ_CHECK(memcmp(wide, wide2, n * 4) == 0);
    /* Other targets: the same status; float64 rounds to the float32 result. */
    static const uint8_t targets[] = {HURRAY_DTYPE_FLOAT64, HURRAY_DTYPE_FLOAT16, HURRAY_DTYPE_BFLOAT16,
                                      HURRAY_DTYPE_INT8, HURRAY_DTYPE_UINT32, HURRAY_DTYPE_INT64};
    uint8_t tsel = take(in);
    for (size_t k = 0; k < 2; k++) {
        uint8_t ty = k == 0 ? HURRAY_DTYPE_FLOAT64 : targets[tsel % sizeof targets];
        HurrayStatus st = deq_to(t, 0, ty, wide, (size_t)n * 8);
        FUZZ_CHECK(st == s);
        if (st == HURRAY_OK && ty == HURRAY_DTYPE_FLOAT64 && f.element_type != HURRAY_DTYPE_INT64 &&
            f.element_type != HURRAY_DTYPE_UINT64) {
            for (uint64_t i = 0; i < n; i++) {
                double v;
                memcpy(&v, wide + 8 * i, 8);
                f32b[i] = (float)v;
            }
            FUZZ_CHECK(same_f32(f32, f32b, (size_t)n));
        }
    }
    /* Sparse and paged: dequantize == expand, then dequantize the plain tensor. */
    HurraySparse sp;
    HurrayPaging pg;
    FUZZ_CHECK(hurray_descriptor_sparse(t->d, &sp) == HURRAY_OK);
    FUZZ_CHECK(hurray_descriptor_paging(t->d, &pg) == HURRAY_OK);
    if (sp.index_type || pg.index_type) {
        unsigned w = esize(f.element_type);
        uint8_t *dense = NULL;
        HurrayStatus se = expand(t, n * w, &dense, sp.index_type ? hurray_sparse_densify : hurray_paged_gather);
        if (se == HURRAY_OK) {
            FUZZ_CHECK(s == HURRAY_OK || s == HURRAY_ERR_UNSUPPORTED);
            if (s == HURRAY_OK) {
                HurrayDescriptor *plain = NULL;
                FUZZ_CHECK(hurray_quantize_plan(f.element_type, f.dims, f.rank, NULL, &plain) == HURRAY_OK);
                const uint8_t *p = dense;
                size_t l = (size_t)(n * w);
                FUZZ_CHECK(hurray_dequantize(plain, &p, &l, 1, f32b, (size_t)n) == HURRAY_OK);
                FUZZ_CHECK(same_f32(f32, f32b, (size_t)n));
                FUZZ_CHECK(hurray_descriptor_destroy(plain) == HURRAY_OK);
            }
        } else {
            FUZZ_CHECK(s == se || s == HURRAY_ERR_UNSUPPORTED);
        }
        free(dense);
    }
    /* Quantize: finite values into a dense descriptor. */
    if (!sp.index_type && !pg.index_type && f.layout != HURRAY_LAYOUT_STRIDED) {
        for (uint64_t i = 0; i < n; i++) f32b[i] = (float)(int8_t)take(in) / (float)(1 + take(in) % 16);
        float *back = malloc(n * 4 + 4);
        FUZZ_CHECK(back);
        HurrayStatus q = quantize_round(t, f32b, (size_t)n, back);
        HurrayBlockQuant bq;
        FUZZ_CHECK(hurray_descriptor_block_quant(t->d, &bq) == HURRAY_OK);
        HurrayQuantization pq;
        FUZZ_CHECK(hurray_descriptor_quantization(t->d, &pq) == HURRAY_OK);
        int plainish = pq.kind == HURRAY_QUANT_NONE || pq.kind == HURRAY_QUANT_CAST;
        int floaty = f.element_type == HURRAY_DTYPE_FLOAT32 || f.element_type == HURRAY_DTYPE_FLOAT16 ||
                     f.element_type == HURRAY_DTYPE_BFLOAT16 || is_minifloat(f.element_type);
        if (q == HURRAY_ERR_BUFFER_TOO_SMALL) {
            int capped = 0;
            for (size_t i = 0; i < t->count; i++) {
                HurrayBufferSpec bs;
                FUZZ_CHECK(hurray_descriptor_buffer_spec(t->d, i, &bs) == HURRAY_OK);
                capped |= bs.byte_size > t->len[i];
            }
            FUZZ_CHECK(capped);
        } else if (bq.kind || (plainish && floaty) ||
            (pq.kind == HURRAY_QUANT_PER_CHANNEL_AFFINE && f.element_type == HURRAY_DTYPE_INT8)) {
            FUZZ_CHECK(q == HURRAY_OK);
            for (uint64_t i = 0; i < n; i++) FUZZ_CHECK(isfinite(back[i]));
        } else {
            FUZZ_CHECK(q == HURRAY_ERR_UNSUPPORTED || q == HURRAY_ERR_INVALID_ARGUMENT);
        }
        if (q == HURRAY_OK && plainish && f.element_type == HURRAY_DTYPE_FLOAT32) {
            FUZZ_CHECK(memcmp(back, f32b, n * 4) == 0);
        }
        /* Values a plain float type holds exactly survive quantize then dequantize. */
        if (s == HURRAY_OK && q == HURRAY_OK && plainish && floaty && f.element_type != HURRAY_DTYPE_FLOAT32) {
            HurrayStatus q2 = quantize_round(t, f32, (size_t)n, back);
            FUZZ_CHECK(q2 == HURRAY_OK);
            /* Infinities saturate and NaN has no code in some formats (docs/spec §Quantization). */
            for (uint64_t i = 0; i < n; i++) {
                if (isfinite(f32[i])) FUZZ_CHECK(memcmp(&f32[i], &back[i], 4) == 0);
            }
        }
        free(back);
    }
    free(f32);
    free(f32b);
    free(wide);
    free(wide2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    In in = {.p = data + 1, .n = size - 1};
    Tensor t = {0};
    int ok = (data[0] & 1) ? from_bytes(&t, &in) : build(&t, &in);
    if (ok) check(&t, &in);
    tensor_free(&t);
    return 0;
}
