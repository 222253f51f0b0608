/*
 * Native side of the interop tests (ExternalBufferTest, TensorContextTest, DLPackTest):
 * a helper that runs a destroy function on a thread the JVM did not start, and a DLPack 1.x
 * consumer and producer. The DLPack structs below are written from the DLPack specification's
 * field list (docs/spec/dlpack.md), not copied from its header. Compiled with gcc by the tests.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- running a `int32_t f(void **slot)` destroy function on a new pthread ---- */

typedef int32_t (*slot_fn)(void **slot);

struct job {
    slot_fn fn;
    void **slot;
    int32_t rc;
};

static void *job_main(void *p) {
    struct job *j = p;
    j->rc = j->fn(j->slot);
    return NULL;
}

/* Calls fn(slot) on a new native thread and joins it; returns fn's result (or -1000 if the
 * thread could not be started). */
int32_t interop_call_on_new_thread(slot_fn fn, void **slot) {
    struct job j = {fn, slot, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, job_main, &j) != 0) {
        return -1000;
    }
    pthread_join(t, NULL);
    return j.rc;
}

/* ---- DLPack 1.x, from the specification ---- */

typedef struct {
    uint32_t major;
    uint32_t minor;
} dl_version;

typedef struct {
    int32_t device_type;
    int32_t device_id;
} dl_device;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dl_dtype;

typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* elements; NULL means compact row-major */
    uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
    dl_version version;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *self);
    uint64_t flags;
    dl_tensor tensor;
} dl_managed;

struct delete_job {
    dl_managed *m;
};

static void *delete_main(void *p) {
    dl_managed *m = ((struct delete_job *)p)->m;
    m->deleter(m);
    return NULL;
}

/* Reads the struct into out[0..]: major, minor, flags, ndim, code, bits, lanes, device_type,
 * byte_offset, sizeof(dl_managed), offsetof(dl_managed, tensor), then ndim shapes and ndim
 * strides (0 when strides is NULL). Returns the sum of the float32 (code 2, bits 32) elements
 * walked with strides and byte_offset (0 for another dtype). Then calls the deleter: mode 0
 * not at all, 1 on this thread, 2 on a new native thread. */
double interop_dlpack_consume(dl_managed *m, int64_t *out, int deleter_mode) {
    dl_tensor *t = &m->tensor;
    int n = 0;
    out[n++] = m->version.major;
    out[n++] = m->version.minor;
    out[n++] = (int64_t)m->flags;
    out[n++] = t->ndim;
    out[n++] = t->dtype.code;
    out[n++] = t->dtype.bits;
    out[n++] = t->dtype.lanes;
    out[n++] = t->device.device_type;
    out[n++] = (int64_t)t->byte_offset;
    out[n++] = (int64_t)sizeof(dl_managed);
    out[n++] = (int64_t)((char *)&m->tensor - (char *)m);
    for (int i = 0; i < t->ndim; i++) {
        out[n++] = t->shape[i];
    }
    for (int i = 0; i < t->ndim; i++) {
        out[n++] = t->strides ? t->strides[i] : 0;
    }
    double sum = 0;
    if (t->dtype.code == 2 && t->dtype.bits == 32 && t->dtype.lanes == 1) {
        int64_t count = 1;
        for (int i = 0; i < t->ndim; i++) {
            count *= t->shape[i];
        }
        int64_t idx[64] = {0};
        const char *base = (const char *)t->data + t->byte_offset;
        for (int64_t e = 0; e < count; e++) {
            int64_t off = 0;
            int64_t stride = 1;
            for (int i = t->ndim - 1; i >= 0; i--) {
                off += idx[i] * (t->strides ? t->strides[i] : stride);
                stride *= t->shape[i];
            }
            float v;
            memcpy(&v, base + off * 4, 4);
            sum += v;
            for (int i = t->ndim - 1; i >= 0; i--) {
                if (++idx[i] < t->shape[i]) {
                    break;
                }
                idx[i] = 0;
            }
        }
    }
    if (deleter_mode == 1 && m->deleter) {
        m->deleter(m);
    } else if (deleter_mode == 2 && m->deleter) {
        struct delete_job j = {m};
        pthread_t th;
        if (pthread_create(&th, NULL, delete_main, &j) == 0) {
            pthread_join(th, NULL);
        }
    }
    return sum;
}

/* A producer: a 1-D float32 tensor of n elements (value i + 0.5 at element i) placed
 * byte_offset bytes after data; data is 64-byte aligned unless misalign is set (then 16 bytes
 * past an aligned address). The deleter adds 1 to *counter (atomically) and frees everything. */
struct producer {
    dl_managed m;
    int64_t shape[1];
    int64_t strides[1];
    void *alloc;
    int32_t *counter;
};

static void producer_delete(dl_managed *self) {
    struct producer *p = (struct producer *)self;
    __atomic_fetch_add(p->counter, 1, __ATOMIC_SEQ_CST);
    free(p->alloc);
    free(p);
}

dl_managed *interop_dlpack_make_f32(int64_t n, uint64_t byte_offset, int misalign, uint32_t major, int32_t *counter) {
    struct producer *p = calloc(1, sizeof *p);
    size_t bytes = (size_t)(byte_offset + (uint64_t)n * 4 + 16);
    size_t rounded = (bytes + 63) / 64 * 64;
    p->alloc = aligned_alloc(64, rounded);
    char *data = (char *)p->alloc + (misalign ? 16 : 0);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)i + 0.5f;
        memcpy(data + byte_offset + i * 4, &v, 4);
    }
    p->shape[0] = n;
    p->strides[0] = 1;
    p->counter = counter;
    p->m.version.major = major;
    p->m.version.minor = 1;
    p->m.manager_ctx = p;
    p->m.deleter = producer_delete;
    p->m.flags = 0;
    p->m.tensor.data = data;
    p->m.tensor.device.device_type = 1;
    p->m.tensor.device.device_id = 0;
    p->m.tensor.ndim = 1;
    p->m.tensor.dtype.code = 2;
    p->m.tensor.dtype.bits = 32;
    p->m.tensor.dtype.lanes = 1;
    p->m.tensor.shape = p->shape;
    p->m.tensor.strides = p->strides;
    p->m.tensor.byte_offset = byte_offset;
    return &p->m;
}

void interop_free(void *p) {
    free(p);
}
