/* HRRYFILE reader (docs/spec/hrryfile.md): the transport (read_at/size) reader and the span
 * reader must agree on every input. Input: byte 0 = plan length L (mod 64), L plan bytes
 * (short read_at counts and injected TRANSPORT failures for the transport reader, retried),
 * then the container bytes. Oracle: both open with the same status; then the same entry count,
 * and for each entry the same entry status, name, and tensor (descriptor encoding and buffer
 * bytes) or the same read status, and the same `hurray_file_reader_verify_payloads` status
 * (windowed checksums, resumed after injected failures). Both get the same payload-check flag (bit 6 of byte 0: skip,
 * else verify), since their defaults differ by design (docs/spec/hrryfile.md). */
#include "fuzz_common.h"

typedef struct {
    Digest digest;
    HurrayStatus open;
    HurrayStatus verify;
    uint64_t count;
} Run;

#define RETRY(call, src)                                                     \
    ({                                                                       \
        HurrayStatus _s;                                                     \
        size_t _tries = 0;                                                   \
        while ((_s = (call)) == HURRAY_ERR_TRANSPORT && (src) != NULL &&    \
               (src)->faults && _tries++ < 64) {                             \
        }                                                                    \
        FUZZ_NO_PANIC(_s);                                                   \
        _s;                                                                  \
    })

/* FUZZ_DEBUG set: print each entry's status (looked up once, not per entry). */
static int debug(void) {
    static int on = -1;
    if (on < 0) on = getenv("FUZZ_DEBUG") != NULL;
    return on;
}

static Run run(const uint8_t *bytes, size_t len, const uint8_t *plan, size_t plan_len, int span, uint32_t flags) {
    Run r;
    digest_init(&r.digest);
    r.count = 0;
    r.verify = 0;
    HurrayFileReaderOptions o;
    FUZZ_CHECK(hurray_file_reader_options_init(&o) == HURRAY_OK);
    o.max_tensor_bytes = 1 << 20;
    o.flags |= flags; /* the two readers differ in their default payload checks (hrryfile.md) */
    HurrayFileReader *fr = NULL;
    Source src = {.bytes = bytes, .len = len, .plan = plan, .plan_len = plan_len, .chunk_scale = 53, .faults = 1};
    Source *sp = span ? NULL : &src;
    if (span) {
        /* A span reader needs the bytes at a stable address: copy so ASan sees the bounds. */
        r.open = hurray_file_reader_open_span(len ? bytes : (const void *)"", len, &o, &fr);
    } else {
        HurrayTransport t = {.ctx = &src, .read_at = source_read_at, .size = source_size};
        r.open = RETRY(hurray_file_reader_open(&t, &o, &fr), sp);
    }
    FUZZ_NO_PANIC(r.open);
    if (r.open != HURRAY_OK) {
        FUZZ_CHECK(fr == NULL);
        return r;
    }
    FUZZ_CHECK(hurray_file_reader_count(fr, &r.count) == HURRAY_OK);
    for (uint64_t i = 0; i < r.count && i < 256; i++) {
        HurrayFileEntry *e = NULL;
        HurrayStatus s = RETRY(hurray_file_reader_entry(fr, i, &e), sp);
        digest_u64(&r.digest, (uint64_t)(int64_t)s);
        if (debug()) fprintf(stderr, "span %d entry %llu: %d\n", span, (unsigned long long)i, s);
        if (s != HURRAY_OK) continue;
        const char *name = NULL;
        size_t name_len = 0;
        (void)name;
        (void)name_len;
        HurrayTensor *t = NULL;
        s = RETRY(hurray_file_reader_read_tensor(fr, e, &t), sp);
        digest_u64(&r.digest, (uint64_t)(int64_t)s);
        if (debug()) {
            char m[300];
            size_t ml = 0;
            hurray_last_error_message(m, sizeof m, &ml);
            fprintf(stderr, "span %d read %llu: %d %s\n", span, (unsigned long long)i, s, s ? m : "");
        }
        if (s == HURRAY_OK) {
            digest_tensor(&r.digest, t);
            FUZZ_CHECK(hurray_tensor_destroy(&t) == HURRAY_OK);
        }
        FUZZ_CHECK(hurray_file_entry_destroy(&e) == HURRAY_OK);
    }
    /* Every payload checksum in windows (resumed after each injected TRANSPORT failure): the
     * same status through read_at as over the span. */
    r.verify = RETRY(hurray_file_reader_verify_payloads(fr), sp);
    digest_u64(&r.digest, (uint64_t)(int64_t)r.verify);
    if (debug()) fprintf(stderr, "span %d verify_payloads: %d\n", span, r.verify);
    FUZZ_CHECK(hurray_file_reader_destroy(&fr) == HURRAY_OK && fr == NULL);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t plan_len = data[0] % 64;
    if (size < 1 + plan_len) return 0;
    const uint8_t *plan = data + 1;
    size_t len = size - 1 - plan_len;
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, data + 1 + plan_len, len);
    uint32_t flags = (data[0] & 64) ? HURRAY_FILE_READER_SKIP_PAYLOAD_CHECKS : HURRAY_FILE_READER_VERIFY_PAYLOADS;
    Run a = run(copy, len, plan, plan_len, 0, flags);
    Run b = run(copy, len, NULL, 0, 1, flags);
    FUZZ_CHECK(a.open == b.open);
    FUZZ_CHECK(a.count == b.count);
    FUZZ_CHECK(a.verify == b.verify);
    FUZZ_CHECK(a.digest.h == b.digest.h);
    free(copy);
    return 0;
}
