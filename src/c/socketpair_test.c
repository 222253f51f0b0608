/*
 * Runs the C writer and the C reader (docs/spec/c-abi.md §Reading and writing a stream) over
 * a real socketpair(2):
 *   1. a writer process sends EXPECTED; the reader checks every tensor and the clean end;
 *   2. a writer thread is cut mid-item (its transport fails): the writer is poisoned and
 *      the reader sees HURRAY_ERR_TRUNCATED after the complete tensors;
 *   3. (optional) argv[1]: a stream file, e.g. a golden vector, read to its end; argv[2]: the
 *      tensor count it must hold.
 * Exit status 0 on success.
 */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expected.h"

_Static_assert(HURRAY_OK == 0, "success is 0");
_Static_assert(HURRAY_END_OF_STREAM > 0, "end of stream is positive: not an error");
_Static_assert(HURRAY_ERR_TRUNCATED < 0 && HURRAY_ERR_TRANSPORT < 0 && HURRAY_ERR_POISONED < 0 &&
                   HURRAY_ERR_SINK_CLOSED < 0 && HURRAY_ERR_CORRUPT < 0 && HURRAY_ERR_NULL_POINTER < 0 &&
                   HURRAY_ERR_INVALID_MAGIC < 0 && HURRAY_ERR_INTERNAL_PANIC < 0,
               "every error is negative");
_Static_assert(HURRAY_C_ABI_VERSION == 4, "this test is written against ABI version 4");

static void small_buffers(int fd) {
    /* Small socket buffers make short reads and short writes the normal case. */
    int size = 4096;
    CHECK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size) == 0);
    CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) == 0);
}

static void process_writer_and_reader(void) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    small_buffers(sv[0]);
    small_buffers(sv[1]);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        int r = write_expected_stream(sv[1], 0);
        close(sv[1]);
        _exit(r == 0 ? 0 : 3);
    }
    close(sv[1]);
    HurrayStatus s = HURRAY_OK;
    size_t n = read_expected_stream(sv[0], &s);
    close(sv[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STATUS(s, HURRAY_END_OF_STREAM);
    CHECK(n == EXPECTED_COUNT);
    printf("socketpair, writer process: %zu tensors, then HURRAY_END_OF_STREAM (%d)\n", n, (int)s);
}

typedef struct cut_writer {
    int fd;
    size_t stop_after;
    int poisoned;
} cut_writer;

static void *cut_writer_main(void *arg) {
    cut_writer *w = arg;
    w->poisoned = write_expected_stream(w->fd, w->stop_after);
    close(w->fd);
    return NULL;
}

static void thread_writer_cut_mid_item(void) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    /* Every tensor before the big last one is well under 16 KiB; 100000 bytes cuts its payload. */
    cut_writer w = {sv[1], 100000, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, cut_writer_main, &w) == 0);
    HurrayStatus s = HURRAY_OK;
    size_t n = read_expected_stream(sv[0], &s);
    CHECK(pthread_join(thread, NULL) == 0);
    close(sv[0]);
    CHECK(w.poisoned == 1);
    CHECK(s < 0);
    CHECK_STATUS(s, HURRAY_ERR_TRUNCATED);
    CHECK(n == EXPECTED_COUNT - 1);
    printf("socketpair, writer thread cut mid-item: %zu tensors, then %s (%d)\n", n, hurray_status_name(s), (int)s);
}

static void read_file(const char *path, const char *want) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); exit(1); }
    HurrayStatus s = HURRAY_OK;
    size_t n = read_any_stream(fd, &s);
    close(fd);
    CHECK_STATUS(s, HURRAY_END_OF_STREAM);
    if (want) CHECK(n == (size_t)strtoul(want, NULL, 10));
    printf("%s: %zu tensors, every buffer aligned\n", path, n);
}

int main(int argc, char **argv) {
    CHECK(hurray_c_abi_version() == HURRAY_C_ABI_VERSION);
    process_writer_and_reader();
    thread_writer_cut_mid_item();
    if (argc > 1) read_file(argv[1], argc > 2 ? argv[2] : NULL);
    return 0;
}
