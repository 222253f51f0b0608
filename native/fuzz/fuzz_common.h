/* Shared by the libFuzzer harnesses in native/fuzz (see README.md there): a crash-on-violation
 * check, an in-memory byte source whose per-call transfer sizes and injected failures come from
 * the fuzz input, and an FNV-1a digest used to compare two runs of the same input. */
#ifndef HURRAY_FUZZ_COMMON_H
#define HURRAY_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../hurray.h"

#define FUZZ_CHECK(cond)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: oracle violated: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* A status may be anything negative or OK/END; INTERNAL_PANIC is always a bug. */
#define FUZZ_NO_PANIC(s) FUZZ_CHECK((s) != HURRAY_ERR_INTERNAL_PANIC)

typedef struct {
    uint64_t h;
} Digest;

/* Harness bookkeeping that is not the library under test is kept out of the coverage
 * instrumentation: its loops would only add per-byte callbacks and meaningless features. ASan
 * still checks every load (each byte the library hands back is read). */
#define FUZZ_UNTRACED __attribute__((no_sanitize("coverage")))

static inline void digest_init(Digest *d) { d->h = 1469598103934665603ULL; }
/* FNV-1a over 8-byte words (then the tail bytes): any differing byte changes the digest with
 * the same odds as the bytewise form, at an eighth of the multiplications. */
FUZZ_UNTRACED static inline void digest_bytes(Digest *d, const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = d->h;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h ^= w;
        h *= 1099511628211ULL;
        h ^= h >> 29;
    }
    for (; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    d->h = h;
}
static inline void digest_u64(Digest *d, uint64_t v) { digest_bytes(d, &v, sizeof v); }

/* An in-memory source. `plan` (may be empty) drives each call: byte k of the plan decides call
 * k's transfer size (1 + byte*chunk_scale) and, when the byte's low 3 bits are 0 and `faults` is
 * set, a HURRAY_ERR_TRANSPORT failure having moved nothing (docs/spec/stream.md §Transport rules,
 * rule 3). Past the plan, transfers are unlimited and nothing fails. */
typedef struct {
    const uint8_t *bytes;
    size_t len, pos;
    const uint8_t *plan;
    size_t plan_len, calls;
    size_t chunk_scale;
    int faults;
    size_t failures;
} Source;

static HurrayStatus source_read(void *ctx, uint8_t *dst, size_t len, size_t *out) {
    Source *s = ctx;
    size_t k = s->calls++;
    size_t n = len;
    if (k < s->plan_len) {
        uint8_t p = s->plan[k];
        if (s->faults && (p & 7) == 0) {
            s->failures++;
            *out = 0;
            return HURRAY_ERR_TRANSPORT;
        }
        size_t lim = 1 + (size_t)p * s->chunk_scale;
        if (n > lim) n = lim;
    }
    if (n > s->len - s->pos) n = s->len - s->pos;
    memcpy(dst, s->bytes + s->pos, n);
    s->pos += n;
    *out = n;
    return HURRAY_OK;
}

static HurrayStatus source_read_at(void *ctx, uint64_t offset, uint8_t *dst, size_t len, size_t *out) {
    Source *s = ctx;
    size_t k = s->calls++;
    size_t n = len;
    if (k < s->plan_len) {
        uint8_t p = s->plan[k];
        if (s->faults && (p & 7) == 0) {
            s->failures++;
            *out = 0;
            return HURRAY_ERR_TRANSPORT;
        }
        size_t lim = 1 + (size_t)p * s->chunk_scale;
        if (n > lim) n = lim;
    }
    if (offset >= s->len) {
        *out = 0;
        return HURRAY_OK;
    }
    if (n > s->len - offset) n = (size_t)(s->len - offset);
    memcpy(dst, s->bytes + offset, n);
    *out = n;
    return HURRAY_OK;
}

static HurrayStatus source_size(void *ctx, uint64_t *out) {
    *out = ((Source *)ctx)->len;
    return HURRAY_OK;
}

/* A growing in-memory sink; `plan` as for Source (a failing call moves nothing). */
typedef struct {
    uint8_t *bytes;
    size_t len, cap;
    const uint8_t *plan;
    size_t plan_len, calls;
    int faults;
} Sink;

static HurrayStatus sink_write(void *ctx, const uint8_t *src, size_t len, size_t *out) {
    Sink *s = ctx;
    size_t k = s->calls++;
    size_t n = len;
    if (k < s->plan_len) {
        uint8_t p = s->plan[k];
        if (s->faults && (p & 7) == 0) {
            *out = 0;
            return HURRAY_ERR_TRANSPORT;
        }
        size_t lim = 1 + (size_t)p * 97;
        if (n > lim) n = lim;
    }
    if (s->len + n > s->cap) {
        size_t c = s->cap ? s->cap : 256;
        while (c < s->len + n) c *= 2;
        s->bytes = realloc(s->bytes, c);
        FUZZ_CHECK(s->bytes != NULL);
        s->cap = c;
    }
    memcpy(s->bytes + s->len, src, n);
    s->len += n;
    *out = n;
    return HURRAY_OK;
}

/* Digest of a tensor: its encoded descriptor and every buffer's bytes. */
static inline void digest_tensor(Digest *d, HurrayTensor *t) {
    HurrayDescriptor *desc = NULL;
    HurrayBufferList *list = NULL;
    FUZZ_CHECK(hurray_tensor_descriptor(t, &desc) == HURRAY_OK);
    FUZZ_CHECK(hurray_tensor_buffers(t, &list) == HURRAY_OK);
    const uint8_t *enc = NULL;
    size_t enc_len = 0;
    FUZZ_CHECK(hurray_descriptor_encoded(desc, &enc, &enc_len) == HURRAY_OK);
    digest_u64(d, enc_len);
    digest_bytes(d, enc, enc_len);
    size_t n = 0, count = 0;
    FUZZ_CHECK(hurray_buffer_list_len(list, &n) == HURRAY_OK);
    FUZZ_CHECK(hurray_descriptor_buffer_count(desc, &count) == HURRAY_OK);
    FUZZ_CHECK(n == count);
    for (size_t i = 0; i < n; i++) {
        HurrayBuffer *b = NULL;
        void *data = NULL;
        uint64_t size = 0;
        uint32_t align = 0;
        uint8_t sync = 0xEE;
        HurrayBufferSpec spec;
        FUZZ_CHECK(hurray_buffer_list_get(list, i, &b) == HURRAY_OK);
        FUZZ_CHECK(hurray_buffer_data_ptr(b, &data) == HURRAY_OK);
        FUZZ_CHECK(hurray_buffer_byte_size(b, &size) == HURRAY_OK);
        FUZZ_CHECK(hurray_buffer_alignment(b, &align) == HURRAY_OK);
        FUZZ_CHECK(hurray_buffer_sync_mode(b, &sync) == HURRAY_OK);
        FUZZ_CHECK(hurray_descriptor_buffer_spec(desc, i, &spec) == HURRAY_OK);
        FUZZ_CHECK(spec.byte_size == size && spec.alignment == align);
        FUZZ_CHECK(sync == HURRAY_SYNC_PRODUCER_SYNCED);
        FUZZ_CHECK(align >= 64 && ((uintptr_t)data % align) == 0);
        digest_u64(d, size);
        if (size) digest_bytes(d, data, (size_t)size);
    }
}

#endif
