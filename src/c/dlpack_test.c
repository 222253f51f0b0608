/* DLPack through the C ABI (docs/spec/dlpack.md): Hurray's structs must have the layout of the
 * DLPack 1.x structs. The reference structs below are written from the DLPack specification's
 * field lists (types and order); the compiler then checks every size and offset. Then an export
 * is consumed and an import is produced here as a DLPack library would, counting the deleter
 * and release calls. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hurray.h"

/* DLPack 1.1, by field: DLDevice {int32 type; int32 id}; DLDataType {uint8 code; uint8 bits;
 * uint16 lanes}; DLTensor {void *data; DLDevice device; int32 ndim; DLDataType dtype;
 * int64 *shape; int64 *strides; uint64 byte_offset}; DLPackVersion {uint32 major, minor};
 * DLManagedTensorVersioned {version; void *manager_ctx; deleter; uint64 flags; dl_tensor};
 * DLManagedTensor {dl_tensor; void *manager_ctx; deleter}. */
typedef struct { int32_t device_type; int32_t device_id; } RefDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } RefDataType;
typedef struct {
    void *data;
    RefDevice device;
    int32_t ndim;
    RefDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} RefTensor;
typedef struct { uint32_t major; uint32_t minor; } RefVersion;
typedef struct RefManagedVersioned {
    RefVersion version;
    void *manager_ctx;
    void (*deleter)(struct RefManagedVersioned *);
    uint64_t flags;
    RefTensor dl_tensor;
} RefManagedVersioned;
typedef struct RefManaged {
    RefTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct RefManaged *);
} RefManaged;

#define SAME(h, r, f) _Static_assert(offsetof(h, f) == offsetof(r, f), #h "." #f " is not where DLPack has it")
SAME(HurrayDLDevice, RefDevice, device_type);
SAME(HurrayDLDevice, RefDevice, device_id);
SAME(HurrayDLDataType, RefDataType, code);
SAME(HurrayDLDataType, RefDataType, bits);
SAME(HurrayDLDataType, RefDataType, lanes);
SAME(HurrayDLTensor, RefTensor, data);
SAME(HurrayDLTensor, RefTensor, device);
SAME(HurrayDLTensor, RefTensor, ndim);
SAME(HurrayDLTensor, RefTensor, dtype);
SAME(HurrayDLTensor, RefTensor, shape);
SAME(HurrayDLTensor, RefTensor, strides);
SAME(HurrayDLTensor, RefTensor, byte_offset);
SAME(HurrayDLPackVersion, RefVersion, major);
SAME(HurrayDLPackVersion, RefVersion, minor);
SAME(HurrayDLManagedTensorVersioned, RefManagedVersioned, version);
SAME(HurrayDLManagedTensorVersioned, RefManagedVersioned, manager_ctx);
SAME(HurrayDLManagedTensorVersioned, RefManagedVersioned, deleter);
SAME(HurrayDLManagedTensorVersioned, RefManagedVersioned, flags);
SAME(HurrayDLManagedTensorVersioned, RefManagedVersioned, dl_tensor);
SAME(HurrayDLManagedTensor, RefManaged, dl_tensor);
SAME(HurrayDLManagedTensor, RefManaged, manager_ctx);
SAME(HurrayDLManagedTensor, RefManaged, deleter);
_Static_assert(sizeof(HurrayDLDevice) == sizeof(RefDevice), "DLDevice size");
_Static_assert(sizeof(HurrayDLDataType) == sizeof(RefDataType), "DLDataType size");
_Static_assert(sizeof(HurrayDLTensor) == sizeof(RefTensor), "DLTensor size");
_Static_assert(sizeof(HurrayDLManagedTensorVersioned) == sizeof(RefManagedVersioned), "versioned size");
_Static_assert(sizeof(HurrayDLManagedTensor) == sizeof(RefManaged), "legacy size");
#if UINTPTR_MAX == 0xffffffffffffffffu
/* The LP64 byte table of docs/spec/dlpack.md. */
_Static_assert(sizeof(HurrayDLManagedTensorVersioned) == 80, "80 bytes on LP64");
_Static_assert(offsetof(HurrayDLManagedTensorVersioned, dl_tensor) == 32, "dl_tensor @32");
_Static_assert(sizeof(HurrayDLManagedTensor) == 64, "64 bytes on LP64");
#endif

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define OK(e) do { HurrayStatus s_ = (e); if (s_ != HURRAY_OK) { fprintf(stderr, "%s:%d: %s = %s\n", __FILE__, __LINE__, #e, hurray_status_name(s_)); exit(1); } } while (0)

static int releases;
static void count_release(void *data, void *ctx) { (void)data; (void)ctx; releases++; }

static int deletes;
static void producer_delete(HurrayDLManagedTensorVersioned *m) { (void)m; deletes++; }
static void producer_delete_legacy(HurrayDLManagedTensor *m) { (void)m; deletes++; }

int main(void) {
    /* Export: a float32[2,3] over caller memory. */
    float *data = aligned_alloc(64, 64);
    for (int i = 0; i < 6; i++) data[i] = (float)i;
    uint64_t dims[2] = {2, 3};
    HurrayDescriptorBuilder *b = NULL;
    HurrayDescriptor *d = NULL;
    OK(hurray_descriptor_builder_new(HURRAY_DTYPE_FLOAT32, dims, 2, &b));
    OK(hurray_descriptor_builder_build(b, &d));
    HurrayBuffer *buf = NULL;
    OK(hurray_buffer_from_ptr(data, 24, 64, 0, count_release, NULL, &buf));
    HurrayDLManagedTensorVersioned *m = NULL;
    OK(hurray_dlpack_export(d, buf, HURRAY_DLPACK_FLAG_READ_ONLY, &m));
    OK(hurray_buffer_destroy(&buf));
    CHECK(releases == 0); /* the export holds the memory */
    CHECK(m->version.major == 1 && m->version.minor == 1);
    CHECK(m->flags == HURRAY_DLPACK_FLAG_READ_ONLY);
    CHECK(m->dl_tensor.data == data && m->dl_tensor.ndim == 2);
    CHECK(m->dl_tensor.device.device_type == 1 && m->dl_tensor.device.device_id == 0);
    CHECK(m->dl_tensor.dtype.code == 2 && m->dl_tensor.dtype.bits == 32 && m->dl_tensor.dtype.lanes == 1);
    CHECK(m->dl_tensor.shape[0] == 2 && m->dl_tensor.shape[1] == 3);
    CHECK(m->dl_tensor.strides[0] == 3 && m->dl_tensor.strides[1] == 1);
    CHECK(hurray_dlpack_export(d, NULL, 0, &m) == HURRAY_ERR_NULL_POINTER);
    m->deleter(m);
    CHECK(releases == 1);

    /* Legacy export of the same. */
    OK(hurray_buffer_from_ptr(data, 24, 64, 0, count_release, NULL, &buf));
    CHECK(hurray_dlpack_export(d, buf, 4, &m) == HURRAY_ERR_INVALID_ARGUMENT);  /* unknown flag */
    HurrayDLManagedTensor *legacy = NULL;
    OK(hurray_dlpack_export_legacy(d, buf, &legacy));
    OK(hurray_buffer_destroy(&buf));
    CHECK(legacy->dl_tensor.shape[1] == 3 && legacy->dl_tensor.data == data);
    legacy->deleter(legacy);
    CHECK(releases == 2);
    hurray_descriptor_destroy(d);

    /* Import: a producer's strided int16[3,2] (column-major strides), zero copy. */
    int16_t *src = aligned_alloc(64, 64);
    for (int i = 0; i < 6; i++) src[i] = (int16_t)(10 * i);
    int64_t shape[2] = {3, 2}, strides[2] = {1, 3};
    HurrayDLManagedTensorVersioned p;
    memset(&p, 0, sizeof p);
    p.version.major = 1;
    p.deleter = producer_delete;
    p.dl_tensor.data = src;
    p.dl_tensor.device.device_type = 1;
    p.dl_tensor.ndim = 2;
    p.dl_tensor.dtype.code = 0;
    p.dl_tensor.dtype.bits = 16;
    p.dl_tensor.dtype.lanes = 1;
    p.dl_tensor.shape = shape;
    p.dl_tensor.strides = strides;
    HurrayTensor *t = NULL;
    OK(hurray_dlpack_import(&p, &t));
    CHECK(deletes == 0);
    HurrayDescriptor *td = NULL;
    HurrayBufferList *tl = NULL;
    OK(hurray_tensor_descriptor(t, &td));
    OK(hurray_tensor_buffers(t, &tl));
    uint8_t layout = 0, type = 0;
    OK(hurray_descriptor_layout(td, &layout));
    OK(hurray_descriptor_element_type(td, &type));
    CHECK(layout == HURRAY_LAYOUT_STRIDED && type == HURRAY_DTYPE_INT16);
    HurrayBuffer *tb = NULL;
    OK(hurray_buffer_list_get(tl, 0, &tb));
    void *ptr = NULL;
    OK(hurray_buffer_data_ptr(tb, &ptr));
    CHECK(ptr == src);
    OK(hurray_tensor_destroy(&t));
    CHECK(deletes == 1);

    /* Misaligned data is copied and given back at once. */
    p.dl_tensor.data = (char *)src + 2;
    p.dl_tensor.strides = NULL;
    p.dl_tensor.shape[0] = 2;
    OK(hurray_dlpack_import(&p, &t));
    CHECK(deletes == 2);
    OK(hurray_tensor_destroy(&t));
    CHECK(deletes == 2);

    /* Refusals consume the struct: the deleter has run once. */
    p.dl_tensor.data = src;
    p.version.major = 2;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_VERSION_MISMATCH && t == NULL);
    CHECK(deletes == 3);
    p.version.major = 1;
    p.dl_tensor.device.device_type = 2;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_UNSUPPORTED);
    CHECK(deletes == 4);
    p.dl_tensor.device.device_type = 1;
    p.dl_tensor.ndim = 40;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_LIMIT_EXCEEDED);
    CHECK(deletes == 5);
    p.dl_tensor.ndim = 2;
    shape[0] = -1;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_INVALID_SHAPE);
    CHECK(deletes == 6);
    shape[0] = 3;
    p.dl_tensor.dtype.lanes = 4;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_UNSUPPORTED);
    CHECK(deletes == 7);
    p.dl_tensor.dtype.lanes = 1;
    p.dl_tensor.byte_offset = (uint64_t)INT64_MAX - 4;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_LIMIT_EXCEEDED);
    CHECK(deletes == 8);
    p.dl_tensor.byte_offset = 0;
    p.dl_tensor.shape = NULL;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_INVALID_ARGUMENT);
    CHECK(deletes == 9);
    p.dl_tensor.shape = shape;
    p.dl_tensor.data = NULL;
    CHECK(hurray_dlpack_import(&p, &t) == HURRAY_ERR_INVALID_ARGUMENT);
    CHECK(deletes == 10);
    p.dl_tensor.data = src;
    CHECK(hurray_dlpack_import(NULL, &t) == HURRAY_ERR_NULL_POINTER);
    CHECK(hurray_dlpack_import(&p, NULL) == HURRAY_ERR_NULL_POINTER);
    CHECK(deletes == 10);

    /* The unversioned struct. */
    HurrayDLManagedTensor q;
    memset(&q, 0, sizeof q);
    q.deleter = producer_delete_legacy;
    q.dl_tensor = p.dl_tensor;
    q.dl_tensor.dtype.lanes = 1;
    OK(hurray_dlpack_import_legacy(&q, &t));
    OK(hurray_tensor_destroy(&t));
    CHECK(deletes == 11);

    free(src);
    free(data);
    printf("dlpack_test: ok\n");
    return 0;
}
