/*
 * The C writer matching stream_reader.c: originates every descriptor with the
 * hurray_descriptor_builder_* encode surface and writes EXPECTED over a socket.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "expected.h"

typedef struct sock_ctx {
    int fd;
    size_t sent;
    size_t limit; /* fail (moving nothing) once this many bytes went out; 0: no limit */
} sock_ctx;

/* A send(2) transport (docs/spec/c-abi.md §Transports), plus MSG_NOSIGNAL (a closed peer is an
 * error, not SIGPIPE) and an optional byte limit used to cut the stream mid-item. */
static HurrayStatus sock_write(void *ctx, const uint8_t *src, size_t len, size_t *out) {
    sock_ctx *c = ctx;
    if (c->limit != 0) {
        if (c->sent >= c->limit) { *out = 0; return HURRAY_ERR_TRANSPORT; }
        if (len > c->limit - c->sent) len = c->limit - c->sent;
    }
    ssize_t n;
    do {
        n = send(c->fd, src, len, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) { *out = 0; return HURRAY_ERR_TRANSPORT; }
    *out = (size_t)n; /* a short write is normal */
    c->sent += (size_t)n;
    return HURRAY_OK;
}

static HurrayDescriptor *build(size_t t) {
    const expected_tensor *e = &EXPECTED[t];
    HurrayDescriptorBuilder *b = NULL;
    CHECK_STATUS(hurray_descriptor_builder_new(e->dtype, e->rank ? e->dims : NULL, e->rank, &b), HURRAY_OK);
    if (e->layout == HURRAY_LAYOUT_STRIDED)
        CHECK_STATUS(hurray_descriptor_builder_set_layout(b, e->layout, e->strides, e->rank), HURRAY_OK);
    if (e->name)
        CHECK_STATUS(hurray_descriptor_builder_set_name(b, e->name, strlen(e->name)), HURRAY_OK);
    if (e->meta_key)
        CHECK_STATUS(hurray_descriptor_builder_add_metadata(b, (const uint8_t *)e->meta_key, strlen(e->meta_key),
                                                            (const uint8_t *)e->meta_value, strlen(e->meta_value)),
                     HURRAY_OK);
    if (e->quant != HURRAY_QUANT_NONE) {
        HurrayQuantization q = {0};
        q.kind = e->quant;
        q.dequantized_type = HURRAY_DTYPE_FLOAT32;
        q.axis = e->axis;
        CHECK_STATUS(hurray_descriptor_builder_set_quantization(b, &q), HURRAY_OK);
    }
    for (size_t i = 0; e->explicit_buffers && i < e->buffer_count; i++) {
        HurrayBufferSpec spec = {0};
        spec.byte_size = e->sizes[i];
        spec.alignment = e->alignments[i];
        spec.device_tag = HURRAY_DEVICE_CPU;
        spec.sync_mode = HURRAY_SYNC_PRODUCER_SYNCED;
        CHECK_STATUS(hurray_descriptor_builder_add_buffer(b, &spec), HURRAY_OK);
    }
    HurrayDescriptor *d = NULL;
    CHECK_STATUS(hurray_descriptor_builder_build(b, &d), HURRAY_OK);
    CHECK_STATUS(hurray_descriptor_builder_destroy(&b), HURRAY_OK);
    CHECK(b == NULL);
    return d;
}

/* Writes EXPECTED (with payload checksums) and the end marker to fd. With stop_after_bytes
 * > 0 the transport fails once that many bytes are out: the write in flight fails with
 * HURRAY_ERR_TRANSPORT, the writer is poisoned, and the function returns 1. Returns 0 after a
 * complete stream. */
int write_expected_stream(int fd, size_t stop_after_bytes) {
    sock_ctx ctx = {fd, 0, stop_after_bytes};
    HurrayTransport transport = {0};
    transport.ctx = &ctx;
    transport.write = sock_write;
    HurrayWriterOptions options;
    CHECK_STATUS(hurray_writer_options_init(&options), HURRAY_OK);
    options.flags |= HURRAY_WRITER_PAYLOAD_CHECKSUMS;
    HurrayWriter *writer = NULL;
    CHECK_STATUS(hurray_writer_new(&transport, &options, &writer), HURRAY_OK);
    int poisoned = 0;
    for (size_t t = 0; t < EXPECTED_COUNT && !poisoned; t++) {
        const expected_tensor *e = &EXPECTED[t];
        HurrayDescriptor *d = build(t);
        uint8_t *data[MAX_TEST_BUFFERS] = {NULL};
        HurrayIoSlice payloads[MAX_TEST_BUFFERS];
        for (size_t b = 0; b < e->buffer_count; b++) {
            data[b] = malloc(e->sizes[b] ? e->sizes[b] : 1);
            CHECK(data[b] != NULL);
            for (uint64_t j = 0; j < e->sizes[b]; j++) data[b][j] = payload_byte(t, b, j);
            payloads[b].ptr = e->sizes[b] ? data[b] : NULL; /* zero-byte payloads may be NULL */
            payloads[b].len = e->sizes[b];
        }
        HurrayStatus s = hurray_writer_write_tensor(writer, d, payloads, e->buffer_count);
        if (stop_after_bytes && s == HURRAY_ERR_TRANSPORT) {
            CHECK(s < 0);
            /* A failure after the item's first byte poisons the writer. */
            CHECK_STATUS(hurray_writer_write_tensor(writer, d, payloads, e->buffer_count), HURRAY_ERR_POISONED);
            CHECK_STATUS(hurray_writer_finish(writer), HURRAY_ERR_POISONED);
            poisoned = 1;
        } else {
            CHECK_STATUS(s, HURRAY_OK);
        }
        /* Nothing is retained after the call: the payloads can go at once. */
        for (size_t b = 0; b < e->buffer_count; b++) free(data[b]);
        CHECK_STATUS(hurray_descriptor_destroy(d), HURRAY_OK);
    }
    if (!poisoned) CHECK_STATUS(hurray_writer_finish(writer), HURRAY_OK);
    CHECK_STATUS(hurray_writer_destroy(&writer), HURRAY_OK);
    CHECK(writer == NULL);
    return poisoned;
}
