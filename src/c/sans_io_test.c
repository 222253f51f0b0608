/*
 * The decoder and encoder of docs/spec/c-abi.md §Decoders and encoders over a real
 * socketpair(2), with the caller doing all the I/O: a writer thread stages tensors with
 * hurray_encoder_encode (descriptors made in one call by hurray_descriptor_new) and sends
 * the pending pieces with send(2); the main thread runs the decoder loop of the spec with
 * read(2). Small and large tensors (a large payload is borrowed by the encoder and arrives in
 * place at the decoder) are checked byte for byte. Exit status 0 on success.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hurray.h"

#define COUNT 300
#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);      \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
#define CHECK_OK(call) CHECK((call) == HURRAY_OK)

static uint64_t elements(size_t t) { return t % 100 == 7 ? 100000 : 1 + t % 300; } /* one ~400 KB in 100 */
static uint8_t byte_at(size_t t, uint64_t j) { return (uint8_t)(t * 31 + j * 7); }

static void send_all(int fd, const uint8_t *p, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        CHECK(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

/* Sends every pending piece and reports it consumed. */
static void drain(HurrayEncoder *e, int fd) {
    HurrayIoSlice pieces[8];
    size_t n = 0;
    do {
        CHECK_OK(hurray_encoder_output(e, pieces, 8, &n));
        uint64_t sent = 0;
        for (size_t i = 0; i < n; i++) {
            send_all(fd, pieces[i].ptr, pieces[i].len);
            sent += pieces[i].len;
        }
        CHECK_OK(hurray_encoder_consume(e, sent, NULL));
    } while (n > 0);
}

static void *writer(void *arg) {
    int fd = *(int *)arg;
    HurrayEncoder *e = NULL;
    CHECK_OK(hurray_encoder_new(NULL, &e));
    for (size_t t = 0; t < COUNT; t++) {
        uint64_t n = elements(t);
        char name[32];
        snprintf(name, sizeof name, "t%zu", t);
        HurrayDescriptorSpec spec;
        memset(&spec, 0, sizeof spec);
        spec.element_type = HURRAY_DTYPE_FLOAT32;
        spec.layout = HURRAY_LAYOUT_ROW_MAJOR;
        spec.rank = 1;
        spec.dims = &n;
        spec.name = (const uint8_t *)name;
        spec.name_len = strlen(name);
        HurrayDescriptor *d = NULL;
        CHECK_OK(hurray_descriptor_new(&spec, &d));
        uint8_t *payload = malloc(n * 4);
        CHECK(payload != NULL);
        for (uint64_t j = 0; j < n * 4; j++) payload[j] = byte_at(t, j);
        HurrayIoSlice slice = {payload, (size_t)(n * 4)};
        HurrayEncoderState st;
        CHECK_OK(hurray_encoder_encode(e, d, &slice, 1, &st));
        /* Send when the output borrows the payload (it is freed next) or 64 KiB are pending. */
        if (st.borrows_payloads || st.pending_bytes >= 65536) drain(e, fd);
        free(payload);
        CHECK_OK(hurray_descriptor_destroy(d));
    }
    CHECK_OK(hurray_encoder_finish(e, NULL));
    drain(e, fd);
    CHECK_OK(hurray_encoder_destroy(&e));
    CHECK(e == NULL);
    shutdown(fd, SHUT_WR);
    return NULL;
}

int main(void) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, writer, &sv[1]) == 0);

    HurrayDecoder *d = NULL;
    CHECK_OK(hurray_decoder_new(NULL, 1u << 20, &d));
    HurrayDecodeResult r;
    size_t filled = 0, count = 0, reads = 0;
    uint32_t flags = 0;
    HurrayStatus s;
    for (;;) {
        s = hurray_decoder_next(d, filled, flags, &r);
        filled = 0;
        if (s == HURRAY_NEED_INPUT) {
            ssize_t n = read(sv[0], r.input, r.input_len);
            reads++;
            if (n > 0) filled = (size_t)n;
            else if (n == 0) flags = HURRAY_DECODE_END_OF_INPUT;
            else CHECK(errno == EINTR);
            continue;
        }
        if (s != HURRAY_OK) break;
        char want[32];
        snprintf(want, sizeof want, "t%zu", count);
        CHECK(r.fields.name_len == strlen(want) && memcmp(r.fields.name, want, r.fields.name_len) == 0);
        CHECK(r.fields.rank == 1 && r.fields.dims[0] == elements(count));
        CHECK(r.fields.buffer_count == 1);
        CHECK(r.buffers[0].spec.byte_size == elements(count) * 4);
        CHECK((uintptr_t)r.buffers[0].data % r.buffers[0].spec.alignment == 0);
        const uint8_t *p = r.buffers[0].data;
        for (uint64_t j = 0; j < elements(count) * 4; j++) CHECK(p[j] == byte_at(count, j));
        CHECK_OK(hurray_tensor_destroy(&r.tensor));
        CHECK(r.tensor == NULL);
        count++;
    }
    CHECK(s == HURRAY_END_OF_STREAM);
    CHECK(count == COUNT);
    CHECK(hurray_decoder_next(d, 0, 0, &r) == HURRAY_END_OF_STREAM);
    CHECK_OK(hurray_decoder_destroy(&d));
    CHECK(pthread_join(th, NULL) == 0);
    close(sv[0]);
    close(sv[1]);
    printf("sans-I/O decoder and encoder over a socketpair: %zu tensors in %zu reads, then HURRAY_END_OF_STREAM\n", count, reads);
    return 0;
}
