/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/stream_bench.c - task submission and completion on the software NPU
 * (empty host functions and 4-byte memsets on one and four streams) against a
 * plain bounded SPSC ring between two threads, and asynchronous copy bandwidth
 * (64 MiB pinned<->device, device<->device; a batch of 4096 x 4 KiB) against
 * memcpy of the same bytes, and the launch-to-start latency of a host function
 * and of a kernel on an idle stream against the same hand-off through a ring
 * to a futex-parked thread, all measured in the same run; and, on one stream,
 * the submitting thread's cost alone (tasks held behind a host function) and the
 * device threads' cost alone (draining them). Prints Markdown tables (the bench
 * harness of tests/benches/streams.rs re-prints them).
 *
 * usage: stream_bench [TASKS] [ROUNDS]
 * ACLRS_TEST_KERNELS names the kernel library of the kernel row (built from
 * tests/c/kernels/bench_kernels.c); without it the row is left out.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"

#define MIB ((size_t)1 << 20)
#define MAX_ROUNDS 32

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        aclError rc_ = (call);                                                                     \
        if (rc_ != ACL_SUCCESS) {                                                                  \
            const char *m_ = aclGetRecentErrMsg();                                                 \
            fprintf(stderr, "%s:%d: %s = %d: %s\n", __FILE__, __LINE__, #call, (int)rc_,           \
                    m_ ? m_ : "");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the floor: a bounded SPSC ring of 16-byte items between two threads ---- */
#define RING 1024
typedef struct {
    uint64_t a, b;
} Item;
static Item ring[RING];
static _Atomic size_t head, tail;
static size_t ring_items;

static void *ring_consumer(void *arg)
{
    size_t got = 0;
    uint64_t sum = 0;
    (void)arg;
    while (got < ring_items) {
        size_t t = atomic_load_explicit(&tail, memory_order_relaxed);
        if (t == atomic_load_explicit(&head, memory_order_acquire)) {
            continue;
        }
        sum += ring[t % RING].a;
        atomic_store_explicit(&tail, t + 1, memory_order_release);
        got++;
    }
    return (void *)(uintptr_t)(sum & 1);
}

static double ring_ns_per_item(size_t n)
{
    pthread_t c;
    size_t i;
    double t0;

    atomic_store(&head, 0);
    atomic_store(&tail, 0);
    ring_items = n;
    t0 = now();
    pthread_create(&c, NULL, ring_consumer, NULL);
    for (i = 0; i < n; i++) {
        size_t h = atomic_load_explicit(&head, memory_order_relaxed);
        while (h - atomic_load_explicit(&tail, memory_order_acquire) >= RING) {
        }
        ring[h % RING].a = i;
        ring[h % RING].b = i;
        atomic_store_explicit(&head, h + 1, memory_order_release);
    }
    pthread_join(c, NULL);
    return (now() - t0) * 1e9 / (double)n;
}

static void empty(void *arg)
{
    (void)arg;
}

/* ns per task: submit `n` tasks round-robin over `k` streams, then synchronise. */
static double tasks_ns(aclrtStream *s, int k, size_t n, int memset_kind, void *dev)
{
    size_t i;
    int j;
    double t0 = now();
    for (i = 0; i < n; i++) {
        aclrtStream st = s[i % (size_t)k];
        if (memset_kind) {
            TRY(aclrtMemsetAsync((char *)dev + (i % (size_t)k) * 64, 4, (int)i, 4, st));
        } else {
            TRY(aclrtLaunchHostFunc(st, empty, NULL));
        }
    }
    for (j = 0; j < k; j++) {
        TRY(aclrtSynchronizeStream(s[j]));
    }
    return (now() - t0) * 1e9 / (double)n;
}

/* ---- submission and completion apart: a host function holds stream `s` while `n` tasks
 * are submitted behind it (the submitting thread's cost alone, with nothing running), then
 * lets go; the stream then drains with no submitter (the device threads' cost alone, plus one
 * wake-up of the synchronising thread). `n` stays below the stream's depth (1024), so the
 * submitter never waits for room. ---- */
#define APART_TASKS 1000
static _Atomic int gate_open;

static void hold(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&gate_open, memory_order_acquire)) {
    }
}

static void apart(aclrtStream s, int memset_kind, void *dev, double *submit_ns, double *drain_ns)
{
    size_t i;
    double t0, t1;
    atomic_store(&gate_open, 0);
    TRY(aclrtLaunchHostFunc(s, hold, NULL));
    t0 = now();
    for (i = 0; i < APART_TASKS; i++) {
        if (memset_kind) {
            TRY(aclrtMemsetAsync(dev, 4, (int)i, 4, s));
        } else {
            TRY(aclrtLaunchHostFunc(s, empty, NULL));
        }
    }
    t1 = now();
    atomic_store_explicit(&gate_open, 1, memory_order_release);
    TRY(aclrtSynchronizeStream(s));
    *submit_ns = (t1 - t0) * 1e9 / APART_TASKS;
    *drain_ns = (now() - t1) * 1e9 / APART_TASKS;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return v[n / 2];
}

/* ---- launch-to-start latency: the time from the return of the launching call to the
 * first instruction of the function, on an idle stream (its device threads parked) ---- */
#define LAT_MAX 2000
#define LAT_IDLE_US 2000

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void idle_gap(void)
{
    struct timespec ts = { 0, LAT_IDLE_US * 1000L };
    nanosleep(&ts, NULL);
}

/* Where the launched function stores the CLOCK_MONOTONIC time of its first instruction: pinned
 * host memory (aclrtMallocHost), which a kernel may write, watched by the launching thread for
 * all three hand-offs alike. */
static _Atomic int64_t *started_at;

static void stamp(void *arg)
{
    int64_t t = now_ns();
    atomic_store((_Atomic int64_t *)arg, t);
}

/* The floor: a ring of {fn, arg} items to a consumer thread that parks on a futex as soon as
 * the ring is empty; the producer wakes it only when it is parked. */
typedef struct {
    void (*fn)(void *);
    void *arg;
} Call;
static Call fring[RING];
static _Atomic uint32_t fposted, fparked, fstop;

static void *futex_consumer(void *arg)
{
    uint32_t taken = 0;
    (void)arg;
    for (;;) {
        uint32_t v = atomic_load(&fposted);
        if (taken != v) {
            Call c = fring[taken % RING];
            c.fn(c.arg);
            taken++;
            continue;
        }
        if (atomic_load(&fstop)) {
            return NULL;
        }
        atomic_store(&fparked, 1);
        if (atomic_load(&fposted) == v && !atomic_load(&fstop)) {
            syscall(SYS_futex, &fposted, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
        }
        atomic_store(&fparked, 0);
    }
}

static void futex_post(void (*fn)(void *), void *arg)
{
    uint32_t v = atomic_load(&fposted);
    fring[v % RING].fn = fn;
    fring[v % RING].arg = arg;
    atomic_store(&fposted, v + 1);
    if (atomic_load(&fparked)) {
        syscall(SYS_futex, &fposted, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

/* The hand-offs measured: the floor, a host function, a kernel (the stamp_start kernel of
 * tests/c/kernels/bench_kernels.c, one block). */
enum { VIA_RING, VIA_HOST_FUNC, VIA_KERNEL, VIAS };

/* Latencies (ns) of `n` hand-offs after an idle gap each. Every hand-off is measured alike:
 * the time from the return of the posting call to the stamp, read by spinning on it; only then
 * does the launching thread synchronise the stream (so that its own waiting does not compete
 * with the start for a core). */
static void latencies(int via, aclrtStream s, aclrtFuncHandle kernel, int n, double *out)
{
    int i;
    for (i = 0; i < n; i++) {
        int64_t ret, start;
        idle_gap();
        atomic_store(started_at, 0);
        if (via == VIA_HOST_FUNC) {
            TRY(aclrtLaunchHostFunc(s, stamp, (void *)started_at));
        } else if (via == VIA_KERNEL) {
            void *args[1] = { (void *)started_at };
            TRY(aclrtLaunchKernel(kernel, 1, args, sizeof args, s));
        } else {
            futex_post(stamp, (void *)started_at);
        }
        ret = now_ns();
        while ((start = atomic_load(started_at)) == 0) {
        }
        if (via != VIA_RING) {
            TRY(aclrtSynchronizeStream(s));
        }
        /* A function that started before the call returned waited 0 ns. */
        out[i] = start > ret ? (double)(start - ret) : 0.0;
    }
}

static double pct(double *v, int n, int p)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return v[(n - 1) * p / 100];
}

/* `x / floor` as "N.NNx", or "- (floor 0)" when the floor is 0. */
static void ratio(char *out, size_t len, double x, double floor)
{
    if (floor > 0.0) {
        snprintf(out, len, "%.2fx", x / floor);
    } else {
        snprintf(out, len, "- (floor 0)");
    }
}

/* `kernel` may be NULL (ACLRS_TEST_KERNELS not set): then the kernel row is left out. */
static void launch_latency(aclrtStream s, aclrtFuncHandle kernel, int n)
{
    static double lat[VIAS][LAT_MAX];
    static const char *const what[VIAS] = {
        "ring + futex wake to a parked thread (the floor)",
        "aclrtLaunchHostFunc return to the function's start",
        "aclrtLaunchKernel return to the kernel's start (1 block)",
    };
    pthread_t c;
    double p50[VIAS], p99[VIAS];
    void *pinned = NULL;
    int i, via;

    TRY(aclrtMallocHost(&pinned, 64));
    started_at = (_Atomic int64_t *)pinned;
    atomic_store(&fposted, 0);
    atomic_store(&fstop, 0);
    pthread_create(&c, NULL, futex_consumer, NULL);
    /* Interleave the hand-offs in blocks so all see the same machine load. */
    for (i = 0; i < n; i += 10) {
        int k = n - i < 10 ? n - i : 10;
        for (via = 0; via < VIAS; via++) {
            if (via != VIA_KERNEL || kernel != NULL) {
                latencies(via, s, kernel, k, lat[via] + i);
            }
        }
    }
    atomic_store(&fstop, 1);
    futex_post(stamp, (void *)started_at);
    pthread_join(c, NULL);
    TRY(aclrtFreeHost(pinned));
    for (via = 0; via < VIAS; via++) {
        p50[via] = pct(lat[via], n, 50);
        p99[via] = pct(lat[via], n, 99);
    }
    printf("### Launch-to-start latency on an idle stream (%d launches, %d us apart)\n\n", n, LAT_IDLE_US);
    printf("| hand-off | p50 us | p99 us | floor p50 us | floor p99 us | p50 vs floor | p99 vs floor | target |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (via = 0; via < VIAS; via++) {
        if (via == VIA_KERNEL && kernel == NULL) {
            continue;
        }
        char r50[32], r99[32];
        /* A floor of 0 (its hand-off done before the posting call returned) has no ratio. */
        ratio(r50, sizeof r50, p50[via], p50[VIA_RING]);
        ratio(r99, sizeof r99, p99[via], p99[VIA_RING]);
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s |\n", what[via], p50[via] / 1e3, p99[via] / 1e3,
               p50[VIA_RING] / 1e3, p99[VIA_RING] / 1e3, r50, r99, via == VIA_RING ? "-" : "p50 <= 1.2x, p99 <= 3x");
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    size_t tasks = argc > 1 ? (size_t)atol(argv[1]) : 100000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    size_t big = 64 * MIB, i;
    aclrtStream s[4];
    void *dev = NULL, *d1 = NULL, *d2 = NULL, *p1 = NULL;
    char *h1, *h2;
    double v[MAX_ROUNDS], floor_ns;
    int r, k;

    if (rounds < 1 || rounds > MAX_ROUNDS) {
        return 2;
    }
    TRY(aclInit(NULL));
    TRY(aclrtSetDevice(0));
    for (k = 0; k < 4; k++) {
        TRY(aclrtCreateStream(&s[k]));
    }
    TRY(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));

    {
        static const char *const what[4] = {
            "aclrtLaunchHostFunc (empty), 1 stream",
            "aclrtLaunchHostFunc (empty), 4 streams",
            "aclrtMemsetAsync 4 bytes, 1 stream",
            "aclrtMemsetAsync 4 bytes, 4 streams",
        };
        static double row[4][MAX_ROUNDS], sub[2][MAX_ROUNDS], drn[2][MAX_ROUNDS];
        int c;
        for (c = 0; c < 4; c++) {
            (void)tasks_ns(s, (c % 2) ? 4 : 1, tasks / 10 + 1, c >= 2, dev); /* warm-up */
        }
        /* The floor and the four rows take turns round by round, so that each ratio is taken
         * over the same stretch of the run (where the host puts the two threads moves the
         * cross-thread floor several-fold from one stretch to another). */
        for (r = 0; r < rounds; r++) {
            v[r] = ring_ns_per_item(tasks);
            for (c = 0; c < 4; c++) {
                row[c][r] = tasks_ns(s, (c % 2) ? 4 : 1, tasks, c >= 2, dev);
            }
            for (c = 0; c < 2; c++) {
                apart(s[0], c, dev, &sub[c][r], &drn[c][r]);
            }
        }
        floor_ns = median(v, rounds);
        printf("### Task submission and completion on the software NPU (%zu tasks per round, median of %d rounds)\n\n",
               tasks, rounds);
        printf("| what | median ns/task | tasks/s | floor ns/item (SPSC ring, same run) | vs floor | target |\n");
        printf("|---|---|---|---|---|---|\n");
        printf("| bounded SPSC ring, push + pop across two threads (the floor) | %.1f | %.0f | %.1f | 1.0x | - |\n",
               floor_ns, 1e9 / floor_ns, floor_ns);
        for (c = 0; c < 4; c++) {
            double m = median(row[c], rounds);
            printf("| %s | %.1f | %.0f | %.1f | %.1fx | <= 10x |\n", what[c], m, 1e9 / m, floor_ns, m / floor_ns);
        }
        printf("\n### Submission and completion apart (1 stream, %d tasks held behind a host function, then drained; "
               "median of %d rounds)\n\n",
               APART_TASKS, rounds);
        printf("| task | submitting thread alone ns/task | vs floor (%.1f ns, same run) | device threads alone ns/task "
               "(drain, one wake-up included) |\n",
               floor_ns);
        printf("|---|---|---|---|\n");
        for (c = 0; c < 2; c++) {
            double sm = median(sub[c], rounds), dm = median(drn[c], rounds);
            printf("| %s | %.1f | %.1fx | %.1f |\n", c ? "aclrtMemsetAsync 4 bytes" : "aclrtLaunchHostFunc (empty)", sm,
                   sm / floor_ns, dm);
        }
    }
    printf("\n");

    {
        /* The kernel of the launch-to-start row (ACLRS_TEST_KERNELS: tests/c/kernels/bench_kernels.c). */
        const char *lib = getenv("ACLRS_TEST_KERNELS");
        aclrtBinHandle bin = NULL;
        aclrtFuncHandle kernel = NULL;
        if (lib != NULL) {
            TRY(aclrtBinaryLoadFromFile(lib, NULL, &bin));
            TRY(aclrtBinaryGetFunction(bin, "stamp_start", &kernel));
        }
        launch_latency(s[0], kernel, tasks >= 100000 ? 500 : 100);
        if (bin != NULL) {
            TRY(aclrtBinaryUnLoad(bin));
        }
    }

    /* ---- copy bandwidth ---- */
    h1 = malloc(big);
    h2 = malloc(big);
    if (h1 == NULL || h2 == NULL) {
        return 1;
    }
    memset(h1, 1, big);
    memset(h2, 2, big);
    TRY(aclrtMallocHost(&p1, big));
    TRY(aclrtMalloc(&d1, big, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclrtMalloc(&d2, big, ACL_MEM_MALLOC_HUGE_FIRST));
    memset(p1, 3, big);
    TRY(aclrtMemset(d1, big, 4, big));
    TRY(aclrtMemset(d2, big, 5, big));
    for (r = 0; r < rounds; r++) {
        double t0 = now();
        memcpy(h2, h1, big);
        v[r] = (double)big / (now() - t0) / 1e9;
        h1[r] = (char)r;
    }
    {
        double ref = median(v, rounds);
        static const char *const what[3] = {
            "aclrtMemcpyAsync pinned host-to-device + synchronize",
            "aclrtMemcpyAsync device-to-pinned host + synchronize",
            "aclrtMemcpyAsync device-to-device + synchronize",
        };
        int w;
        printf("### Asynchronous copies on the software NPU: bandwidth against memcpy (64 MiB, median of %d rounds)\n\n",
               rounds);
        printf("| copy | median GB/s | memcpy GB/s (same run) | vs memcpy | target |\n");
        printf("|---|---|---|---|---|\n");
        printf("| memcpy host-to-host (the floor) | %.2f | %.2f | 100.0%% | - |\n", ref, ref);
        for (w = 0; w < 3; w++) {
            for (r = 0; r < rounds; r++) {
                double t0 = now();
                if (w == 0) {
                    TRY(aclrtMemcpyAsync(d1, big, p1, big, ACL_MEMCPY_HOST_TO_DEVICE, s[0]));
                } else if (w == 1) {
                    TRY(aclrtMemcpyAsync(p1, big, d1, big, ACL_MEMCPY_DEVICE_TO_HOST, s[0]));
                } else {
                    TRY(aclrtMemcpyAsync(d2, big, d1, big, ACL_MEMCPY_DEVICE_TO_DEVICE, s[0]));
                }
                TRY(aclrtSynchronizeStream(s[0]));
                v[r] = (double)big / (now() - t0) / 1e9;
            }
            {
                double m = median(v, rounds);
                printf("| %s | %.2f | %.2f | %.1f%% | >= 90%% |\n", what[w], m, ref, 100.0 * m / ref);
            }
        }
    }

    /* ---- batch of 4096 x 4 KiB ---- */
    {
        enum { N = 4096, SZ = 4096 };
        static void *dsts[N], *srcs[N];
        static size_t maxs[N], sizes[N];
        size_t idx[1] = { 0 }, fail = 0;
        aclrtMemcpyBatchAttr attr;
        double ref;
        memset(&attr, 0, sizeof attr);
        attr.dstLoc.type = ACL_MEM_LOCATION_TYPE_DEVICE;
        attr.srcLoc.type = ACL_MEM_LOCATION_TYPE_HOST;
        for (i = 0; i < N; i++) {
            dsts[i] = (char *)d1 + i * SZ;
            srcs[i] = (char *)p1 + i * SZ;
            maxs[i] = SZ;
            sizes[i] = SZ;
        }
        for (r = 0; r < rounds; r++) {
            double t0 = now();
            for (i = 0; i < N; i++) {
                memcpy(h2 + i * SZ, h1 + i * SZ, SZ);
            }
            v[r] = (double)(N * SZ) / (now() - t0) / 1e9;
        }
        ref = median(v, rounds);
        for (r = 0; r < rounds; r++) {
            double t0 = now();
            TRY(aclrtMemcpyBatchAsync(dsts, maxs, srcs, sizes, N, &attr, idx, 1, &fail, s[0]));
            TRY(aclrtSynchronizeStream(s[0]));
            v[r] = (double)(N * SZ) / (now() - t0) / 1e9;
        }
        {
            double m = median(v, rounds);
            printf("| memcpy loop, 4096 x 4 KiB (the batch floor) | %.2f | %.2f | 100.0%% | - |\n", ref, ref);
            printf("| aclrtMemcpyBatchAsync 4096 x 4 KiB pinned host-to-device + synchronize | %.2f | %.2f | %.1f%% | >= 80%% |\n", m,
                   ref, 100.0 * m / ref);
        }
    }
    printf("\n");
    TRY(aclrtFree(d1));
    TRY(aclrtFree(d2));
    TRY(aclrtFreeHost(p1));
    TRY(aclrtFree(dev));
    for (k = 0; k < 4; k++) {
        TRY(aclrtDestroyStream(s[k]));
    }
    TRY(aclrtResetDevice(0));
    TRY(aclFinalize());
    free(h1);
    free(h2);
    return 0;
}
