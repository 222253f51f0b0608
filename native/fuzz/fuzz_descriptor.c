/* Descriptor decode (docs/spec/descriptor.md). Oracles for every input the decoder accepts:
 *  - re-encode == input: the encoding is canonical, so hurray_descriptor_encoded gives back
 *    exactly the input bytes, and decoding those again gives the same bytes;
 *  - accessor consistency: hurray_descriptor_fields agrees with every single accessor (element
 *    type, rank, dims, layout, strides, byte offset, element count, buffer count, metadata
 *    count, name, quantization), element_count is the product of the dims, strides exist
 *    exactly for the strided layout, the name holds no NUL and passes hurray_name_check, and
 *    every buffer spec and metadata entry can be read;
 *  - a rejected input leaves *out NULL and never reports INTERNAL_PANIC. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    HurrayDescriptor *d = NULL;
    HurrayStatus s = hurray_descriptor_decode(data, size, &d);
    FUZZ_NO_PANIC(s);
    if (s != HURRAY_OK) {
        FUZZ_CHECK(s < 0 && d == NULL);
        return 0;
    }
    const uint8_t *enc = NULL;
    size_t enc_len = 0;
    FUZZ_CHECK(hurray_descriptor_encoded(d, &enc, &enc_len) == HURRAY_OK);
    FUZZ_CHECK(enc_len == size && memcmp(enc, data, size) == 0);

    HurrayDescriptorFields f;
    memset(&f, 0xA5, sizeof f);
    FUZZ_CHECK(hurray_descriptor_fields(d, &f) == HURRAY_OK);
    FUZZ_CHECK(f.encoded_len == enc_len && memcmp(f.encoded, enc, enc_len) == 0);
    uint8_t et = 0, layout = 0;
    size_t rank = 99, nbuf = 99, nmeta = 99, name_len = 99;
    const uint64_t *dims = NULL;
    const int64_t *strides = NULL;
    uint64_t off = 0, count = 0;
    const char *name = NULL;
    FUZZ_CHECK(hurray_descriptor_element_type(d, &et) == HURRAY_OK && et == f.element_type);
    FUZZ_CHECK(hurray_descriptor_layout(d, &layout) == HURRAY_OK && layout == f.layout);
    FUZZ_CHECK(hurray_descriptor_rank(d, &rank) == HURRAY_OK && rank == f.rank);
    FUZZ_CHECK(hurray_descriptor_dims(d, &dims) == HURRAY_OK);
    FUZZ_CHECK(rank == 0 || (dims != NULL && memcmp(dims, f.dims, rank * 8) == 0));
    HurrayStatus ss = hurray_descriptor_strides(d, &strides);
    FUZZ_NO_PANIC(ss);
    if (layout == HURRAY_LAYOUT_STRIDED && rank > 0) {
        FUZZ_CHECK(ss == HURRAY_OK && strides != NULL && f.strides != NULL);
        FUZZ_CHECK(memcmp(strides, f.strides, rank * 8) == 0);
    } else {
        FUZZ_CHECK(f.strides == NULL);
    }
    FUZZ_CHECK(hurray_descriptor_byte_offset(d, &off) == HURRAY_OK && off == f.byte_offset);
    FUZZ_CHECK(hurray_descriptor_element_count(d, &count) == HURRAY_OK && count == f.element_count);
    uint64_t product = 1;
    for (size_t i = 0; i < rank; i++) product *= dims[i]; /* validated: cannot overflow */
    FUZZ_CHECK(product == count);
    FUZZ_CHECK(hurray_descriptor_buffer_count(d, &nbuf) == HURRAY_OK && nbuf == f.buffer_count);
    FUZZ_CHECK(hurray_descriptor_metadata_count(d, &nmeta) == HURRAY_OK && nmeta == f.metadata_count);
    FUZZ_CHECK(hurray_descriptor_name(d, &name, &name_len) == HURRAY_OK);
    FUZZ_CHECK(name_len == f.name_len && (name == NULL) == (f.name == NULL));
    if (name != NULL) {
        FUZZ_CHECK(memcmp(name, f.name, name_len) == 0 && name[name_len] == '\0');
        FUZZ_CHECK(strlen(name) == name_len); /* no NUL inside */
        FUZZ_CHECK(hurray_name_check((const uint8_t *)name, name_len, 0) == HURRAY_OK);
    }
    HurrayQuantization q;
    FUZZ_CHECK(hurray_descriptor_quantization(d, &q) == HURRAY_OK);
    FUZZ_CHECK(memcmp(&q, &f.quantization, sizeof q) == 0);
    for (size_t i = 0; i < nbuf; i++) {
        HurrayBufferSpec spec;
        FUZZ_CHECK(hurray_descriptor_buffer_spec(d, i, &spec) == HURRAY_OK);
        FUZZ_CHECK(spec.alignment >= 64 && (spec.alignment & (spec.alignment - 1)) == 0);
    }
    HurrayBufferSpec spec;
    FUZZ_CHECK(hurray_descriptor_buffer_spec(d, nbuf, &spec) == HURRAY_ERR_INVALID_ARGUMENT);
    for (size_t i = 0; i < nmeta; i++) {
        const uint8_t *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0;
        FUZZ_CHECK(hurray_descriptor_metadata_get(d, i, &k, &kl, &v, &vl) == HURRAY_OK);
        FUZZ_CHECK(kl > 0 && k != NULL);
    }

    /* Round trip through a clone and a second decode. */
    HurrayDescriptor *c = NULL, *d2 = NULL;
    FUZZ_CHECK(hurray_descriptor_clone(d, &c) == HURRAY_OK);
    FUZZ_CHECK(hurray_descriptor_decode(enc, enc_len, &d2) == HURRAY_OK);
    const uint8_t *enc2 = NULL;
    size_t enc2_len = 0;
    FUZZ_CHECK(hurray_descriptor_encoded(d2, &enc2, &enc2_len) == HURRAY_OK);
    FUZZ_CHECK(enc2_len == size && memcmp(enc2, data, size) == 0);
    FUZZ_CHECK(hurray_descriptor_destroy(d2) == HURRAY_OK);
    FUZZ_CHECK(hurray_descriptor_destroy(c) == HURRAY_OK);
    FUZZ_CHECK(hurray_descriptor_destroy(d) == HURRAY_OK);
    return 0;
}
