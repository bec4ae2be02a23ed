/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/streams.c - streams, events, host functions, callbacks, kernels and
 * asynchronous memory operations on the software NPU. The kernel library
 * (tests/c/kernels/sim_kernels.c) is built by the test; its path is in
 * ACLRS_TEST_KERNELS.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "acl/acl_sim.h"
#include "check.h"

typedef struct {
    int32_t *p;
    uint32_t ms;
} SlowArgs;

static aclrtFuncHandle slow_inc, fail_k;

/* Host-function log: each call appends its tag. */
static int log_buf[64];
static int log_len;
static void log_tag(void *arg)
{
    log_buf[log_len++] = (int)(intptr_t)arg;
}

static void launch_slow(int32_t *dev, uint32_t ms, uint32_t blocks, aclrtStream s)
{
    SlowArgs a;
    a.p = dev;
    a.ms = ms;
    CHECK_OK(aclrtLaunchKernelV2(slow_inc, blocks, &a, sizeof a, NULL, s));
}

static void ordering_across_kinds(void)
{
    aclrtStream s;
    int32_t *dev = NULL, host[4] = { 0 };
    void *pinned = NULL;
    aclrtEvent ev;

    check_section("every task kind runs in stream order");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtMalloc((void **)&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMallocHost(&pinned, 64));
    CHECK_OK(aclrtCreateEvent(&ev));
    log_len = 0;
    CHECK_OK(aclrtMemsetAsync(dev, 64, 0, 64, s));
    CHECK_OK(aclrtLaunchHostFunc(s, log_tag, (void *)1));
    launch_slow(dev, 30, 1, s); /* dev[0] = 1 after 30 ms */
    CHECK_OK(aclrtRecordEvent(ev, s));
    CHECK_OK(aclrtMemcpyAsync(pinned, 64, dev, 16, ACL_MEMCPY_DEVICE_TO_HOST, s));
    CHECK_OK(aclrtLaunchHostFunc(s, log_tag, (void *)2));
    CHECK_OK(aclrtMemsetD32Async(dev, 64, 7u, 4, s));
    CHECK_OK(aclrtValueWrite(dev + 8, 99, 0, s));
    CHECK_OK(aclrtLaunchHostFunc(s, log_tag, (void *)3));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(log_len == 3 && log_buf[0] == 1 && log_buf[1] == 2 && log_buf[2] == 3);
    CHECK(((int32_t *)pinned)[0] == 1); /* the copy saw the kernel's result */
    CHECK_OK(aclrtMemcpy(host, sizeof host, dev, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(host[0] == 7 && host[3] == 7);
    CHECK_OK(aclrtMemcpy(host, 8, dev + 8, 8, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(host[0] == 99 && host[1] == 0);
    CHECK_OK(aclrtDestroyEvent(ev));
    CHECK_OK(aclrtFreeHost(pinned));
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStream(s));
}

static void cross_stream_wait_and_query(void)
{
    aclrtStream a, b;
    aclrtEvent ev, start, end;
    int32_t *dev = NULL;
    void *pinned = NULL;
    aclrtStreamStatus st = ACL_STREAM_STATUS_RESERVED;
    aclrtEventRecordedStatus es = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    float ms = -1.0f;

    check_section("a gated kernel on A, a wait on B: B's copy sees A's result");
    CHECK_OK(aclrtCreateStream(&a));
    CHECK_OK(aclrtCreateStream(&b));
    CHECK_OK(aclrtCreateEvent(&ev));
    CHECK_OK(aclrtCreateEvent(&start));
    CHECK_OK(aclrtCreateEvent(&end));
    CHECK_OK(aclrtMalloc((void **)&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMallocHost(&pinned, 64));
    CHECK_OK(aclrtMemset(dev, 64, 0, 64));
    CHECK_OK(aclrtQueryEventStatus(ev, &es));
    CHECK(es == ACL_EVENT_RECORDED_STATUS_NOT_READY); /* never recorded */
    CHECK_OK(aclrtRecordEvent(start, a));
    /* A's kernel starts only when the test writes 1 to dev[8] (a gate), so A and ev are
     * provably unfinished until then, on any machine; it then sleeps 200 ms for the elapsed
     * time below. */
    CHECK_OK(aclrtValueWait(dev + 8, 1, ACL_STREAM_WAIT_VALUE_EQ, a));
    launch_slow(dev, 200, 4, a);
    CHECK_OK(aclrtRecordEvent(ev, a));
    CHECK_OK(aclrtRecordEvent(end, a));
    CHECK_OK(aclrtStreamWaitEvent(b, ev));
    CHECK_OK(aclrtMemcpyAsync(pinned, 64, dev, 16, ACL_MEMCPY_DEVICE_TO_HOST, b));
    CHECK_OK(aclrtStreamQuery(a, &st));
    CHECK(st == ACL_STREAM_STATUS_NOT_READY);
    CHECK_OK(aclrtQueryEventStatus(ev, &es));
    CHECK(es == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(a, 10), 507046);
    CHECK_RET(aclrtSynchronizeEventWithTimeout(ev, 10), 507047);
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(b, 10), 507046); /* B waits for ev */
    {
        const int64_t open = 1;
        CHECK_OK(aclrtMemcpy(dev + 8, sizeof open, &open, sizeof open, ACL_MEMCPY_HOST_TO_DEVICE));
    }
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(((int32_t *)pinned)[0] == 1 && ((int32_t *)pinned)[3] == 1);
    CHECK_OK(aclrtQueryEventStatus(ev, &es));
    CHECK(es == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    /* B waited for ev only; A's last task (the record of end) may still be running. */
    CHECK_OK(aclrtSynchronizeEvent(end));
    CHECK_OK(aclrtStreamQuery(a, &st));
    CHECK(st == ACL_STREAM_STATUS_COMPLETE);
    CHECK_OK(aclrtEventElapsedTime(&ms, start, end));
    printf("  elapsed %.3f ms\n", (double)ms);
    CHECK(ms >= 190.0f && ms < 5000.0f);
    CHECK_OK(aclrtSynchronizeStreamWithTimeout(a, 0));
    CHECK_OK(aclrtResetEvent(ev, a));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtQueryEventStatus(ev, &es));
    CHECK(es == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    CHECK_OK(aclrtDestroyEvent(ev));
    CHECK_OK(aclrtDestroyEvent(start));
    CHECK_OK(aclrtDestroyEvent(end));
    CHECK_OK(aclrtFreeHost(pinned));
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStream(a));
    CHECK_OK(aclrtDestroyStream(b));
}

static void kernel_failures(void)
{
    aclrtStream s;
    int32_t *dev = NULL, host[1] = { 0 };
    int32_t code = 0;

    check_section("a failing kernel surfaces at the next synchronize; stop mode skips the rest");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtMalloc((void **)&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(dev, 64, 0, 64));
    /* Continue mode: the kernel after the failure still runs. */
    CHECK_OK(aclrtLaunchKernelV2(fail_k, 1, &code, sizeof code, NULL, s));
    launch_slow(dev, 0, 1, s);
    CHECK_RET(aclrtSynchronizeStream(s), 507015);
    CHECK_RET(aclrtGetLastError(ACL_RT_THREAD_LEVEL), 507015);
    CHECK_RET(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS);
    CHECK_OK(aclrtSynchronizeStream(s)); /* reported once */
    CHECK_OK(aclrtMemcpy(host, 4, dev, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(host[0] == 1);
    /* Stop mode with a kernel-chosen code. The stream is held on a value wait until all
     * three tasks are queued, so the failure finds the increments queued behind it. */
    CHECK_OK(aclrtSetStreamFailureMode(s, ACL_STOP_ON_FAILURE));
    code = 507035;
    CHECK_OK(aclrtValueWait(dev + 8, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    CHECK_OK(aclrtLaunchKernelV2(fail_k, 2, &code, sizeof code, NULL, s));
    launch_slow(dev, 0, 1, s);
    launch_slow(dev, 0, 1, s);
    {
        uint64_t one = 1;
        CHECK_OK(aclrtMemcpy(dev + 8, 8, &one, 8, ACL_MEMCPY_HOST_TO_DEVICE));
    }
    CHECK_RET(aclrtSynchronizeStream(s), 507035);
    CHECK_RET(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), 507035);
    CHECK_OK(aclrtMemcpy(host, 4, dev, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(host[0] == 1); /* both increments were skipped */
    launch_slow(dev, 0, 1, s); /* work after the failure runs */
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtMemcpy(host, 4, dev, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(host[0] == 2);
    CHECK_FAIL(aclrtSetStreamFailureMode(s, 2), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStream(s));
}

static void copies_2d_and_batch(void)
{
    aclrtStream s;
    unsigned char *dev = NULL, *pinned = NULL;
    unsigned char host[64], back[64];
    void *dsts[3], *srcs[3];
    size_t maxs[3], sizes[3], idx[1] = { 0 }, fail = 0;
    aclrtMemcpyBatchAttr attr;
    int r, c, ok = 1;

    check_section("2D copies with pitches");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtMalloc((void **)&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMallocHost((void **)&pinned, 4096));
    CHECK_OK(aclrtMemset(dev, 4096, 0xEE, 4096));
    fill_pattern(host, sizeof host, 3);
    /* 4 rows of 5 bytes, source pitch 8, destination pitch 16. */
    CHECK_OK(aclrtMemcpy2d(dev, 16, host, 8, 5, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(back, 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    for (r = 0; r < 4; r++) {
        for (c = 0; c < 16; c++) {
            unsigned char want = c < 5 ? host[r * 8 + c] : 0xEE;
            ok &= back[r * 16 + c] == want;
        }
    }
    CHECK(ok);
    /* Async, device to pinned, pitches 16 -> 5 (packed). */
    CHECK_OK(aclrtMemcpy2dAsync(pinned, 5, dev, 16, 5, 4, ACL_MEMCPY_DEVICE_TO_HOST, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    ok = 1;
    for (r = 0; r < 4; r++) {
        ok &= memcmp(pinned + r * 5, host + r * 8, 5) == 0;
    }
    CHECK(ok);
    CHECK_FAIL(aclrtMemcpy2d(dev, 4, host, 8, 5, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy2d(dev, 16, host, 8, 5, 4, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpy2dAsync(dev, 16, host, 8, 5, 4, ACL_MEMCPY_HOST_TO_HOST, s), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMemcpy2d(NULL, 16, NULL, 8, 0, 4, ACL_MEMCPY_HOST_TO_DEVICE));

    check_section("batch copies and failIndex");
    memset(&attr, 0, sizeof attr);
    attr.dstLoc.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    attr.dstLoc.id = 0;
    attr.srcLoc.type = ACL_MEM_LOCATION_TYPE_HOST;
    for (r = 0; r < 3; r++) {
        dsts[r] = dev + 1024 + r * 64;
        srcs[r] = pinned + 1024 + r * 64;
        maxs[r] = 64;
        sizes[r] = 64;
        fill_pattern(pinned + 1024 + r * 64, 64, 10 + (unsigned)r);
    }
    CHECK_OK(aclrtMemcpyBatchAsync(dsts, maxs, srcs, sizes, 3, &attr, idx, 1, &fail, s));
    CHECK(fail == SIZE_MAX);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtMemcpy(back, 64, dev + 1024 + 128, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(back, 64, 12));
    /* Entry 1 copies host to host: refused with failIndex 1, nothing copied. */
    CHECK_OK(aclrtMemset(dev + 1024, 192, 0, 192));
    dsts[1] = host;
    CHECK_FAIL(aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 3, &attr, idx, 1, &fail), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(fail == 1);
    CHECK_OK(aclrtMemcpy(back, 64, dev + 1024, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(all_bytes(back, 64, 0));
    dsts[1] = dev + 1024 + 64;
    maxs[2] = 10;
    CHECK_FAIL(aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 3, &attr, idx, 1, &fail), ACL_ERROR_INVALID_PARAM);
    maxs[2] = 64;
    idx[0] = 1;
    CHECK_FAIL(aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 3, &attr, idx, 1, &fail), ACL_ERROR_INVALID_PARAM);
    CHECK(fail == SIZE_MAX);
    idx[0] = 0;
    CHECK_FAIL(aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 3, &attr, idx, 1, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 5000, &attr, idx, 1, &fail), ACL_ERROR_INVALID_PARAM);
    attr.dstLoc.id = 1; /* declared device 1, really device 0 */
    CHECK_FAIL(aclrtMemcpyBatchV2(dsts, maxs, srcs, sizes, 3, &attr, idx, 1), ACL_ERROR_RT_PARAM_INVALID);
    attr.dstLoc.id = 0;
    CHECK_OK(aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 3, &attr, idx, 1, &fail));
    CHECK_OK(aclrtMemcpy(back, 64, dev + 1024, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(back, 64, 10));
    CHECK_OK(aclrtFreeHost(pinned));
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStream(s));
}

/* Many threads, many streams: every thread's host functions run in order. */
#define THREADS 8
#define PER_THREAD 200
static int seen[THREADS][PER_THREAD];
static int seen_len[THREADS];

static void mark(void *arg)
{
    intptr_t v = (intptr_t)arg;
    int t = (int)(v / PER_THREAD);
    seen[t][seen_len[t]++] = (int)(v % PER_THREAD);
}

static void *submitter(void *arg)
{
    intptr_t t = (intptr_t)arg;
    aclrtStream s;
    int i;

    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&s) != ACL_SUCCESS) {
        return (void *)1;
    }
    for (i = 0; i < PER_THREAD; i++) {
        if (aclrtLaunchHostFunc(s, mark, (void *)(t * PER_THREAD + i)) != ACL_SUCCESS) {
            return (void *)1;
        }
    }
    if (aclrtSynchronizeStream(s) != ACL_SUCCESS || aclrtDestroyStream(s) != ACL_SUCCESS) {
        return (void *)1;
    }
    aclrtResetDevice(0);
    return NULL;
}

static void many_threads(void)
{
    pthread_t th[THREADS];
    intptr_t t;
    int i, ok = 1, failed = 0;

    check_section("many threads submitting to many streams at once");
    for (t = 0; t < THREADS; t++) {
        pthread_create(&th[t], NULL, submitter, (void *)t);
    }
    for (t = 0; t < THREADS; t++) {
        void *r = NULL;
        pthread_join(th[t], &r);
        failed += r != NULL;
    }
    CHECK(failed == 0);
    for (t = 0; t < THREADS; t++) {
        ok &= seen_len[t] == PER_THREAD;
        for (i = 0; i < seen_len[t]; i++) {
            ok &= seen[t][i] == i;
        }
    }
    CHECK(ok);
}

/* Callbacks delivered to a subscribed thread. */
static volatile int cb_count;
static volatile int stop_reports;
static void cb(void *arg)
{
    cb_count += (int)(intptr_t)arg;
}

static void *report_loop(void *arg)
{
    (void)arg;
    aclrtSetDevice(0);
    while (!stop_reports) {
        aclrtProcessReport(20);
    }
    return NULL;
}

static void callbacks_and_value_wait(void)
{
    aclrtStream s, w;
    pthread_t th;
    uint64_t *flag = NULL;
    int32_t *dev = NULL, host[1] = { 0 };
    aclrtEvent noSync;

    check_section("callbacks on a subscribed thread; value wait/write across streams");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStream(&w));
    CHECK_FAIL(aclrtLaunchCallback(cb, (void *)1, ACL_CALLBACK_BLOCK, s), 107015);
    pthread_create(&th, NULL, report_loop, NULL);
    CHECK_OK(aclrtSubscribeReport((uint64_t)th, s));
    CHECK_FAIL(aclrtSubscribeReport((uint64_t)th, s), 100033);
    CHECK_OK(aclrtLaunchCallback(cb, (void *)1, ACL_CALLBACK_BLOCK, s));
    CHECK_OK(aclrtLaunchCallback(cb, (void *)10, ACL_CALLBACK_NO_BLOCK, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    /* A NO_BLOCK callback may still be queued for the thread when the stream is done, and it
     * stays deliverable after the unsubscribe: the thread runs it before it is told to stop. */
    CHECK_OK(aclrtUnSubscribeReport((uint64_t)th, s));
    for (int i = 0; i < 5000 && cb_count != 11; i++) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    stop_reports = 1;
    pthread_join(th, NULL);
    CHECK(cb_count == 11);
    CHECK_FAIL(aclrtProcessReport(5), 107012);

    CHECK_OK(aclrtMalloc((void **)&flag, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc((void **)&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(flag, 64, 0, 64));
    CHECK_OK(aclrtMemset(dev, 64, 0, 64));
    /* w waits for s's write of 5, which sits behind a gate (flag + 8) the test opens: until
     * then w provably cannot finish, on any machine. */
    CHECK_OK(aclrtValueWait(flag, 5, ACL_STREAM_WAIT_VALUE_EQ, w));
    launch_slow(dev, 0, 1, w);
    CHECK_OK(aclrtValueWait((char *)flag + 8, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    launch_slow(dev, 0, 1, s);
    CHECK_OK(aclrtValueWrite(flag, 5, 0, s));
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(w, 20), 507046);
    {
        const int64_t open = 1;
        CHECK_OK(aclrtMemcpy((char *)flag + 8, sizeof open, &open, sizeof open, ACL_MEMCPY_HOST_TO_DEVICE));
    }
    CHECK_OK(aclrtSynchronizeStream(w));
    CHECK_OK(aclrtMemcpy(host, 4, dev, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(host[0] == 2);
    CHECK_FAIL(aclrtValueWait(flag, 5, 9, w), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtValueWrite(flag, 5, 1, w), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtValueWrite((char *)flag + 4, 5, 0, w), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCreateEventWithFlag(&noSync, ACL_EVENT_TIME_LINE));
    CHECK_OK(aclrtRecordEvent(noSync, s));
    CHECK_FAIL(aclrtStreamWaitEvent(w, noSync), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtDestroyEvent(noSync));
    CHECK_OK(aclrtSynchronizeDevice());
    CHECK_OK(aclrtSynchronizeDeviceWithTimeout(1000));
    CHECK_OK(aclrtFree(flag));
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtDestroyStream(w));
}

static void bad_inputs(void)
{
    aclrtStream s, dead;
    aclrtEvent ev, dead_ev;
    void *dev = NULL;
    char host[64];
    aclrtStreamStatus st;
    aclrtContext ctx = NULL, cur = NULL;
    int32_t zero = 0;

    check_section("bad inputs: documented codes, nothing executed");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStream(&dead));
    CHECK_OK(aclrtDestroyStream(dead));
    CHECK_OK(aclrtCreateEvent(&ev));
    CHECK_OK(aclrtCreateEvent(&dead_ev));
    CHECK_OK(aclrtDestroyEvent(dead_ev));
    CHECK_OK(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(dev, 64, 0x11, 64));
    CHECK_FAIL(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCreateStreamWithConfig(&dead, 0, 0x100), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtDestroyStream(dead), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtDestroyStream((aclrtStream)0x1234), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtSynchronizeStream(dead), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtStreamQuery(dead, &st), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtStreamQuery(s, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtSynchronizeStreamWithTimeout(s, -2), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemsetAsync(dev, 64, 0, 64, dead), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtMemcpyAsync(host, 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST, dead), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtMemcpyAsync(host, 32, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpyAsync(host, 64, dev, 64, 7, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyAsync(host, 64, dev, 64, 0x7FFFFFFF, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyAsync(NULL, 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyAsync(host, 64, host + 1, 8, ACL_MEMCPY_HOST_TO_HOST, s), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtMemsetAsync(dev, 32, 0, 64, s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemsetD32Async((char *)dev + 2, 64, 0, 4, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemsetD32(dev, 8, 0, 4), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemsetD32(host, 64, 0, 4), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMemcpyAsync(NULL, 0, NULL, 0, 99, dead)); /* count 0: nothing at all */
    CHECK_FAIL(aclrtRecordEvent(dead_ev, s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtRecordEvent(NULL, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtRecordEvent(ev, dead), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtStreamWaitEvent(s, dead_ev), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtDestroyEvent(dead_ev), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtSynchronizeEvent((aclrtEvent)0x77), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtCreateEventWithFlag(&dead_ev, 0x80), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCreateEventWithFlag(&dead_ev, ACL_EVENT_EXTERNAL | ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchHostFunc(s, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchHostFunc(dead, log_tag, NULL), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtLaunchKernelV2(NULL, 1, &zero, 4, NULL, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelV2(slow_inc, 0, &zero, 4, NULL, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelV2(slow_inc, 1, NULL, 4, NULL, s), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelV2((aclrtFuncHandle)0x99, 1, &zero, 4, NULL, s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtBinaryLoadFromFile("/nonexistent/k.so", NULL, (aclrtBinHandle *)&ctx), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RET(aclrtGetLastError(5), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtMemcpy(host, 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(all_bytes(host, 64, 0x11)); /* no rejected call wrote anything */
    CHECK_FAIL(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);

    check_section("contexts");
    CHECK_OK(aclrtGetCurrentContext(&cur));
    CHECK(cur != NULL);
    CHECK_OK(aclrtCreateContext(&ctx, 1));
    {
        int32_t d = -1;
        CHECK_OK(aclrtGetDevice(&d));
        CHECK(d == 1);
        CHECK_OK(aclrtSetCurrentContext(cur));
        CHECK_OK(aclrtGetDevice(&d));
        CHECK(d == 0);
    }
    CHECK_OK(aclrtDestroyContext(ctx));
    CHECK_FAIL(aclrtDestroyContext(ctx), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtSetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);

    CHECK_OK(aclrtDestroyEvent(ev));
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStreamForce(s));
}

int main(void)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtBinHandle bin = NULL;

    CHECK(lib != NULL);
    if (lib == NULL) {
        return check_summary("streams");
    }
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin));
    CHECK_OK(aclrtBinaryGetFunction(bin, "slow_inc", &slow_inc));
    CHECK_OK(aclrtBinaryGetFunction(bin, "fail", &fail_k));
    CHECK_FAIL(aclrtBinaryGetFunction(bin, "nope", &fail_k), 507027);

    ordering_across_kinds();
    cross_stream_wait_and_query();
    kernel_failures();
    copies_2d_and_batch();
    many_threads();
    callbacks_and_value_wait();
    bad_inputs();

    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK_FAIL(aclrtBinaryUnLoad(bin), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("streams");
}
