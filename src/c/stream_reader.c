/*
 * The C reader loop of docs/spec/c-abi.md §Reading and writing a stream, checking every tensor
 * against EXPECTED: descriptor fields, payload bytes, and the alignment of every buffer.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "expected.h"

/* A recv(2) transport (docs/spec/c-abi.md §Transports), retrying EINTR. */
static HurrayStatus sock_read(void *ctx, uint8_t *dst, size_t len, size_t *out_filled) {
    ssize_t n;
    do {
        n = recv(*(int *)ctx, dst, len, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) { *out_filled = 0; return HURRAY_ERR_TRANSPORT; } /* moved nothing */
    *out_filled = (size_t)n; /* 0 == end of input */
    return HURRAY_OK;
}

/* The same over a plain file descriptor (read(2)), for files. */
static HurrayStatus fd_read(void *ctx, uint8_t *dst, size_t len, size_t *out_filled) {
    ssize_t n;
    do {
        n = read(*(int *)ctx, dst, len);
    } while (n < 0 && errno == EINTR);
    if (n < 0) { *out_filled = 0; return HURRAY_ERR_TRANSPORT; }
    *out_filled = (size_t)n;
    return HURRAY_OK;
}

static void check_tensor(size_t t, HurrayDescriptor *descriptor, HurrayBufferList *buffers) {
    CHECK(t < EXPECTED_COUNT);
    const expected_tensor *e = &EXPECTED[t];
    uint8_t dtype = 0, layout = 0;
    size_t rank = 0, count = 0, len = 0;
    CHECK_STATUS(hurray_descriptor_element_type(descriptor, &dtype), HURRAY_OK);
    CHECK_STATUS(hurray_descriptor_layout(descriptor, &layout), HURRAY_OK);
    CHECK_STATUS(hurray_descriptor_rank(descriptor, &rank), HURRAY_OK);
    CHECK(dtype == e->dtype && layout == e->layout && rank == e->rank);
    const uint64_t *dims = NULL;
    CHECK_STATUS(hurray_descriptor_dims(descriptor, &dims), HURRAY_OK);
    CHECK((rank == 0) == (dims == NULL));
    for (size_t i = 0; i < rank; i++) CHECK(dims[i] == e->dims[i]);
    const int64_t *strides = NULL;
    CHECK_STATUS(hurray_descriptor_strides(descriptor, &strides), HURRAY_OK);
    if (e->layout == HURRAY_LAYOUT_STRIDED) {
        for (size_t i = 0; i < rank; i++) CHECK(strides[i] == e->strides[i]);
    } else {
        CHECK(strides == NULL);
    }
    const char *name = NULL;
    size_t name_len = 0;
    CHECK_STATUS(hurray_descriptor_name(descriptor, &name, &name_len), HURRAY_OK);
    if (e->name) {
        CHECK(name != NULL && name_len == strlen(e->name) && strcmp(name, e->name) == 0);
    } else {
        CHECK(name == NULL && name_len == 0);
    }
    size_t meta = 0;
    CHECK_STATUS(hurray_descriptor_metadata_count(descriptor, &meta), HURRAY_OK);
    CHECK(meta == (e->meta_key ? 1u : 0u));
    if (meta) {
        const uint8_t *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0;
        CHECK_STATUS(hurray_descriptor_metadata_get(descriptor, 0, &k, &kl, &v, &vl), HURRAY_OK);
        CHECK(kl == strlen(e->meta_key) && memcmp(k, e->meta_key, kl) == 0);
        CHECK(vl == strlen(e->meta_value) && memcmp(v, e->meta_value, vl) == 0);
    }
    HurrayQuantization q;
    CHECK_STATUS(hurray_descriptor_quantization(descriptor, &q), HURRAY_OK);
    CHECK(q.kind == e->quant);
    if (e->quant == HURRAY_QUANT_PER_CHANNEL_AFFINE) CHECK(q.axis == e->axis && q.dequantized_type == HURRAY_DTYPE_FLOAT32);
    uint64_t elements = 0;
    CHECK_STATUS(hurray_descriptor_element_count(descriptor, &elements), HURRAY_OK);
    uint64_t want_elements = 1;
    for (size_t i = 0; i < rank; i++) want_elements *= e->dims[i];
    CHECK(elements == want_elements);

    CHECK_STATUS(hurray_descriptor_buffer_count(descriptor, &count), HURRAY_OK);
    CHECK_STATUS(hurray_buffer_list_len(buffers, &len), HURRAY_OK);
    CHECK(count == e->buffer_count && len == count);
    for (size_t b = 0; b < len; b++) {
        HurrayBuffer *buffer = NULL; /* borrowed — do not destroy */
        CHECK_STATUS(hurray_buffer_list_get(buffers, b, &buffer), HURRAY_OK);
        void *data = NULL;
        uint64_t size = 0;
        uint32_t alignment = 0;
        uint8_t device = 0xEE, sync = 0xEE;
        CHECK_STATUS(hurray_buffer_data_ptr(buffer, &data), HURRAY_OK);
        CHECK_STATUS(hurray_buffer_byte_size(buffer, &size), HURRAY_OK);
        CHECK_STATUS(hurray_buffer_alignment(buffer, &alignment), HURRAY_OK);
        CHECK_STATUS(hurray_buffer_device_tag(buffer, &device), HURRAY_OK);
        CHECK_STATUS(hurray_buffer_sync_mode(buffer, &sync), HURRAY_OK);
        CHECK(size == e->sizes[b]);
        CHECK(alignment == e->alignments[b]);
        CHECK(device == HURRAY_DEVICE_CPU && sync == HURRAY_SYNC_PRODUCER_SYNCED);
        /* The reader allocated at the declared alignment: at least 64 bytes, even when empty. */
        CHECK(data != NULL);
        CHECK((uintptr_t)data % 64 == 0);
        CHECK((uintptr_t)data % alignment == 0);
        const uint8_t *bytes = data;
        for (uint64_t j = 0; j < size; j++) {
            if (bytes[j] != payload_byte(t, b, j)) {
                fprintf(stderr, "tensor %zu buffer %zu byte %llu: %u, want %u\n", t, b, (unsigned long long)j,
                        bytes[j], payload_byte(t, b, j));
                exit(1);
            }
        }
    }
}

/* Reads tensors until the end marker or an error (the loop of docs/spec/c-abi.md §Reading and
 * writing a stream). Returns the number of tensors read; *final_status is HURRAY_END_OF_STREAM
 * or the error. With `check` set the fd is a socket and every tensor must match EXPECTED;
 * without, any fd and any tensors. */
static size_t read_stream(int fd, HurrayStatus *final_status, int check) {
    HurrayTransport transport = {0};
    transport.ctx = &fd;
    transport.read = check ? sock_read : fd_read;
    HurrayReader *reader = NULL;
    if (hurray_reader_new(&transport, NULL, &reader) != HURRAY_OK) return (size_t)-1;
    size_t n = 0;
    HurrayStatus s;
    for (;;) {
        HurrayTensor *tensor = NULL;
        s = hurray_reader_next_tensor(reader, &tensor);
        if (s == HURRAY_END_OF_STREAM) break; /* positive: not an error */
        if (s < 0) break;                     /* every error is negative */
        HurrayDescriptor *descriptor = NULL;  /* borrowed — do not destroy */
        HurrayBufferList *buffers = NULL;     /* borrowed — do not destroy */
        CHECK_STATUS(hurray_tensor_descriptor(tensor, &descriptor), HURRAY_OK);
        CHECK_STATUS(hurray_tensor_buffers(tensor, &buffers), HURRAY_OK);
        if (check) {
            check_tensor(n, descriptor, buffers);
        } else {
            size_t count = 0, len = 0;
            CHECK_STATUS(hurray_descriptor_buffer_count(descriptor, &count), HURRAY_OK);
            CHECK_STATUS(hurray_buffer_list_len(buffers, &len), HURRAY_OK);
            CHECK(count == len);
            for (size_t b = 0; b < len; b++) {
                HurrayBuffer *buffer = NULL;
                void *data = NULL;
                uint32_t alignment = 0;
                CHECK_STATUS(hurray_buffer_list_get(buffers, b, &buffer), HURRAY_OK);
                CHECK_STATUS(hurray_buffer_data_ptr(buffer, &data), HURRAY_OK);
                CHECK_STATUS(hurray_buffer_alignment(buffer, &alignment), HURRAY_OK);
                CHECK(alignment >= 64 && (uintptr_t)data % alignment == 0);
            }
        }
        n++;
        CHECK_STATUS(hurray_tensor_destroy(&tensor), HURRAY_OK); /* one call frees both halves */
        CHECK(tensor == NULL);
    }
    if (s == HURRAY_END_OF_STREAM) {
        /* The end is sticky. */
        HurrayTensor *tensor = NULL;
        CHECK_STATUS(hurray_reader_next_tensor(reader, &tensor), HURRAY_END_OF_STREAM);
        CHECK(tensor == NULL);
    }
    CHECK_STATUS(hurray_reader_destroy(&reader), HURRAY_OK);
    CHECK(reader == NULL);
    *final_status = s;
    return n;
}

size_t read_expected_stream(int fd, HurrayStatus *final_status) {
    return read_stream(fd, final_status, 1);
}

/* Reads any stream from a file descriptor, checking only buffer counts and alignment. */
size_t read_any_stream(int fd, HurrayStatus *final_status) {
    return read_stream(fd, final_status, 0);
}
