/* The transport-free decoder (docs/spec/c-abi.md §Decoders and encoders) in both views.
 * Input: byte 0 = plan length L (mod 64), L plan bytes (fuzz_common.h: per-call transfer sizes),
 * then the stream bytes. Oracles:
 *  - flat view (hurray_decoder_next) fed in plan-sized pieces reads exactly the tensors, and ends
 *    with exactly the status, of the callback reader given the whole input in one call
 *    (docs/spec/stream.md §Decoding and encoding without a transport);
 *  - assembled view (hurray_decoder_next_item) fed the same pieces never panics, returns each
 *    item once, and its final status is sticky (asking again gives it again);
 *  - every error is sticky in the flat view too, and the decoder asks for at least 1 byte. */
#include "fuzz_common.h"

typedef struct {
    Digest digest;
    HurrayStatus end;
    size_t tensors;
} Run;

static HurrayReaderOptions limits(void) {
    HurrayReaderOptions o;
    FUZZ_CHECK(hurray_reader_options_init(&o) == HURRAY_OK);
    o.max_tensor_bytes = 1 << 20; /* keep runs fast; the limit itself is part of the contract */
    o.max_descriptor_bytes = 64 << 10;
    return o;
}

/* The callback reader over the whole input: the reference. */
static Run reference(const uint8_t *bytes, size_t len) {
    Source src = {.bytes = bytes, .len = len, .chunk_scale = 37};
    HurrayTransport t = {.ctx = &src, .read = source_read};
    HurrayReaderOptions o = limits();
    HurrayReader *r = NULL;
    FUZZ_CHECK(hurray_reader_new(&t, &o, &r) == HURRAY_OK);
    Run run = {.tensors = 0};
    digest_init(&run.digest);
    for (;;) {
        HurrayTensor *tensor = NULL;
        HurrayStatus s = hurray_reader_next_tensor(r, &tensor);
        FUZZ_NO_PANIC(s);
        if (s != HURRAY_OK) {
            run.end = s;
            break;
        }
        digest_tensor(&run.digest, tensor);
        run.tensors++;
        FUZZ_CHECK(hurray_tensor_destroy(&tensor) == HURRAY_OK);
    }
    FUZZ_CHECK(hurray_reader_destroy(&r) == HURRAY_OK);
    return run;
}

/* Piece k of the input: at least 1 byte, as the plan says (whole input when there is no plan). */
static size_t piece(const uint8_t *plan, size_t plan_len, size_t k, size_t room, size_t left) {
    size_t n = plan_len ? 1 + (size_t)plan[k % plan_len] * 37 : left;
    if (n > room) n = room;
    if (n > left) n = left;
    return n;
}

static Run decode(const uint8_t *bytes, size_t len, const uint8_t *plan, size_t plan_len, int items) {
    HurrayReaderOptions o = limits();
    HurrayDecoder *d = NULL;
    FUZZ_CHECK(hurray_decoder_new(&o, 1 << 20, &d) == HURRAY_OK);
    Run run = {.tensors = 0};
    digest_init(&run.digest);
    size_t pos = 0, filled = 0, k = 0;
    uint32_t flags = 0;
    for (;;) {
        HurrayDecodeResult r;
        HurrayComposite *c = NULL;
        HurrayStatus s = items ? hurray_decoder_next_item(d, filled, flags, &r, &c)
                               : hurray_decoder_next(d, filled, flags, &r);
        FUZZ_NO_PANIC(s);
        filled = 0;
        if (s == HURRAY_NEED_INPUT) {
            FUZZ_CHECK(r.input != NULL && r.input_len >= 1 && r.tensor == NULL);
            FUZZ_CHECK(flags == 0); /* after the end of input nothing more is asked */
            size_t n = piece(plan, plan_len, k++, r.input_len, len - pos);
            if (n == 0) {
                flags = HURRAY_DECODE_END_OF_INPUT;
            } else {
                memcpy(r.input, bytes + pos, n);
                pos += n;
                filled = n;
            }
            continue;
        }
        if (s != HURRAY_OK) {
            run.end = s;
            HurrayDecodeResult again;
            HurrayComposite *c2 = NULL;
            HurrayStatus s2 = items ? hurray_decoder_next_item(d, 0, 0, &again, &c2) : hurray_decoder_next(d, 0, 0, &again);
            FUZZ_CHECK(s2 == s && again.tensor == NULL && c2 == NULL); /* sticky */
            break;
        }
        if (c != NULL) {
            FUZZ_CHECK(items && r.tensor == NULL);
            run.tensors++;
            FUZZ_CHECK(hurray_composite_destroy(&c) == HURRAY_OK);
            continue;
        }
        FUZZ_CHECK(r.tensor != NULL);
        const HurrayDecodedBuffer *b = r.buffers;
        for (size_t i = 0; i < r.fields.buffer_count; i++) {
            FUZZ_CHECK(((uintptr_t)b[i].data % b[i].spec.alignment) == 0);
        }
        if (!items) digest_tensor(&run.digest, r.tensor);
        run.tensors++;
        FUZZ_CHECK(hurray_tensor_destroy(&r.tensor) == HURRAY_OK);
    }
    FUZZ_CHECK(hurray_decoder_destroy(&d) == HURRAY_OK && d == NULL);
    return run;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t plan_len = data[0] % 64;
    if (size < 1 + plan_len) return 0;
    const uint8_t *plan = data + 1;
    const uint8_t *stream = data + 1 + plan_len;
    size_t len = size - 1 - plan_len;
    Run ref = reference(stream, len);
    Run flat = decode(stream, len, plan, plan_len, 0);
    FUZZ_CHECK(flat.end == ref.end);
    FUZZ_CHECK(flat.tensors == ref.tensors);
    FUZZ_CHECK(flat.digest.h == ref.digest.h);
    Run assembled = decode(stream, len, plan, plan_len, 1);
    /* Every item is at most as many tensors as the flat view saw. */
    FUZZ_CHECK(assembled.tensors <= ref.tensors);
    return 0;
}
