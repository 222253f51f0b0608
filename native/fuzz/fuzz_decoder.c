/* The transport-free decoder (docs/spec/c-abi.md §Decoders and encoders) in both views.
 * Input: byte 0 = plan length L (mod 64), L plan bytes (fuzz_common.h: per-call transfer sizes),
 * then the stream bytes. Oracles:
 *  - flat view (hurray_decoder_next) fed in plan-sized pieces reads exactly the tensors, and ends
 *    with exactly the status, of the callback reader given the whole input in one call
 *    (docs/spec/stream.md §Decoding and encoding without a transport);
 *  - assembled view (hurray_decoder_next_item) fed the same pieces never panics, returns each
 *    item once, and its final status is sticky (asking again gives it again);
 *  - the assembled view does not depend on the pieces (same items, digest and status as one
 *    whole-input run) and equals the callback reader's assembled view (hurray_reader_next_item);
 *  - flattened in preorder (head, then members), its items are the flat view's tensors: when
 *    the flat view reaches the end of the stream the assembled view does too with the same
 *    digest, or refuses a malformed composite (CORRUPT, TRUNCATED, LIMIT_EXCEEDED); when the
 *    flat view fails, the assembled view fails the same way or on a composite rule first;
 *  - every error is sticky in the flat view too, and the decoder asks for at least 1 byte. */
#include "fuzz_common.h"

typedef struct {
    Digest digest;
    HurrayStatus end;
    size_t tensors;
} Run;

/* Digest of an assembled composite in preorder, as the flat view digests its descriptors:
 * the head (no buffers), then each member. Counts every descriptor in `*count`. */
static void digest_composite(Digest *d, const HurrayComposite *c, size_t *count) {
    HurrayDescriptor *head = NULL;
    FUZZ_CHECK(hurray_composite_head(c, &head) == HURRAY_OK);
    const uint8_t *enc = NULL;
    size_t enc_len = 0;
    FUZZ_CHECK(hurray_descriptor_encoded(head, &enc, &enc_len) == HURRAY_OK);
    digest_u64(d, enc_len);
    digest_bytes(d, enc, enc_len);
    (*count)++;
    size_t n = 0;
    FUZZ_CHECK(hurray_composite_member_count(c, &n) == HURRAY_OK && n >= 1);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *role = NULL;
        size_t role_len = 0;
        HurrayTensor *t = NULL;
        HurrayComposite *sub = NULL;
        FUZZ_CHECK(hurray_composite_member(c, i, &role, &role_len, &t, &sub) == HURRAY_OK);
        FUZZ_CHECK((t == NULL) != (sub == NULL));
        if (t) {
            digest_tensor(d, t);
            (*count)++;
        } else {
            digest_composite(d, sub, count);
        }
    }
    size_t role_len = 0;
    const uint8_t *role = NULL;
    HurrayTensor *t = NULL;
    HurrayComposite *sub = NULL;
    FUZZ_CHECK(hurray_composite_member(c, n, &role, &role_len, &t, &sub) == HURRAY_ERR_INVALID_ARGUMENT);
}

static int composite_error(HurrayStatus s) {
    return s == HURRAY_ERR_CORRUPT || s == HURRAY_ERR_TRUNCATED || s == HURRAY_ERR_LIMIT_EXCEEDED;
}

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

/* The callback reader's assembled view over the whole input. */
static Run reference_items(const uint8_t *bytes, size_t len) {
    Source src = {.bytes = bytes, .len = len, .chunk_scale = 37};
    HurrayTransport t = {.ctx = &src, .read = source_read};
    HurrayReaderOptions o = limits();
    HurrayReader *r = NULL;
    FUZZ_CHECK(hurray_reader_new(&t, &o, &r) == HURRAY_OK);
    Run run = {.tensors = 0};
    digest_init(&run.digest);
    for (;;) {
        HurrayTensor *tensor = NULL;
        HurrayComposite *c = NULL;
        HurrayStatus s = hurray_reader_next_item(r, &tensor, &c);
        FUZZ_NO_PANIC(s);
        if (s != HURRAY_OK) {
            FUZZ_CHECK(tensor == NULL && c == NULL);
            run.end = s;
            break;
        }
        FUZZ_CHECK((tensor == NULL) != (c == NULL));
        if (tensor) {
            digest_tensor(&run.digest, tensor);
            run.tensors++;
            FUZZ_CHECK(hurray_tensor_destroy(&tensor) == HURRAY_OK);
        } else {
            digest_composite(&run.digest, c, &run.tensors);
            FUZZ_CHECK(hurray_composite_destroy(&c) == HURRAY_OK);
        }
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
            digest_composite(&run.digest, c, &run.tensors);
            FUZZ_CHECK(hurray_composite_destroy(&c) == HURRAY_OK);
            continue;
        }
        FUZZ_CHECK(r.tensor != NULL);
        const HurrayDecodedBuffer *b = r.buffers;
        for (size_t i = 0; i < r.fields.buffer_count; i++) {
            FUZZ_CHECK(((uintptr_t)b[i].data % b[i].spec.alignment) == 0);
        }
        digest_tensor(&run.digest, r.tensor);
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
    /* A plan whose first piece already covers the input feeds exactly what a whole-input run
     * feeds (the read-ahead is larger than any input libFuzzer makes here), so that run would
     * repeat the one above call for call: only a real split is compared. */
    if (piece(plan, plan_len, 0, (size_t)-1, len) < len) {
        Run whole = decode(stream, len, NULL, 0, 1);
        FUZZ_CHECK(whole.end == assembled.end && whole.tensors == assembled.tensors &&
                   whole.digest.h == assembled.digest.h);
    }
    Run ref_items = reference_items(stream, len);
    FUZZ_CHECK(ref_items.end == assembled.end && ref_items.tensors == assembled.tensors &&
               ref_items.digest.h == assembled.digest.h);
    if (ref.end == HURRAY_END_OF_STREAM) {
        FUZZ_CHECK(assembled.end == HURRAY_END_OF_STREAM || composite_error(assembled.end));
        if (assembled.end == HURRAY_END_OF_STREAM) {
            FUZZ_CHECK(assembled.tensors == ref.tensors && assembled.digest.h == ref.digest.h);
        }
    } else {
        FUZZ_CHECK(assembled.end == ref.end || composite_error(assembled.end));
    }
    return 0;
}
