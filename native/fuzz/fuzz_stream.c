/* Stream reader (docs/spec/stream.md) under adversarial chunking and injected transport
 * failures. Input: byte 0 = plan length L (mod 64), L plan bytes (fuzz_common.h: per-call transfer
 * sizes and HURRAY_ERR_TRANSPORT failures), then the stream bytes. Oracle: a run that retries every
 * TRANSPORT failure and takes whatever short counts the plan gives reads exactly the same tensors
 * (descriptor encodings and buffer bytes, digested) and ends with exactly the same status as a run
 * that gets the whole input in one call and never fails (docs/spec/stream.md §Transport rules,
 * rules 1 and 3: short counts are normal; a failed call moved nothing and the reader resumes). Each
 * reader buffer is PRODUCER_SYNCED and aligned as declared. */
#include "fuzz_common.h"

typedef struct {
    Digest digest;
    HurrayStatus end;
    size_t tensors;
} Run;

static Run read_all(const uint8_t *bytes, size_t len, const uint8_t *plan, size_t plan_len, int faults) {
    Source src = {.bytes = bytes, .len = len, .plan = plan, .plan_len = plan_len, .chunk_scale = 37, .faults = faults};
    HurrayTransport t = {.ctx = &src, .read = source_read};
    HurrayReaderOptions o;
    FUZZ_CHECK(hurray_reader_options_init(&o) == HURRAY_OK);
    o.max_tensor_bytes = 1 << 20; /* keep runs fast; the limit itself is part of the contract */
    o.max_descriptor_bytes = 64 << 10;
    HurrayReader *r = NULL;
    FUZZ_CHECK(hurray_reader_new(&t, &o, &r) == HURRAY_OK);
    Run run;
    digest_init(&run.digest);
    run.tensors = 0;
    size_t retries = 0;
    for (;;) {
        HurrayTensor *tensor = (HurrayTensor *)1;
        HurrayStatus s = hurray_reader_next_tensor(r, &tensor);
        FUZZ_NO_PANIC(s);
        if (s == HURRAY_ERR_TRANSPORT && faults) {
            FUZZ_CHECK(tensor == NULL);
            FUZZ_CHECK(++retries <= plan_len); /* each failure is one plan byte */
            continue;
        }
        if (s != HURRAY_OK) {
            FUZZ_CHECK(tensor == NULL);
            run.end = s;
            /* Sticky: asking again gives the same answer, and reads nothing more. */
            size_t pos = src.pos;
            HurrayTensor *again = NULL;
            FUZZ_CHECK(hurray_reader_next_tensor(r, &again) == s && again == NULL);
            FUZZ_CHECK(src.pos == pos);
            break;
        }
        digest_tensor(&run.digest, tensor);
        run.tensors++;
        FUZZ_CHECK(hurray_tensor_destroy(&tensor) == HURRAY_OK && tensor == NULL);
    }
    FUZZ_CHECK(retries == src.failures || !faults);
    FUZZ_CHECK(hurray_reader_destroy(&r) == HURRAY_OK && r == NULL);
    return run;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t plan_len = data[0] % 64;
    if (size < 1 + plan_len) return 0;
    const uint8_t *plan = data + 1;
    const uint8_t *stream = data + 1 + plan_len;
    size_t len = size - 1 - plan_len;
    Run whole = read_all(stream, len, NULL, 0, 0);
    if (plan_len == 0) return 0; /* the chunked run would repeat the whole one call for call */
    Run chunked = read_all(stream, len, plan, plan_len, 1);
    FUZZ_CHECK(whole.end == chunked.end);
    FUZZ_CHECK(whole.tensors == chunked.tensors);
    FUZZ_CHECK(whole.digest.h == chunked.digest.h);
    return 0;
}
