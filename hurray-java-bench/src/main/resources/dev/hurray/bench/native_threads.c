/*
 * Native side of ReleaseUpcallCost: destroys buffer handles on a thread the JVM did not start,
 * so that the release upcall runs on a thread the JVM must attach first. Compiled with gcc (or
 * $CC) by NativeThreads when the benchmark starts.
 */
#include <pthread.h>
#include <stdint.h>

typedef int32_t (*slot_fn)(void **slot);

struct batch {
    slot_fn fn;
    void **handles;
    int64_t n;
};

static void *batch_main(void *p) {
    struct batch *b = p;
    for (int64_t i = 0; i < b->n; i++) {
        b->fn(&b->handles[i]);
    }
    return NULL;
}

/* Destroys handles[0..n) with fn, one after another, on one new native thread; -1000 if the
 * thread could not be started. */
int32_t bench_destroy_all_on_new_thread(slot_fn fn, void **handles, int64_t n) {
    struct batch b = {fn, handles, n};
    pthread_t t;
    if (pthread_create(&t, NULL, batch_main, &b) != 0) {
        return -1000;
    }
    pthread_join(t, NULL);
    return 0;
}
