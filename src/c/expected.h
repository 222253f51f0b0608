/*
 * The tensors the C writer sends and the C reader expects (src/c/README.md).
 * Payload byte j of buffer b of tensor t is payload_byte(t, b, j).
 */
#ifndef HURRAY_C_TEST_EXPECTED_H
#define HURRAY_C_TEST_EXPECTED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hurray.h"

#define MAX_TEST_RANK 3
#define MAX_TEST_BUFFERS 3

typedef struct expected_tensor {
    const char *name;             /* NULL: unnamed */
    uint8_t dtype;                /* HURRAY_DTYPE_* */
    size_t rank;
    uint64_t dims[MAX_TEST_RANK];
    uint8_t layout;               /* HURRAY_LAYOUT_* */
    int64_t strides[MAX_TEST_RANK];
    int explicit_buffers;         /* 0: let the builder imply one dense CPU buffer */
    size_t buffer_count;
    uint64_t sizes[MAX_TEST_BUFFERS]; /* bytes */
    uint32_t alignments[MAX_TEST_BUFFERS];
    uint8_t quant;                /* HURRAY_QUANT_* */
    uint32_t axis;
    const char *meta_key;         /* one metadata entry, or NULL */
    const char *meta_value;
} expected_tensor;

/* Element type, shape, layout, buffers: rank 0, zero-size dims (zero-byte payloads), a
 * strided view, per-channel quantization (three buffers), 4096-byte alignment, metadata, and
 * one 200 KB tensor so the reader's direct read path runs over the socket. */
static const expected_tensor EXPECTED[] = {
    {"seed/uint8", HURRAY_DTYPE_UINT8, 1, {64}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 0, 1, {64}, {64}, HURRAY_QUANT_NONE, 0, NULL, NULL},
    {"matrix", HURRAY_DTYPE_FLOAT32, 2, {3, 4}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 0, 1, {48}, {64}, HURRAY_QUANT_NONE, 0, "unit", "m/s"},
    {"zero/int16", HURRAY_DTYPE_INT16, 1, {0}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 0, 1, {0}, {64}, HURRAY_QUANT_NONE, 0, NULL, NULL},
    {NULL, HURRAY_DTYPE_FLOAT64, 3, {2, 0, 3}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 0, 1, {0}, {64}, HURRAY_QUANT_NONE, 0, NULL, NULL},
    {"scalar", HURRAY_DTYPE_FLOAT32, 0, {0}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 0, 1, {4}, {64}, HURRAY_QUANT_NONE, 0, NULL, NULL},
    {"quant/per_channel", HURRAY_DTYPE_INT8, 2, {2, 3}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 1, 3, {6, 8, 8}, {64, 64, 64},
     HURRAY_QUANT_PER_CHANNEL_AFFINE, 0, NULL, NULL},
    {"aligned/4096", HURRAY_DTYPE_UINT8, 1, {5000}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 1, 1, {5000}, {4096}, HURRAY_QUANT_NONE, 0, NULL, NULL},
    {"strided/transposed", HURRAY_DTYPE_INT32, 2, {3, 2}, HURRAY_LAYOUT_STRIDED, {1, 3}, 1, 1, {24}, {64}, HURRAY_QUANT_NONE, 0, NULL, NULL},
    {"big/bfloat16", HURRAY_DTYPE_BFLOAT16, 1, {100000}, HURRAY_LAYOUT_ROW_MAJOR, {0}, 0, 1, {200000}, {64}, HURRAY_QUANT_NONE, 0, NULL, NULL},
};
#define EXPECTED_COUNT (sizeof EXPECTED / sizeof EXPECTED[0])

static inline uint8_t payload_byte(size_t tensor, size_t buffer, uint64_t j) {
    return (uint8_t)(j * 31u + tensor * 7u + buffer * 13u);
}

/* Fails the test with the status name and the last error message. */
#define CHECK_STATUS(call, want)                                                            \
    do {                                                                                    \
        HurrayStatus s_ = (call);                                                           \
        if (s_ != (want)) {                                                                 \
            char msg_[512];                                                                 \
            hurray_last_error_message(msg_, sizeof msg_, NULL);                             \
            fprintf(stderr, "%s:%d: %s returned %s, want %s (%s)\n", __FILE__, __LINE__,     \
                    #call, hurray_status_name(s_), hurray_status_name(want), msg_);         \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* Implemented in stream_writer.c and stream_reader.c. */
int write_expected_stream(int fd, size_t stop_after_bytes);
size_t read_expected_stream(int fd, HurrayStatus *final_status);
size_t read_any_stream(int fd, HurrayStatus *final_status);

#endif
