/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/pools.c - stream-ordered memory pools through the C ABI: creation rules,
 * attributes, every reuse mode on and off against a gated kernel (a block is never handed to a
 * second stream while the first may still write it, unless a mode makes that safe), release
 * threshold and TrimTo arithmetic, stream-ordered frees of aclrtMalloc memory, destroy with
 * outstanding blocks, many threads on many streams, the custom allocator descriptors, and where
 * pool blocks live: in the device's slice of the stream-ordered pool window (12 TiB), not in
 * its device window (16 TiB), and still device memory to every API that classifies a pointer.
 *
 * Needs ACLRS_TEST_KERNELS = the shared object built from tests/c/kernels/pool_kernels.c.
 *
 * Ordering is never decided by time: a "gated" kernel sits behind an aclrtValueWait on a
 * device word that only release_gate() writes, so its block is provably still in use until
 * the test opens the gate, on any machine.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define MIB ((size_t)1 << 20)

typedef struct {
    uint32_t *p;
    uint64_t n;
    uint32_t value;
    uint32_t ms;
} FillArgs;

static aclrtFuncHandle g_fill;

static uint64_t attr64(aclrtMemPool pool, aclrtMemPoolAttr a)
{
    uint64_t v = 0xdeadbeef;
    aclrtMemPoolGetAttr(pool, a, &v);
    return v;
}

static void set_modes(aclrtMemPool pool, uint32_t ev, uint32_t opp, uint32_t internal)
{
    aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES, &ev);
    aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC, &opp);
    aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &internal);
}

/* Launches slow_fill(p, n words, value) on stream s, sleeping ms first. */
static aclError launch_fill(void *p, size_t bytes, uint32_t value, uint32_t ms, aclrtStream s)
{
    FillArgs a;
    a.p = (uint32_t *)p;
    a.n = bytes / 4;
    a.value = value;
    a.ms = ms;
    return aclrtLaunchKernelV2(g_fill, 4, &a, sizeof a, NULL, s);
}

/* The device word the gated kernels wait for, and the value that opened it last. */
static void *g_gate;
static uint64_t g_opened;

/* Launches slow_fill(p, n words, value) on stream s behind the gate: s waits until the next
 * release_gate() before the kernel starts. */
static aclError launch_gated_fill(void *p, size_t bytes, uint32_t value, aclrtStream s)
{
    aclError rc = aclrtValueWait(g_gate, g_opened + 1, ACL_STREAM_WAIT_VALUE_GEQ, s);
    return rc != ACL_SUCCESS ? rc : launch_fill(p, bytes, value, 0, s);
}

/* Opens the gate for every gated kernel launched so far. */
static void release_gate(void)
{
    uint64_t v = g_opened + 1;
    if (CHECK_OK(aclrtMemcpy(g_gate, sizeof v, &v, sizeof v, ACL_MEMCPY_HOST_TO_DEVICE))) {
        g_opened = v;
    }
}

/* A thread that opens the gate once the main thread says it is about to block. */
static volatile int g_blocking;
static void *release_when_blocking(void *arg)
{
    (void)arg;
    CHECK_OK(aclrtSetDevice(0)); /* the current device is per thread */
    while (!g_blocking) {
        sched_yield();
    }
    release_gate();
    CHECK_OK(aclrtResetDevice(0));
    return NULL;
}

/* Whether all `bytes` at device address p hold the word `value`. */
static int holds(void *p, size_t bytes, uint32_t value)
{
    uint32_t *h = malloc(bytes);
    size_t i;
    int ok;
    if (h == NULL) {
        return 0;
    }
    ok = aclrtMemcpy(h, bytes, p, bytes, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS;
    for (i = 0; ok && i < bytes / 4; i++) {
        ok = h[i] == value;
    }
    if (!ok && bytes >= 4) {
        printf("        first word %#x, expected %#x\n", h[0], value);
    }
    free(h);
    return ok;
}

static void creation_and_attributes(void)
{
    aclrtMemPoolProps props;
    aclrtMemPool pool = NULL;
    uint32_t v32 = 5;
    uint64_t v64 = 0;
    void *p = (void *)0x1;
    aclrtStream s = NULL;

    check_section("creation rules");
    memset(&props, 0, sizeof props);
    props.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    props.maxSize = 64 * MIB;
    CHECK_FAIL(aclrtMemPoolCreate(NULL, &props), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemPoolCreate(&pool, NULL), ACL_ERROR_INVALID_PARAM);
    props.allocType = (aclrtMemAllocationType)1;
    CHECK_FAIL(aclrtMemPoolCreate(&pool, &props), ACL_ERROR_INVALID_PARAM);
    props.allocType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = ACL_MEM_LOCATION_TYPE_HOST;
    CHECK_FAIL(aclrtMemPoolCreate(&pool, &props), ACL_ERROR_INVALID_PARAM);
    props.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    props.reserved[31] = 1;
    CHECK_FAIL(aclrtMemPoolCreate(&pool, &props), ACL_ERROR_INVALID_PARAM);
    props.reserved[31] = 0;
    props.location.id = 7;
    CHECK_FAIL(aclrtMemPoolCreate(&pool, &props), ACL_ERROR_RT_INVALID_DEVICEID);
    props.location.id = 0;
    props.maxSize = (size_t)1 << 40;
    CHECK_FAIL(aclrtMemPoolCreate(&pool, &props), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(pool == NULL);
    props.maxSize = 0;
    if (CHECK_OK(aclrtMemPoolCreate(&pool, &props))) {
        CHECK_OK(aclrtMemPoolDestroy(pool));
    }
    CHECK_FAIL(aclrtMemPoolDestroy(pool), ACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_FAIL(aclrtMemPoolDestroy(NULL), ACL_ERROR_INVALID_PARAM);

    check_section("attributes");
    pool = check_new_pool(2 * MIB - 1);
    if (!CHECK(pool != NULL)) {
        return;
    }
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD) == 0);
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT) == 0);
    v32 = 7;
    CHECK_OK(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC, &v32));
    CHECK(v32 == 1); /* on by default, as in CUDA */
    v32 = 5;
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES, &v32));
    v32 = 0;
    CHECK_OK(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES, &v32));
    CHECK(v32 == 1); /* any non-zero value is stored as 1 */
    v64 = 2 * MIB;
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD, &v64));
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD) == 2 * MIB);
    v64 = 2 * MIB + 1; /* maxSize 2 MiB - 1 was rounded up to 2 MiB */
    CHECK_FAIL(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD, &v64), ACL_ERROR_RT_INTERNAL_ERROR);
    v64 = 0;
    CHECK_FAIL(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT, &v64), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT, &v64), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH, &v64));
    v64 = 1;
    CHECK_FAIL(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH, &v64), ACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_FAIL(aclrtMemPoolSetAttr(pool, (aclrtMemPoolAttr)0xFF, &v64), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemPoolGetAttr(pool, (aclrtMemPoolAttr)0, &v64), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH, NULL), ACL_ERROR_INVALID_PARAM);

    check_section("MallocAsync arguments");
    if (CHECK_OK(aclrtCreateStream(&s))) {
        CHECK_OK(aclrtMemPoolMallocAsync(&p, 0, pool, s));
        CHECK(p == (void *)0x1); /* size 0: nothing written */
        CHECK_FAIL(aclrtMemPoolMallocAsync(&p, 64, pool, NULL), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtMemPoolMallocAsync(NULL, 64, pool, s), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtMemPoolMallocAsync(&p, 64, NULL, s), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtMemPoolMallocAsync(&p, SIZE_MAX - 100, pool, s), ACL_ERROR_RT_PARAM_INVALID);
        if (CHECK_OK(aclrtMemPoolMallocAsync(&p, 1, pool, s))) {
            CHECK(((uintptr_t)p % 512) == 0);
            CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT) == 512);
            CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT) == 2 * MIB);
            /* The pool is 2 MiB: a second 2 MiB block does not fit. */
            CHECK_FAIL(aclrtMemPoolMallocAsync(&p, 2 * MIB, pool, s), ACL_ERROR_RT_INTERNAL_ERROR);
            CHECK_FAIL(aclrtMemPoolFreeAsync((char *)p + 8, s), ACL_ERROR_RT_PARAM_INVALID);
            CHECK_OK(aclrtMemPoolFreeAsync(p, s));
            CHECK_FAIL(aclrtMemPoolFreeAsync(p, s), ACL_ERROR_RT_PARAM_INVALID);
            CHECK_FAIL(aclrtMemPoolFreeAsync(p, NULL), ACL_ERROR_INVALID_PARAM);
            CHECK_FAIL(aclrtMemPoolFreeAsync(NULL, s), ACL_ERROR_INVALID_PARAM);
        }
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK_OK(aclrtDestroyStream(s));
    }
    CHECK_OK(aclrtMemPoolDestroy(pool));
    /* A destroyed pool: CANN's code for an unknown pool. */
    CHECK_FAIL(aclrtMemPoolMallocAsync(&p, 64, pool, s), ACL_ERROR_RT_INTERNAL_ERROR);
}

/*
 * The reuse modes. Stream A runs a gated kernel that writes 0xAAAAAAAA over block X once the
 * test opens the gate, and frees X right after launching it. Stream B then asks for a block of
 * X's size while the kernel provably has not run.
 */
static void reuse_modes(void)
{
    const size_t SZ = 4 * MIB;
    aclrtStream a = NULL, b = NULL;
    aclrtEvent ev = NULL;
    aclrtMemPool pool = check_new_pool(64 * MIB);
    void *x = NULL, *y = NULL;

    if (!CHECK(pool != NULL) || !CHECK_OK(aclrtCreateStream(&a)) || !CHECK_OK(aclrtCreateStream(&b)) ||
        !CHECK_OK(aclrtCreateEvent(&ev))) {
        return;
    }

    check_section("same stream: immediate reuse, in stream order");
    set_modes(pool, 0, 0, 0);
    CHECK_OK(aclrtMemPoolMallocAsync(&x, SZ, pool, a));
    CHECK_OK(launch_gated_fill(x, SZ, 0xAAAAAAAAu, a));
    CHECK_OK(aclrtMemPoolFreeAsync(x, a));
    CHECK_OK(aclrtMemPoolMallocAsync(&y, SZ, pool, a));
    CHECK(y == x);
    CHECK_OK(aclrtMemsetAsync(y, SZ, 0x11, SZ, a));
    release_gate();
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK(holds(y, SZ, 0x11111111u)); /* the memset ran after the kernel, in stream order */
    CHECK_OK(aclrtMemPoolFreeAsync(y, a));
    CHECK_OK(aclrtSynchronizeStream(a));

    check_section("no mode: another stream never gets a block still in use");
    CHECK_OK(aclrtMemPoolMallocAsync(&x, SZ, pool, a));
    CHECK_OK(launch_gated_fill(x, SZ, 0xAAAAAAAAu, a));
    CHECK_OK(aclrtMemPoolFreeAsync(x, a));
    CHECK_OK(aclrtMemPoolMallocAsync(&y, SZ, pool, b));
    CHECK(y != NULL && ((char *)y >= (char *)x + SZ || (char *)y + SZ <= (char *)x));
    CHECK_OK(aclrtMemPoolFreeAsync(y, b));
    release_gate();
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtSynchronizeStream(b));

    check_section("opportunistic: only once the free has completed");
    set_modes(pool, 0, 1, 0);
    CHECK_OK(aclrtMemPoolMallocAsync(&x, SZ, pool, a));
    CHECK_OK(launch_gated_fill(x, SZ, 0xAAAAAAAAu, a));
    CHECK_OK(aclrtMemPoolFreeAsync(x, a));
    CHECK_OK(aclrtMemPoolMallocAsync(&y, SZ, pool, b));
    CHECK(y != x); /* A's free cannot have completed: its kernel has not started */
    CHECK_OK(aclrtMemPoolFreeAsync(y, b));
    release_gate();
    CHECK_OK(aclrtSynchronizeStream(a));
    {
        void *z = NULL;
        CHECK_OK(aclrtMemPoolMallocAsync(&z, SZ, pool, b));
        CHECK(z == x || z == y); /* either block is free now; best fit by address */
        CHECK_OK(aclrtMemPoolFreeAsync(z, b));
    }
    CHECK_OK(aclrtSynchronizeStream(b));

    check_section("event dependency: B waits on an event recorded after A's free");
    set_modes(pool, 1, 0, 0);
    CHECK_OK(aclrtMemPoolMallocAsync(&x, SZ, pool, a));
    CHECK_OK(launch_gated_fill(x, SZ, 0xAAAAAAAAu, a));
    CHECK_OK(aclrtMemPoolFreeAsync(x, a));
    CHECK_OK(aclrtRecordEvent(ev, a));
    CHECK_OK(aclrtStreamWaitEvent(b, ev));
    CHECK_OK(aclrtMemPoolMallocAsync(&y, SZ, pool, b));
    CHECK(y == x);
    CHECK_OK(aclrtMemsetAsync(y, SZ, 0x22, SZ, b));
    /* B cannot finish while A's kernel is gated (a correct runtime always times out here). */
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(b, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    release_gate();
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(holds(y, SZ, 0x22222222u)); /* B's memset ran after A's kernel */
    CHECK_OK(aclrtMemPoolFreeAsync(y, b));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtSynchronizeStream(b));

    check_section("internal dependency: the pool makes B wait for A itself");
    set_modes(pool, 0, 0, 1);
    CHECK_OK(aclrtMemPoolMallocAsync(&x, SZ, pool, a));
    CHECK_OK(launch_gated_fill(x, SZ, 0xAAAAAAAAu, a));
    CHECK_OK(aclrtMemPoolFreeAsync(x, a));
    CHECK_OK(aclrtMemPoolMallocAsync(&y, SZ, pool, b));
    CHECK(y == x);
    CHECK_OK(aclrtMemsetAsync(y, SZ, 0x33, SZ, b));
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(b, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    release_gate();
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(holds(y, SZ, 0x33333333u)); /* without the inserted wait, A's kernel would win */
    CHECK_OK(aclrtMemPoolFreeAsync(y, b));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtSynchronizeStream(b));

    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_OK(aclrtDestroyEvent(ev));
    CHECK_OK(aclrtDestroyStream(a));
    CHECK_OK(aclrtDestroyStream(b));
}

static size_t hbm_free(void)
{
    size_t f = 0, t = 0;
    aclrtGetMemInfo(ACL_HBM_MEM, &f, &t);
    return f;
}

static void threshold_trim_and_plain_frees(void)
{
    aclrtStream s = NULL;
    aclrtMemPool pool = check_new_pool(64 * MIB);
    void *p[4], *q = NULL, *d = NULL;
    size_t base, i;
    uint64_t v;

    if (!CHECK(pool != NULL) || !CHECK_OK(aclrtCreateStream(&s))) {
        return;
    }
    base = hbm_free();

    check_section("release threshold at synchronize");
    v = 8 * MIB;
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD, &v));
    for (i = 0; i < 4; i++) {
        CHECK_OK(aclrtMemPoolMallocAsync(&p[i], 4 * MIB, pool, s));
    }
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT) == 16 * MIB);
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT) == 16 * MIB);
    CHECK(base - hbm_free() == 16 * MIB);
    for (i = 0; i < 4; i++) {
        CHECK_OK(aclrtMemPoolFreeAsync(p[i], s));
    }
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT) == 0);
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT) == 16 * MIB); /* not before a sync */
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT) == 8 * MIB);
    CHECK(base - hbm_free() == 8 * MIB);
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH) == 16 * MIB);
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH) == 16 * MIB);

    check_section("TrimTo takes precedence over the threshold");
    CHECK_OK(aclrtMemPoolMallocAsync(&q, 2 * MIB, pool, s));
    CHECK_FAIL(aclrtMemPoolTrimTo(pool, MIB), ACL_ERROR_RT_INTERNAL_ERROR);      /* below used */
    CHECK_FAIL(aclrtMemPoolTrimTo(pool, 65 * MIB), ACL_ERROR_RT_INTERNAL_ERROR); /* above size */
    CHECK_OK(aclrtMemPoolTrimTo(pool, 64 * MIB));                                /* no-op */
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT) == 8 * MIB);
    CHECK_OK(aclrtMemPoolFreeAsync(q, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtMemPoolTrimTo(pool, 0));
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT) == 0);
    CHECK(hbm_free() == base);
    v = 0;
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH, &v));
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH) == 0);

    check_section("aclrtMemPoolFreeAsync of aclrtMalloc memory frees it in stream order");
    if (CHECK_OK(aclrtMalloc(&d, 8 * MIB, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK_OK(launch_gated_fill(d, 8 * MIB, 0x44444444u, s));
        CHECK_OK(aclrtMemPoolFreeAsync(d, s));
        CHECK_FAIL(aclrtMemPoolFreeAsync(d, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtFree(d), ACL_ERROR_RT_PARAM_INVALID); /* its free is pending */
        CHECK(base - hbm_free() >= 8 * MIB); /* still held: the kernel has not run */
        release_gate();
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK(hbm_free() == base);
        CHECK_FAIL(aclrtFree(d), ACL_ERROR_RT_PARAM_INVALID);
    }
    CHECK_FAIL(aclrtMemPoolFreeAsync((void *)&v, s), ACL_ERROR_RT_PARAM_INVALID);

    check_section("aclrtFreeWithDevSync / aclrtFreeHostWithDevSync wait for the device's tasks");
    if (CHECK_OK(aclrtMalloc(&d, 8 * MIB, ACL_MEM_MALLOC_HUGE_FIRST))) {
        void *h = NULL;
        aclrtStreamStatus st = ACL_STREAM_STATUS_NOT_READY;
        pthread_t opener;
        /* The gate opens only once this thread is about to block in the call. */
        CHECK_OK(launch_gated_fill(d, 8 * MIB, 0x66666666u, s));
        g_blocking = 0;
        pthread_create(&opener, NULL, release_when_blocking, NULL);
        g_blocking = 1;
        CHECK_OK(aclrtFreeWithDevSync(d)); /* returns only after the kernel ran */
        pthread_join(opener, NULL);
        CHECK_OK(aclrtStreamQuery(s, &st));
        CHECK(st == ACL_STREAM_STATUS_COMPLETE);
        CHECK(hbm_free() == base);
        CHECK_FAIL(aclrtFreeWithDevSync(d), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtFreeWithDevSync(NULL), ACL_ERROR_INVALID_PARAM);
        if (CHECK_OK(aclrtMallocHost(&h, 4096)) && CHECK_OK(aclrtMalloc(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST))) {
            CHECK_OK(aclrtMemcpyAsync(d, 4096, h, 4096, ACL_MEMCPY_HOST_TO_DEVICE, s));
            CHECK_OK(launch_gated_fill(d, 4096, 1, s));
            g_blocking = 0;
            pthread_create(&opener, NULL, release_when_blocking, NULL);
            g_blocking = 1;
            CHECK_OK(aclrtFreeHostWithDevSync(h));
            pthread_join(opener, NULL);
            CHECK_OK(aclrtStreamQuery(s, &st));
            CHECK(st == ACL_STREAM_STATUS_COMPLETE);
            CHECK_FAIL(aclrtFreeHostWithDevSync(h), ACL_ERROR_RT_PARAM_INVALID);
            CHECK_FAIL(aclrtFreeHostWithDevSync(d), ACL_ERROR_RT_PARAM_INVALID);
            CHECK_OK(aclrtFree(d));
        }
    }

    check_section("destroy with an outstanding block, and aclrtFree of pool memory");
    CHECK_OK(aclrtMemPoolMallocAsync(&q, 3 * MIB, pool, s));
    CHECK_OK(aclrtMemPoolMallocAsync(&d, 1000, pool, s));
    CHECK_OK(aclrtFree(d)); /* a pool block freed with aclrtFree goes back at once */
    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_FAIL(aclrtMemPoolTrimTo(pool, 0), ACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_OK(aclrtMemset(q, 3 * MIB, 0x55, 3 * MIB)); /* still valid */
    CHECK(holds(q, 3 * MIB, 0x55555555u));
    CHECK_OK(aclrtMemPoolFreeAsync(q, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(hbm_free() == base); /* nothing leaked */
    pool = check_new_pool(0);
    CHECK(pool != NULL);
    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_OK(aclrtDestroyStream(s));
}

#define TIB ((uint64_t)1 << 40)
#define GIB ((uint64_t)1 << 30)

/*
 * Pool blocks lie in device 0's 64 GiB slice of the pool window [12 TiB, 16 TiB) (moved up, with
 * every window, by the layout's shift, which an aclrtMalloc pointer tells: device windows span
 * 8 TiB from 16 TiB and the layout moves in steps of 32 TiB), and are device memory there.
 */
static void pool_window_addresses(void)
{
    const uint64_t shift = ((uint64_t)(uintptr_t)g_gate - 16 * TIB) / (32 * TIB) * (32 * TIB);
    const uint64_t slice = 12 * TIB + shift;
    aclrtMemPool pool = check_new_pool(64 * MIB);
    aclrtStream s = NULL;
    aclrtPtrAttributes attr;
    void *blk = NULL, *dev = NULL, *stray = (void *)(uintptr_t)(slice + 64 * GIB - 4096);
    char key[65];
    uint32_t *h = malloc(MIB);

    check_section("pool blocks live in the device's slice of the pool window");
    if (!CHECK(pool != NULL) || !CHECK(h != NULL) || !CHECK_OK(aclrtCreateStream(&s))) {
        free(h);
        return;
    }
    CHECK((uint64_t)(uintptr_t)g_gate >= 16 * TIB + shift); /* aclrtMalloc: the device window */
    if (CHECK_OK(aclrtMemPoolMallocAsync(&blk, MIB, pool, s)) && CHECK_OK(aclrtSynchronizeStream(s))) {
        uint64_t a = (uint64_t)(uintptr_t)blk;
        printf("        block at %#llx, pool slice of device 0 from %#llx\n", (unsigned long long)a,
               (unsigned long long)slice);
        CHECK(a >= slice && a + MIB <= slice + 64 * GIB);
        memset(&attr, 0xff, sizeof attr);
        CHECK_OK(aclrtPointerGetAttributes(blk, &attr));
        CHECK(attr.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && attr.location.id == 0);
        /* Memset, both copy directions and a device-to-device copy reach it. */
        CHECK_OK(aclrtMemset(blk, MIB, 0x5A, MIB));
        CHECK(holds(blk, MIB, 0x5A5A5A5Au));
        memset(h, 0x3C, MIB);
        CHECK_OK(aclrtMemcpy(blk, MIB, h, MIB, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK(holds(blk, MIB, 0x3C3C3C3Cu));
        if (CHECK_OK(aclrtMalloc(&dev, MIB, ACL_MEM_MALLOC_HUGE_FIRST))) {
            CHECK_OK(aclrtMemcpy(dev, MIB, blk, MIB, ACL_MEMCPY_DEVICE_TO_DEVICE));
            CHECK(holds(dev, MIB, 0x3C3C3C3Cu));
            CHECK_OK(aclrtMemset(dev, MIB, 0x11, MIB));
            CHECK_OK(aclrtMemcpyAsync(blk, MIB, dev, MIB, ACL_MEMCPY_DEFAULT, s));
            CHECK_OK(aclrtSynchronizeStream(s));
            CHECK(holds(blk, MIB, 0x11111111u));
            CHECK_OK(aclrtFree(dev));
        }
        /* Bad inputs: a copy from the host kind, past the block, an IPC key, freeing as host. */
        CHECK_FAIL(aclrtMemcpy(blk, MIB, h, MIB, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemset(blk, 2 * MIB, 0, 2 * MIB), ACL_ERROR_RT_PARAM_INVALID);
        memset(key, 0, sizeof key);
        CHECK_FAIL(aclrtIpcMemGetExportKey(blk, MIB, key, sizeof key, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT),
                   ACL_ERROR_RT_PARAM_INVALID);
        CHECK(key[0] == '\0');
        CHECK_FAIL(aclrtFreeHost(blk), ACL_ERROR_RT_PARAM_INVALID);
        CHECK(holds(blk, MIB, 0x11111111u)); /* unchanged by the refusals */
        CHECK_OK(aclrtMemPoolFreeAsync(blk, s));
    }
    /* The slice's last page holds no segment: not memory, though the runtime's VA. */
    CHECK_FAIL(aclrtMemcpy(stray, 4096, h, 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemset(stray, 4096, 0, 4096), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_OK(aclrtDestroyStream(s));
    free(h);
}

/* Many threads, each with two streams, allocating, tagging, checking and freeing at once. */
typedef struct {
    aclrtMemPool pool;
    int id;
    int failures;
} Worker;

static void *worker(void *arg)
{
    Worker *w = arg;
    aclrtStream s[2] = {NULL, NULL};
    unsigned seed = (unsigned)w->id * 7919u + 1u;
    int i;
    uint8_t *host = malloc(256 * 1024);

    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&s[0]) != ACL_SUCCESS ||
        aclrtCreateStream(&s[1]) != ACL_SUCCESS || host == NULL) {
        printf("        worker %d: set-up failed: %s\n", w->id, aclGetRecentErrMsg());
        w->failures++;
        free(host);
        return NULL;
    }
    for (i = 0; i < 150; i++) {
        aclrtStream st = s[i % 2];
        size_t size = 512 + (size_t)(rand_r(&seed) % (256 * 1024 - 512));
        uint8_t tag = (uint8_t)(w->id * 16 + (i % 16) + 1);
        void *p = NULL;
        size_t k;
        if (aclrtMemPoolMallocAsync(&p, size, w->pool, st) != ACL_SUCCESS) {
            printf("        worker %d, block %d: malloc failed: %s\n", w->id, i, aclGetRecentErrMsg());
            w->failures++;
            continue;
        }
        if (aclrtMemsetAsync(p, size, tag, size, st) != ACL_SUCCESS ||
            aclrtMemcpyAsync(host, size, p, size, ACL_MEMCPY_DEVICE_TO_HOST, st) != ACL_SUCCESS ||
            aclrtSynchronizeStream(st) != ACL_SUCCESS) {
            printf("        worker %d, block %d: %s\n", w->id, i, aclGetRecentErrMsg());
            w->failures++;
        }
        for (k = 0; k < size; k++) {
            if (host[k] != tag) {
                printf("        worker %d, block %d at %p (%zu B): byte %zu is %u, not %u\n", w->id, i, p,
                       size, k, host[k], tag);
                w->failures++;
                break;
            }
        }
        aclrtMemPoolFreeAsync(p, st);
    }
    aclrtSynchronizeStream(s[0]);
    aclrtSynchronizeStream(s[1]);
    aclrtDestroyStream(s[0]);
    aclrtDestroyStream(s[1]);
    aclrtResetDevice(0);
    free(host);
    return NULL;
}

static void threads(void)
{
    enum { N = 6 };
    pthread_t t[N];
    Worker w[N];
    aclrtMemPool pool = check_new_pool(256 * MIB);
    int i, failures = 0;

    check_section("6 threads x 2 streams: tagged blocks never overlap");
    if (!CHECK(pool != NULL)) {
        return;
    }
    for (i = 0; i < N; i++) {
        w[i].pool = pool;
        w[i].id = i;
        w[i].failures = 0;
        pthread_create(&t[i], NULL, worker, &w[i]);
    }
    for (i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
    }
    printf("        %d tag mismatches or failed calls\n", failures);
    CHECK(failures == 0);
    CHECK(attr64(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT) == 0);
    CHECK_OK(aclrtMemPoolDestroy(pool));
}

static void *my_alloc(aclrtAllocator a, size_t n) { (void)a; (void)n; return NULL; }
static void my_free(aclrtAllocator a, aclrtAllocatorBlock b) { (void)a; (void)b; }
static void *my_advise(aclrtAllocator a, size_t n, aclrtAllocatorAddr p) { (void)a; (void)n; return p; }
static void *my_addr(aclrtAllocatorBlock b) { return b; }

static void allocator_descriptors(void)
{
    aclrtAllocatorDesc desc = aclrtAllocatorCreateDesc();
    aclrtStream s = NULL;
    aclrtAllocatorDesc od = NULL;
    aclrtAllocator oa = NULL;
    aclrtAllocatorAllocFunc of = NULL;
    aclrtAllocatorFreeFunc ofr = NULL;
    aclrtAllocatorAllocAdviseFunc oad = NULL;
    aclrtAllocatorGetAddrFromBlockFunc oga = NULL;
    int obj = 42;

    check_section("custom allocator descriptors");
    if (!CHECK(desc != NULL) || !CHECK_OK(aclrtCreateStream(&s))) {
        return;
    }
    CHECK_OK(aclrtAllocatorSetObjToDesc(desc, &obj));
    CHECK_OK(aclrtAllocatorSetAllocFuncToDesc(desc, my_alloc));
    CHECK_OK(aclrtAllocatorSetFreeFuncToDesc(desc, my_free));
    CHECK_FAIL(aclrtAllocatorRegister(s, desc), ACL_ERROR_INVALID_PARAM); /* no get-address callback */
    CHECK_OK(aclrtAllocatorSetGetAddrFromBlockFuncToDesc(desc, my_addr));
    CHECK_OK(aclrtAllocatorSetAllocAdviseFuncToDesc(desc, my_advise));
    CHECK_FAIL(aclrtAllocatorSetAllocFuncToDesc(NULL, my_alloc), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtAllocatorRegister(NULL, desc), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtAllocatorRegister(s, desc));
    CHECK_OK(aclrtAllocatorGetByStream(s, &od, &oa, &of, &ofr, &oad, &oga));
    CHECK(od == desc && oa == &obj && of == my_alloc && ofr == my_free && oad == my_advise && oga == my_addr);
    CHECK_FAIL(aclrtAllocatorGetByStream(s, NULL, &oa, &of, &ofr, &oad, &oga), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtAllocatorUnregister(s));
    CHECK_OK(aclrtAllocatorUnregister(s));
    CHECK_FAIL(aclrtAllocatorGetByStream(s, &od, &oa, &of, &ofr, &oad, &oga), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtAllocatorDestroyDesc(desc));
    CHECK_FAIL(aclrtAllocatorDestroyDesc(desc), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtDestroyStream(s));
}

int main(void)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtBinHandle bin = NULL;

    printf("pools: stream-ordered memory pools\n");
    if (!CHECK(lib != NULL) || !CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("pools");
    }
    if (!CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin)) ||
        !CHECK_OK(aclrtBinaryGetFunction(bin, "slow_fill", &g_fill))) {
        return check_summary("pools");
    }
    if (!CHECK_OK(aclrtMalloc(&g_gate, 64, ACL_MEM_MALLOC_HUGE_FIRST)) ||
        !CHECK_OK(aclrtMemset(g_gate, 64, 0, 64))) {
        return check_summary("pools");
    }
    creation_and_attributes();
    reuse_modes();
    threshold_trim_and_plain_frees();
    pool_window_addresses();
    threads();
    allocator_descriptors();
    CHECK_OK(aclrtFree(g_gate));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("pools");
}
