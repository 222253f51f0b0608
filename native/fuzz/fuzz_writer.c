/* The stream and file writer state machines (docs/spec/stream.md, hrryfile.md). Input: byte 0 =
 * plan length L (mod 64), L plan bytes (short writes and injected TRANSPORT failures for the
 * stream sink; short writes for the file sink), then records [u16 LE length, descriptor bytes].
 * Each record that decodes becomes a tensor whose payloads are a pattern of the declared sizes
 * (records declaring more than 64 KiB in all are skipped).
 * Oracles, stream writer: a TRANSPORT failure before the item's first byte leaves the sink
 * unchanged and the writer usable (the item is retried); one after it poisons the writer
 * (every later write and finish is POISONED); after success plus finish, reading the sink back
 * gives exactly the tensors written; after poisoning, it gives exactly the tensors completed
 * before, then an error (never a clean end).
 * Oracles, file writer: add_tensor fails only for a missing or duplicate name (or an error the
 * stream writer also gives), and after finish the span reader finds every added tensor by name
 * with the same bytes. */
#include "fuzz_common.h"

#define MAX_ITEMS 16

typedef struct {
    HurrayDescriptor *d;
    HurrayIoSlice slices[64];
    uint8_t *mem[64];
    size_t n;
    Digest digest;
    const char *name;
    size_t name_len;
} Item;

static int make_item(Item *it, const uint8_t *bytes, size_t len) {
    memset(it, 0, sizeof *it);
    if (hurray_descriptor_decode(bytes, len, &it->d) != HURRAY_OK) return 0;
    size_t count = 0;
    uint64_t total = 0;
    FUZZ_CHECK(hurray_descriptor_buffer_count(it->d, &count) == HURRAY_OK);
    for (size_t i = 0; i < count; i++) {
        HurrayBufferSpec s;
        FUZZ_CHECK(hurray_descriptor_buffer_spec(it->d, i, &s) == HURRAY_OK);
        total += s.byte_size;
        if (total > 65536) {
            hurray_descriptor_destroy(it->d);
            return 0;
        }
    }
    it->n = count;
    const uint8_t *enc = NULL;
    size_t enc_len = 0;
    FUZZ_CHECK(hurray_descriptor_encoded(it->d, &enc, &enc_len) == HURRAY_OK);
    digest_init(&it->digest);
    digest_u64(&it->digest, enc_len);
    digest_bytes(&it->digest, enc, enc_len);
    for (size_t i = 0; i < count; i++) {
        HurrayBufferSpec s;
        FUZZ_CHECK(hurray_descriptor_buffer_spec(it->d, i, &s) == HURRAY_OK);
        it->mem[i] = malloc(s.byte_size ? s.byte_size : 1);
        for (uint64_t j = 0; j < s.byte_size; j++) it->mem[i][j] = (uint8_t)(j * 31 + i * 7 + enc_len);
        it->slices[i].ptr = s.byte_size ? it->mem[i] : NULL;
        it->slices[i].len = s.byte_size;
        digest_u64(&it->digest, s.byte_size);
        digest_bytes(&it->digest, it->mem[i], s.byte_size);
    }
    FUZZ_CHECK(hurray_descriptor_name(it->d, &it->name, &it->name_len) == HURRAY_OK);
    return 1;
}

static void free_item(Item *it) {
    for (size_t i = 0; i < it->n; i++) free(it->mem[i]);
    hurray_descriptor_destroy(it->d);
}

/* Reads `bytes` back; returns the number of tensors read and checks each against items[]. */
static size_t read_back(const uint8_t *bytes, size_t len, Item *items, size_t expect, HurrayStatus *end) {
    Source src = {.bytes = bytes, .len = len};
    HurrayTransport t = {.ctx = &src, .read = source_read};
    HurrayReader *r = NULL;
    FUZZ_CHECK(hurray_reader_new(&t, NULL, &r) == HURRAY_OK);
    size_t n = 0;
    for (;;) {
        HurrayTensor *tensor = NULL;
        HurrayStatus s = hurray_reader_next_tensor(r, &tensor);
        FUZZ_NO_PANIC(s);
        if (s != HURRAY_OK) {
            *end = s;
            break;
        }
        FUZZ_CHECK(n < expect);
        Digest d;
        digest_init(&d);
        digest_tensor(&d, tensor);
        FUZZ_CHECK(d.h == items[n].digest.h);
        n++;
        hurray_tensor_destroy(&tensor);
    }
    hurray_reader_destroy(&r);
    return n;
}

static void stream_writer(Item *items, size_t n, const uint8_t *plan, size_t plan_len) {
    Sink sink = {.plan = plan, .plan_len = plan_len, .faults = 1};
    HurrayTransport t = {.ctx = &sink, .write = sink_write};
    HurrayWriter *w = NULL;
    FUZZ_CHECK(hurray_writer_new(&t, NULL, &w) == HURRAY_OK);
    size_t done = 0;
    int poisoned = 0;
    for (size_t i = 0; i < n && !poisoned; i++) {
        for (size_t tries = 0;; tries++) {
            size_t before = sink.len;
            HurrayStatus s = hurray_writer_write_tensor(w, items[i].d, items[i].slices, items[i].n);
            FUZZ_NO_PANIC(s);
            if (s == HURRAY_OK) {
                done++;
                break;
            }
            FUZZ_CHECK(s == HURRAY_ERR_TRANSPORT);
            FUZZ_CHECK(tries < 64);
            if (sink.len != before) {
                poisoned = 1;
                break;
            }
        }
    }
    if (poisoned) {
        FUZZ_CHECK(hurray_writer_write_tensor(w, items[0].d, items[0].slices, items[0].n) == HURRAY_ERR_POISONED);
        FUZZ_CHECK(hurray_writer_finish(w) == HURRAY_ERR_POISONED);
    } else {
        HurrayStatus s;
        size_t tries = 0;
        size_t before = sink.len;
        while ((s = hurray_writer_finish(w)) == HURRAY_ERR_TRANSPORT) {
            FUZZ_CHECK(sink.len == before && tries++ < 64); /* the end marker is one write */
        }
        FUZZ_CHECK(s == HURRAY_OK);
    }
    FUZZ_CHECK(hurray_writer_destroy(&w) == HURRAY_OK);
    HurrayStatus end = 0;
    size_t got = read_back(sink.bytes, sink.len, items, done, &end);
    FUZZ_CHECK(got == done);
    FUZZ_CHECK(poisoned ? end < 0 : end == HURRAY_END_OF_STREAM);
    free(sink.bytes);
}

static void file_writer(Item *items, size_t n, const uint8_t *plan, size_t plan_len) {
    Sink sink = {.plan = plan, .plan_len = plan_len, .faults = 0};
    HurrayTransport t = {.ctx = &sink, .write = sink_write};
    HurrayFileWriter *w = NULL;
    FUZZ_CHECK(hurray_file_writer_new(&t, NULL, &w) == HURRAY_OK);
    int added[MAX_ITEMS] = {0};
    for (size_t i = 0; i < n; i++) {
        HurrayStatus s = hurray_file_writer_add_tensor(w, items[i].d, items[i].slices, items[i].n);
        FUZZ_NO_PANIC(s);
        if (s == HURRAY_OK) {
            added[i] = 1;
            continue;
        }
        int dup = 0;
        for (size_t j = 0; j < i; j++) {
            dup |= added[j] && items[j].name_len == items[i].name_len &&
                   memcmp(items[j].name, items[i].name, items[i].name_len) == 0;
        }
        FUZZ_CHECK((items[i].name_len == 0 && s == HURRAY_ERR_INVALID_ARGUMENT) ||
                   (dup && s == HURRAY_ERR_DUPLICATE_NAME));
    }
    uint64_t size = 0;
    FUZZ_CHECK(hurray_file_writer_finish(w, &size) == HURRAY_OK);
    FUZZ_CHECK(size == sink.len);
    FUZZ_CHECK(hurray_file_writer_destroy(&w) == HURRAY_OK);
    HurrayFileReaderOptions o;
    FUZZ_CHECK(hurray_file_reader_options_init(&o) == HURRAY_OK);
    o.flags |= HURRAY_FILE_READER_VERIFY_PAYLOADS;
    HurrayFileReader *r = NULL;
    FUZZ_CHECK(hurray_file_reader_open_span(sink.bytes, sink.len, &o, &r) == HURRAY_OK);
    for (size_t i = 0; i < n; i++) {
        if (!added[i]) continue;
        HurrayFileEntry *e = NULL;
        HurrayTensor *tensor = NULL;
        FUZZ_CHECK(hurray_file_reader_find(r, (const uint8_t *)items[i].name, items[i].name_len, &e) == HURRAY_OK);
        FUZZ_CHECK(hurray_file_reader_read_tensor(r, e, &tensor) == HURRAY_OK);
        Digest d;
        digest_init(&d);
        digest_tensor(&d, tensor);
        FUZZ_CHECK(d.h == items[i].digest.h);
        hurray_tensor_destroy(&tensor);
        hurray_file_entry_destroy(&e);
    }
    FUZZ_CHECK(hurray_file_reader_verify(r) == HURRAY_OK);
    hurray_file_reader_destroy(&r);
    free(sink.bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t plan_len = data[0] % 64;
    if (size < 1 + plan_len) return 0;
    const uint8_t *plan = data + 1;
    size_t pos = 1 + plan_len;
    Item items[MAX_ITEMS];
    size_t n = 0;
    while (n < MAX_ITEMS && pos + 2 <= size) {
        size_t len = data[pos] | (size_t)data[pos + 1] << 8;
        pos += 2;
        if (len > size - pos) len = size - pos;
        if (make_item(&items[n], data + pos, len)) n++;
        pos += len;
    }
    if (n > 0) {
        stream_writer(items, n, plan, plan_len);
        file_writer(items, n, plan, plan_len);
    }
    for (size_t i = 0; i < n; i++) free_item(&items[i]);
    return 0;
}
