/*
 * HRRYFILE from C (docs/spec/hrryfile.md): a container written through a `write` callback
 * into a file, read back through `read_at`/`size` with pread, and through the span reader
 * over an mmap of the file, where a tensor's buffer address must lie inside the mapping
 * (zero copy), and through the library's own reads of the path (hurray_file_reader_open_path),
 * with its refusals of bad paths and files. Then the same over a sparse file above 4 GiB.
 * Usage: file_test TMPDIR
 */
#define _FILE_OFFSET_BITS 64
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hurray.h"

/* The buffer getters: declared here with the exact prototypes cbindgen emits, for header
 * revisions that predate their move out of a macro (a compatible redeclaration otherwise). */
HurrayStatus hurray_buffer_data_ptr(const struct HurrayBuffer *buffer, void **out);
HurrayStatus hurray_buffer_byte_size(const struct HurrayBuffer *buffer, uint64_t *out);

static int failures = 0;

#define CHECK(call)                                                                              \
  do {                                                                                           \
    HurrayStatus s_ = (call);                                                                    \
    if (s_ != HURRAY_OK) {                                                                       \
      char m_[512];                                                                              \
      hurray_last_error_message(m_, sizeof m_, NULL);                                            \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, hurray_status_name(s_), m_); \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

#define EXPECT(cond)                                                                             \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                       \
      failures++;                                                                                \
    }                                                                                            \
  } while (0)

#define EXPECT_STATUS(call, want)                                                                \
  do {                                                                                           \
    HurrayStatus s_ = (call);                                                                    \
    if (s_ != (want)) {                                                                          \
      fprintf(stderr, "%s:%d: %s -> %s, expected %s\n", __FILE__, __LINE__, #call,              \
              hurray_status_name(s_), hurray_status_name(want));                                 \
      failures++;                                                                                \
    }                                                                                            \
  } while (0)

/* ---- transports ---- */

/* A file sink. Writes whose bytes lie inside [hole_lo, hole_hi) are known to be zeros and
 * become seeks, so a huge zero tensor leaves a hole instead of using disk. */
typedef struct {
  int fd;
  uintptr_t hole_lo, hole_hi;
  uint64_t seeked;
  int released;
} FileSink;

static HurrayStatus sink_write(void *ctx, const uint8_t *src, size_t len, size_t *out) {
  FileSink *s = ctx;
  uintptr_t a = (uintptr_t)src;
  if (s->hole_hi != 0 && a >= s->hole_lo && a + len <= s->hole_hi) {
    if (lseek(s->fd, (off_t)len, SEEK_CUR) < 0) { *out = 0; return HURRAY_ERR_TRANSPORT; }
    s->seeked += len;
    *out = len;
    return HURRAY_OK;
  }
  ssize_t n = write(s->fd, src, len);
  if (n < 0) { *out = 0; return HURRAY_ERR_TRANSPORT; } /* moved nothing */
  *out = (size_t)n;
  return HURRAY_OK;
}

static void sink_release(void *ctx) { ((FileSink *)ctx)->released++; }

/* pread/fstat source that counts calls and can fail the next call on request. */
typedef struct {
  int fd;
  uint64_t calls;
  int fail_next;
  int released;
} FileSource;

static HurrayStatus src_read_at(void *ctx, uint64_t offset, uint8_t *dst, size_t len, size_t *out) {
  FileSource *s = ctx;
  if (s->fail_next) { s->fail_next = 0; *out = 0; return HURRAY_ERR_TRANSPORT; }
  s->calls++;
  ssize_t n = pread(s->fd, dst, len, (off_t)offset);
  if (n < 0) { *out = 0; return HURRAY_ERR_TRANSPORT; }
  *out = (size_t)n; /* short counts are fine: Hurray loops */
  return HURRAY_OK;
}

static HurrayStatus src_size(void *ctx, uint64_t *out) {
  struct stat st;
  if (fstat(((FileSource *)ctx)->fd, &st) != 0) return HURRAY_ERR_TRANSPORT;
  *out = (uint64_t)st.st_size;
  return HURRAY_OK;
}

static void src_release(void *ctx) { ((FileSource *)ctx)->released++; }

/* ---- helpers ---- */

/* A row-major descriptor named `name`; with `align` != 0 its one buffer declares that alignment. */
static HurrayDescriptor *make_desc(uint8_t dtype, const uint64_t *dims, size_t rank, const char *name, uint32_t align) {
  HurrayDescriptorBuilder *b = NULL;
  HurrayDescriptor *d = NULL;
  CHECK(hurray_descriptor_builder_new(dtype, dims, rank, &b));
  CHECK(hurray_descriptor_builder_set_name(b, name, strlen(name)));
  if (align != 0) {
    uint64_t bytes = 1;
    for (size_t i = 0; i < rank; i++) bytes *= dims[i];
    HurrayBufferSpec spec = {.byte_size = bytes, .alignment = align, .device_tag = HURRAY_DEVICE_CPU,
                             .sync_mode = HURRAY_SYNC_PRODUCER_SYNCED, .reserved = 0};
    CHECK(hurray_descriptor_builder_add_buffer(b, &spec));
  }
  CHECK(hurray_descriptor_builder_build(b, &d));
  CHECK(hurray_descriptor_builder_destroy(&b));
  return d;
}

static void fill(uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 131u + seed);
}

/* Pointer and size of buffer 0 of a tensor. */
static const uint8_t *buffer0(HurrayTensor *t, uint64_t *size, bool *zero_copy) {
  HurrayBufferList *list = NULL;
  HurrayBuffer *b = NULL;
  void *data = NULL;
  CHECK(hurray_tensor_buffers(t, &list));
  CHECK(hurray_buffer_list_get(list, 0, &b));
  CHECK(hurray_buffer_data_ptr(b, &data));
  CHECK(hurray_buffer_byte_size(b, size));
  CHECK(hurray_file_buffer_is_zero_copy(b, zero_copy));
  return data;
}

typedef struct {
  const char *name;
  uint64_t n;
  uint32_t align;
  unsigned seed;
  uint8_t *payload;
} Sample;

/* ---- part 1 and 2: write, read through pread, read through mmap ---- */

/* hurray_file_reader_open_path on bad arguments and bad files: a status, a message, no reader. */
static void path_refusals(const char *dir, const char *good, uint64_t size) {
  HurrayFileReader *r = NULL;
  char p[4096];
  EXPECT_STATUS(hurray_file_reader_open_path(NULL, 5, NULL, &r), HURRAY_ERR_NULL_POINTER);
  EXPECT_STATUS(hurray_file_reader_open_path((const uint8_t *)good, strlen(good), NULL, NULL), HURRAY_ERR_NULL_POINTER);
  EXPECT_STATUS(hurray_file_reader_open_path(NULL, 0, NULL, &r), HURRAY_ERR_INVALID_ARGUMENT);
  snprintf(p, sizeof p, "%s/missing.hrry", dir);
  EXPECT_STATUS(hurray_file_reader_open_path((const uint8_t *)p, strlen(p), NULL, &r), HURRAY_ERR_NOT_FOUND);
  char m[512];
  hurray_last_error_message(m, sizeof m, NULL);
  EXPECT(strstr(m, "missing.hrry") != NULL);
  EXPECT_STATUS(hurray_file_reader_open_path((const uint8_t *)dir, strlen(dir), NULL, &r), HURRAY_ERR_INVALID_ARGUMENT);
  /* The first half of the container: its trailer is gone. Then fewer bytes than a header
   * and a trailer, then none. */
  int in = open(good, O_RDONLY);
  uint8_t *bytes = malloc(size);
  EXPECT(in >= 0 && pread(in, bytes, size, 0) == (ssize_t)size);
  close(in);
  const uint64_t cuts[3] = {size / 2, 40, 0};
  const HurrayStatus want[3] = {HURRAY_ERR_INVALID_MAGIC, HURRAY_ERR_TRUNCATED, HURRAY_ERR_TRUNCATED};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/cut%d.hrry", dir, i);
    int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    EXPECT(fd >= 0 && write(fd, bytes, cuts[i]) == (ssize_t)cuts[i]);
    close(fd);
    EXPECT_STATUS(hurray_file_reader_open_path((const uint8_t *)p, strlen(p), NULL, &r), want[i]);
    unlink(p);
  }
  free(bytes);
  EXPECT(r == NULL);
}

static void small_container(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/small.hrry", dir);
  Sample samples[] = {
      {"weights", 64 * 32 * 4, 64, 1, NULL},
      {"page.aligned", 10000, 4096, 2, NULL},
      {"bias", 32 * 4, 0, 3, NULL},
  };
  const size_t count = sizeof samples / sizeof samples[0];

  int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
  EXPECT(fd >= 0);
  FileSink sink = {.fd = fd};
  HurrayTransport wt = {.ctx = &sink, .write = sink_write, .release = sink_release};
  HurrayFileWriter *w = NULL;
  CHECK(hurray_file_writer_new(&wt, NULL, &w));
  for (size_t i = 0; i < count; i++) {
    Sample *s = &samples[i];
    s->payload = malloc(s->n);
    fill(s->payload, s->n, s->seed);
    uint64_t dims[1] = {s->n};
    HurrayDescriptor *d = make_desc(HURRAY_DTYPE_UINT8, dims, 1, s->name, s->align);
    HurrayIoSlice slice = {.ptr = s->payload, .len = s->n};
    CHECK(hurray_file_writer_add_tensor(w, d, &slice, 1));
    EXPECT_STATUS(hurray_file_writer_add_tensor(w, d, &slice, 1), HURRAY_ERR_DUPLICATE_NAME);
    hurray_descriptor_destroy(d);
  }
  const char *key = "model", *value = "test-model";
  CHECK(hurray_file_writer_set_metadata(w, (const uint8_t *)key, strlen(key), (const uint8_t *)value, strlen(value)));
  uint64_t size = 0, written = 0, tensors = 0;
  CHECK(hurray_file_writer_tensor_count(w, &tensors));
  EXPECT(tensors == count);
  CHECK(hurray_file_writer_finish(w, &size));
  CHECK(hurray_file_writer_bytes_written(w, &written));
  EXPECT(written == size);
  CHECK(hurray_file_writer_destroy(&w));
  EXPECT(w == NULL && sink.released == 1);
  struct stat st;
  fstat(fd, &st);
  EXPECT((uint64_t)st.st_size == size);

  /* Through read_at/size with pread. */
  FileSource src = {.fd = fd};
  HurrayTransport rt = {.ctx = &src, .read_at = src_read_at, .size = src_size, .release = src_release};
  HurrayFileReader *r = NULL;
  src.fail_next = 1;
  EXPECT_STATUS(hurray_file_reader_open(&rt, NULL, &r), HURRAY_ERR_TRANSPORT);
  EXPECT(r == NULL && src.released == 0);
  CHECK(hurray_file_reader_open(&rt, NULL, &r)); /* a failed call is simply repeated */
  uint64_t n = 0, calls = 0;
  CHECK(hurray_file_reader_count(r, &n));
  CHECK(hurray_file_reader_read_at_calls(r, &calls));
  EXPECT(n == count);
  EXPECT(calls == 2 && src.calls == 2); /* the last 4 KiB (trailer, small index), the header */
  for (size_t i = 0; i < count; i++) {
    Sample *s = &samples[i];
    HurrayFileEntry *e = NULL;
    CHECK(hurray_file_reader_find(r, (const uint8_t *)s->name, strlen(s->name), &e));
    HurrayFileBufferLocation loc;
    CHECK(hurray_file_entry_buffer(e, 0, &loc));
    EXPECT(loc.length == s->n && loc.offset % loc.alignment == 0);
    EXPECT(loc.flags == HURRAY_FILE_BUFFER_HAS_CRC);
    HurrayTensor *t = NULL;
    src.fail_next = 1;
    EXPECT_STATUS(hurray_file_reader_read_tensor(r, e, &t), HURRAY_ERR_TRANSPORT);
    CHECK(hurray_file_reader_read_tensor(r, e, &t));
    uint64_t bsize = 0;
    bool zc = true;
    const uint8_t *p = buffer0(t, &bsize, &zc);
    EXPECT(bsize == s->n && memcmp(p, s->payload, s->n) == 0);
    EXPECT(((uintptr_t)p) % loc.alignment == 0);
    EXPECT(!zc);
    CHECK(hurray_tensor_destroy(&t));
    CHECK(hurray_file_entry_destroy(&e));
  }
  HurrayFileEntry *missing = NULL;
  EXPECT_STATUS(hurray_file_reader_find(r, (const uint8_t *)"nope", 4, &missing), HURRAY_ERR_NOT_FOUND);
  const uint8_t *v = NULL;
  uint64_t vlen = 0;
  CHECK(hurray_file_reader_metadata_find(r, (const uint8_t *)key, strlen(key), &v, &vlen));
  EXPECT(vlen == strlen(value) && memcmp(v, value, vlen) == 0);
  CHECK(hurray_file_reader_verify(r));
  CHECK(hurray_file_reader_destroy(&r));
  EXPECT(src.released == 1);

  /* Through the library's own positional reads of the path: no transport at all. */
  CHECK(hurray_file_reader_open_path((const uint8_t *)path, strlen(path), NULL, &r));
  CHECK(hurray_file_reader_count(r, &n));
  CHECK(hurray_file_reader_read_at_calls(r, &calls));
  EXPECT(n == count && calls == 2); /* the same two reads as through read_at */
  for (size_t i = 0; i < count; i++) {
    Sample *s = &samples[i];
    HurrayFileEntry *e = NULL;
    CHECK(hurray_file_reader_find(r, (const uint8_t *)s->name, strlen(s->name), &e));
    HurrayTensor *t = NULL;
    CHECK(hurray_file_reader_read_tensor(r, e, &t));
    uint64_t bsize = 0;
    bool zc = true;
    const uint8_t *p = buffer0(t, &bsize, &zc);
    EXPECT(bsize == s->n && memcmp(p, s->payload, s->n) == 0 && !zc);
    CHECK(hurray_tensor_destroy(&t));
    CHECK(hurray_file_entry_destroy(&e));
  }
  CHECK(hurray_file_reader_destroy(&r));
  EXPECT(r == NULL);
  path_refusals(dir, path, size);

  /* Through the span reader over a memory map: buffers point into the mapping. */
  uint8_t *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  EXPECT(map != MAP_FAILED);
  CHECK(hurray_file_reader_open_span(map, size, NULL, &r));
  HurrayTensor *kept[3] = {NULL, NULL, NULL};
  for (size_t i = 0; i < count; i++) {
    HurrayFileEntry *e = NULL;
    CHECK(hurray_file_reader_find(r, (const uint8_t *)samples[i].name, strlen(samples[i].name), &e));
    CHECK(hurray_file_reader_read_tensor(r, e, &kept[i]));
    CHECK(hurray_file_entry_destroy(&e));
  }
  CHECK(hurray_file_reader_destroy(&r)); /* tensors borrow the mapping, not the reader */
  for (size_t i = 0; i < count; i++) {
    uint64_t bsize = 0;
    bool zc = false;
    const uint8_t *p = buffer0(kept[i], &bsize, &zc);
    EXPECT(zc);
    EXPECT(p >= map && p + bsize <= map + size); /* zero copy: inside the mapped range */
    EXPECT(memcmp(p, samples[i].payload, samples[i].n) == 0);
    CHECK(hurray_tensor_destroy(&kept[i]));
  }
  munmap(map, size);
  for (size_t i = 0; i < count; i++) free(samples[i].payload);

  /* A writer destroyed before finish leaves no container. */
  int fd2 = open(path, O_TRUNC | O_RDWR);
  FileSink sink2 = {.fd = fd2};
  HurrayTransport wt2 = {.ctx = &sink2, .write = sink_write};
  CHECK(hurray_file_writer_new(&wt2, NULL, &w));
  uint64_t dims[1] = {100000};
  HurrayDescriptor *d = make_desc(HURRAY_DTYPE_UINT8, dims, 1, "partial", 0);
  uint8_t *big = calloc(1, dims[0]);
  HurrayIoSlice slice = {.ptr = big, .len = dims[0]};
  CHECK(hurray_file_writer_add_tensor(w, d, &slice, 1));
  CHECK(hurray_file_writer_destroy(&w));
  hurray_descriptor_destroy(d);
  free(big);
  FileSource src2 = {.fd = fd2};
  HurrayTransport rt2 = {.ctx = &src2, .read_at = src_read_at, .size = src_size};
  EXPECT_STATUS(hurray_file_reader_open(&rt2, NULL, &r), HURRAY_ERR_INVALID_MAGIC);
  close(fd2);
  close(fd);
  unlink(path);
  printf("small container: %llu bytes, pread and mmap round trips ok\n", (unsigned long long)size);
}

/* ---- part 3: beyond 4 GiB in a sparse file ---- */

static void large_container(const char *dir) {
  const uint64_t big = (4ull << 30) + (256ull << 20);
  uint8_t *zeros = calloc(1, big); /* lazily zeroed pages; never touched */
  if (zeros == NULL) {
    fprintf(stderr, "large container: cannot reserve %llu bytes of address space\n", (unsigned long long)big);
    failures++;
    return;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/large.hrry", dir);
  int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
  FileSink sink = {.fd = fd, .hole_lo = (uintptr_t)zeros, .hole_hi = (uintptr_t)zeros + big};
  HurrayTransport wt = {.ctx = &sink, .write = sink_write};
  HurrayFileWriterOptions wo;
  CHECK(hurray_file_writer_options_init(&wo));
  wo.flags = HURRAY_FILE_WRITER_NO_PAYLOAD_CHECKSUMS; /* a checksum would read every page */
  wo.min_payload_alignment = 4096;
  HurrayFileWriter *w = NULL;
  CHECK(hurray_file_writer_new(&wt, &wo, &w));
  uint64_t dz[1] = {big}, ds[1] = {12345};
  HurrayDescriptor *dzd = make_desc(HURRAY_DTYPE_UINT8, dz, 1, "zeros", 0);
  HurrayDescriptor *dsd = make_desc(HURRAY_DTYPE_UINT8, ds, 1, "zz.beyond", 0);
  uint8_t *small = malloc(ds[0]);
  fill(small, ds[0], 7);
  HurrayIoSlice sz = {.ptr = zeros, .len = big}, ss = {.ptr = small, .len = ds[0]};
  CHECK(hurray_file_writer_add_tensor(w, dzd, &sz, 1));
  CHECK(hurray_file_writer_add_tensor(w, dsd, &ss, 1));
  uint64_t size = 0;
  CHECK(hurray_file_writer_finish(w, &size));
  CHECK(hurray_file_writer_destroy(&w));
  hurray_descriptor_destroy(dzd);
  hurray_descriptor_destroy(dsd);
  free(zeros);
  EXPECT(sink.seeked == big);
  EXPECT(size > (4ull << 30));

  FileSource src = {.fd = fd};
  HurrayTransport rt = {.ctx = &src, .read_at = src_read_at, .size = src_size};
  HurrayFileReader *r = NULL;
  CHECK(hurray_file_reader_open(&rt, NULL, &r));
  HurrayFileEntry *e = NULL;
  CHECK(hurray_file_reader_find(r, (const uint8_t *)"zz.beyond", 9, &e));
  HurrayFileBufferLocation loc;
  CHECK(hurray_file_entry_buffer(e, 0, &loc));
  EXPECT(loc.offset > (4ull << 30));
  HurrayTensor *t = NULL;
  CHECK(hurray_file_reader_read_tensor(r, e, &t));
  uint64_t bsize = 0;
  bool zc = true;
  const uint8_t *p = buffer0(t, &bsize, &zc);
  EXPECT(bsize == ds[0] && memcmp(p, small, ds[0]) == 0);
  CHECK(hurray_tensor_destroy(&t));
  CHECK(hurray_file_entry_destroy(&e));
  CHECK(hurray_file_reader_destroy(&r));

  /* The library's own pread, past 4 GiB. */
  CHECK(hurray_file_reader_open_path((const uint8_t *)path, strlen(path), NULL, &r));
  CHECK(hurray_file_reader_find(r, (const uint8_t *)"zz.beyond", 9, &e));
  CHECK(hurray_file_reader_read_tensor(r, e, &t));
  p = buffer0(t, &bsize, &zc);
  EXPECT(bsize == ds[0] && memcmp(p, small, ds[0]) == 0);
  CHECK(hurray_tensor_destroy(&t));
  CHECK(hurray_file_entry_destroy(&e));
  CHECK(hurray_file_reader_destroy(&r));

  uint8_t *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  EXPECT(map != MAP_FAILED);
  CHECK(hurray_file_reader_open_span(map, size, NULL, &r));
  CHECK(hurray_file_reader_find(r, (const uint8_t *)"zz.beyond", 9, &e));
  CHECK(hurray_file_reader_read_tensor(r, e, &t));
  p = buffer0(t, &bsize, &zc);
  EXPECT(zc && p == map + loc.offset); /* in place, past 4 GiB into the mapping */
  EXPECT(memcmp(p, small, ds[0]) == 0);
  CHECK(hurray_tensor_destroy(&t));
  CHECK(hurray_file_entry_destroy(&e));
  CHECK(hurray_file_reader_find(r, (const uint8_t *)"zeros", 5, &e));
  CHECK(hurray_file_reader_read_tensor(r, e, &t)); /* 4.25 GiB, zero copy, nothing touched */
  p = buffer0(t, &bsize, &zc);
  EXPECT(zc && bsize == big && p >= map && p + bsize <= map + size);
  CHECK(hurray_tensor_destroy(&t));
  CHECK(hurray_file_entry_destroy(&e));
  CHECK(hurray_file_reader_destroy(&r));
  munmap(map, size);
  struct stat st;
  fstat(fd, &st);
  printf("large container: %llu bytes (%llu KiB on disk), tensor at offset %llu read by pread and in place by mmap\n",
         (unsigned long long)size, (unsigned long long)st.st_blocks / 2, (unsigned long long)loc.offset);
  free(small);
  close(fd);
  unlink(path);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s TMPDIR\n", argv[0]);
    return 2;
  }
  if (hurray_c_abi_version() != HURRAY_C_ABI_VERSION) {
    fprintf(stderr, "ABI version mismatch\n");
    return 1;
  }
  small_container(argv[1]);
  large_container(argv[1]);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("file_test: all passed\n");
  return 0;
}
