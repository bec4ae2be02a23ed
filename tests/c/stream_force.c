/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/stream_force.c - aclrtDestroyStreamForce as CANN does it (runtime surface
 * section 8.8), next to aclrtDestroyStream:
 *
 *   - the handle is rejected at once;
 *   - the task at the head of the stream whose dependencies are met when the call comes
 *     counts as already on the device and runs to completion: an async memset or copy
 *     launched on an idle stream just before the forced destroy always lands;
 *   - every task behind it is cancelled without running, and an event one of them would
 *     have recorded stays not complete;
 *   - the stream's host-side work is waited for: a host function already running, and the
 *     staged ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE copies queued on it;
 *   - aclrtDestroyStream waits for every task.
 *
 * "Running" and "behind it" are made exact with host functions that block on flags this
 * program controls, and with a wait on an event of a second stream that is held the same
 * way: no sleep decides an order. Run with ACLRS_SIM_DEVICES=2 (the wrong-device case).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

/* A host function that says it started, blocks until released, then says it finished. */
typedef struct {
    atomic_int started;
    atomic_int release;
    atomic_int done;
} Gate;

static void gate_fn(void *arg)
{
    Gate *g = (Gate *)arg;
    atomic_store(&g->started, 1);
    while (!atomic_load(&g->release)) {
        sched_yield();
    }
    atomic_store(&g->done, 1);
}

static void gate_init(Gate *g)
{
    atomic_init(&g->started, 0);
    atomic_init(&g->release, 0);
    atomic_init(&g->done, 0);
}

static void wait_flag(atomic_int *flag)
{
    while (!atomic_load(flag)) {
        sched_yield();
    }
}

static void *release_gate(void *arg)
{
    atomic_store(&((Gate *)arg)->release, 1);
    return NULL;
}

/* A host function that counts its calls. */
static atomic_int count_calls;
static void count_fn(void *arg)
{
    (void)arg;
    atomic_fetch_add(&count_calls, 1);
}

enum { BYTES = 4096, ROUNDS = 20 };

static void bad_inputs(void)
{
    aclrtStream s = NULL, other = NULL;

    check_section("bad inputs get the documented codes and change nothing");
    CHECK_FAIL(aclrtDestroyStreamForce(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtDestroyStreamForce(s));
    CHECK_FAIL(aclrtDestroyStreamForce(s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtDestroyStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    /* A stream of another device (context) than the current one. */
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtCreateStream(&other));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_FAIL(aclrtDestroyStreamForce(other), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK_FAIL(aclrtDestroyStream(other), ACL_ERROR_RT_STREAM_CONTEXT);
    /* ...and it is still live and usable on its own device. */
    CHECK_OK(aclrtSetDevice(1));
    atomic_store(&count_calls, 0);
    CHECK_OK(aclrtLaunchHostFunc(other, count_fn, NULL));
    CHECK_OK(aclrtSynchronizeStream(other));
    CHECK(atomic_load(&count_calls) == 1);
    CHECK_OK(aclrtDestroyStreamForce(other));
    CHECK_OK(aclrtSetDevice(0));
}

static void running_head_finishes_the_rest_is_cancelled(void)
{
    aclrtStream s = NULL, hold = NULL, after = NULL;
    aclrtEvent held = NULL, never = NULL;
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    Gate head, holder;
    pthread_t releaser;
    uint8_t *dev = NULL;
    uint8_t host[BYTES];

    check_section("the running head finishes, every task behind it is cancelled");
    gate_init(&head);
    gate_init(&holder);
    atomic_store(&count_calls, 0);
    CHECK_OK(aclrtMalloc((void **)&dev, BYTES, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(dev, BYTES, 0, BYTES));
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStream(&hold));
    CHECK_OK(aclrtCreateEvent(&held));
    CHECK_OK(aclrtCreateEvent(&never));
    /* `hold` stays blocked in its host function until the end: `held` is not recorded. */
    CHECK_OK(aclrtLaunchHostFunc(hold, gate_fn, &holder));
    CHECK_OK(aclrtRecordEvent(held, hold));
    /* On `s`: a running host function, then a wait whose dependency is not met, then work. */
    CHECK_OK(aclrtLaunchHostFunc(s, gate_fn, &head));
    CHECK_OK(aclrtStreamWaitEvent(s, held));
    CHECK_OK(aclrtRecordEvent(never, s));
    CHECK_OK(aclrtLaunchHostFunc(s, count_fn, NULL));
    CHECK_OK(aclrtMemsetAsync(dev, BYTES, 0xAB, BYTES, s));
    CHECK_OK(aclrtLaunchHostFunc(s, count_fn, NULL));
    wait_flag(&head.started);
    /* The head may be released before or during the destroy: either way the wait is the next
     * head and its dependency is not met, so nothing behind the host function can run. */
    CHECK(pthread_create(&releaser, NULL, release_gate, &head) == 0);
    CHECK_OK(aclrtDestroyStreamForce(s));
    pthread_join(releaser, NULL);
    /* The host function that was running was waited for. */
    CHECK(atomic_load(&head.done) == 1);
    /* The handle is dead at once. */
    CHECK_FAIL(aclrtSynchronizeStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtLaunchHostFunc(s, count_fn, NULL), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtRecordEvent(never, s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtDestroyStreamForce(s), ACL_ERROR_RT_INVALID_HANDLE);
    /* Let `hold` finish: the cancelled tasks must not run late either. */
    atomic_store(&holder.release, 1);
    CHECK_OK(aclrtSynchronizeStream(hold));
    CHECK_OK(aclrtQueryEventStatus(held, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    /* Another stream runs after the same buffer, so every earlier task of the device that
     * could still touch it has had its chance. */
    CHECK_OK(aclrtCreateStream(&after));
    CHECK_OK(aclrtLaunchHostFunc(after, count_fn, NULL));
    CHECK_OK(aclrtSynchronizeStream(after));
    CHECK_OK(aclrtSynchronizeDevice());
    CHECK(atomic_load(&count_calls) == 1);
    CHECK_OK(aclrtQueryEventStatus(never, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    memset(host, 0x11, sizeof host);
    CHECK_OK(aclrtMemcpy(host, BYTES, dev, BYTES, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(all_bytes(host, BYTES, 0));
    CHECK_OK(aclrtDestroyStream(after));
    CHECK_OK(aclrtDestroyStream(hold));
    CHECK_OK(aclrtDestroyEvent(held));
    CHECK_OK(aclrtDestroyEvent(never));
    CHECK_OK(aclrtFree(dev));
}

static void head_on_an_idle_stream_always_runs(void)
{
    uint8_t *dev = NULL, *dev2 = NULL;
    void *pinned = NULL;
    uint8_t host[BYTES];
    int r, memset_ok = 0, copy_ok = 0;

    check_section("a memset or copy launched on an idle stream just before the destroy runs");
    CHECK_OK(aclrtMalloc((void **)&dev, BYTES, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc((void **)&dev2, BYTES, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMallocHost(&pinned, BYTES));
    for (r = 0; r < ROUNDS; r++) {
        aclrtStream s = NULL;
        uint8_t v = (uint8_t)(0x40 + r);

        CHECK_RET(aclrtMemset(dev, BYTES, 0, BYTES), ACL_SUCCESS);
        CHECK_RET(aclrtCreateStream(&s), ACL_SUCCESS);
        CHECK_RET(aclrtMemsetAsync(dev, BYTES, v, BYTES, s), ACL_SUCCESS);
        CHECK_RET(aclrtDestroyStreamForce(s), ACL_SUCCESS);
        memset(host, 0, sizeof host);
        CHECK_RET(aclrtMemcpy(host, BYTES, dev, BYTES, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        memset_ok += all_bytes(host, BYTES, v);

        memset(pinned, v ^ 0xFF, BYTES);
        CHECK_RET(aclrtMemset(dev2, BYTES, 0, BYTES), ACL_SUCCESS);
        CHECK_RET(aclrtCreateStream(&s), ACL_SUCCESS);
        CHECK_RET(aclrtMemcpyAsync(dev2, BYTES, pinned, BYTES, ACL_MEMCPY_HOST_TO_DEVICE, s),
                  ACL_SUCCESS);
        CHECK_RET(aclrtDestroyStreamForce(s), ACL_SUCCESS);
        memset(host, 0, sizeof host);
        CHECK_RET(aclrtMemcpy(host, BYTES, dev2, BYTES, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        copy_ok += all_bytes(host, BYTES, (uint8_t)(v ^ 0xFF));
    }
    printf("  memsets landed %d/%d, copies landed %d/%d\n", memset_ok, ROUNDS, copy_ok, ROUNDS);
    CHECK(memset_ok == ROUNDS);
    CHECK(copy_ok == ROUNDS);
    CHECK_OK(aclrtFreeHost(pinned));
    CHECK_OK(aclrtFree(dev2));
    CHECK_OK(aclrtFree(dev));
}

static void staged_copies_are_waited_for(void)
{
    aclrtStream s = NULL, hold = NULL;
    aclrtEvent held = NULL;
    Gate head, holder;
    pthread_t releaser;
    uint8_t *dev = NULL;
    void *pinned = NULL;
    uint8_t host[BYTES];

    check_section("a forced destroy waits for the stream's staged HOST_TO_BUF copies");
    gate_init(&head);
    gate_init(&holder);
    atomic_store(&count_calls, 0);
    CHECK_OK(aclrtMalloc((void **)&dev, BYTES, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(dev, BYTES, 0, BYTES));
    CHECK_OK(aclrtMallocHost(&pinned, BYTES));
    memset(pinned, 0x77, BYTES);
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStream(&hold));
    CHECK_OK(aclrtCreateEvent(&held));
    CHECK_OK(aclrtLaunchHostFunc(hold, gate_fn, &holder));
    CHECK_OK(aclrtRecordEvent(held, hold));
    /* A running host function, the staged copy behind it, then work held behind a wait. */
    CHECK_OK(aclrtLaunchHostFunc(s, gate_fn, &head));
    CHECK_OK(aclrtMemcpyAsync(dev, BYTES, pinned, BYTES, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, s));
    /* The source is free as soon as the call returns. */
    memset(pinned, 0, BYTES);
    CHECK_OK(aclrtStreamWaitEvent(s, held));
    CHECK_OK(aclrtLaunchHostFunc(s, count_fn, NULL));
    wait_flag(&head.started);
    CHECK(pthread_create(&releaser, NULL, release_gate, &head) == 0);
    CHECK_OK(aclrtDestroyStreamForce(s));
    pthread_join(releaser, NULL);
    memset(host, 0, sizeof host);
    CHECK_OK(aclrtMemcpy(host, BYTES, dev, BYTES, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(all_bytes(host, BYTES, 0x77));
    atomic_store(&holder.release, 1);
    CHECK_OK(aclrtSynchronizeStream(hold));
    CHECK_OK(aclrtSynchronizeDevice());
    CHECK(atomic_load(&count_calls) == 0);
    CHECK_OK(aclrtDestroyStream(hold));
    CHECK_OK(aclrtDestroyEvent(held));
    CHECK_OK(aclrtFreeHost(pinned));
    CHECK_OK(aclrtFree(dev));
}

static void plain_destroy_waits_for_everything(void)
{
    aclrtStream s = NULL;
    aclrtEvent ev = NULL;
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    Gate head;
    pthread_t releaser;

    check_section("aclrtDestroyStream waits for every task");
    gate_init(&head);
    atomic_store(&count_calls, 0);
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateEvent(&ev));
    CHECK_OK(aclrtLaunchHostFunc(s, gate_fn, &head));
    CHECK_OK(aclrtRecordEvent(ev, s));
    CHECK_OK(aclrtLaunchHostFunc(s, count_fn, NULL));
    CHECK_OK(aclrtLaunchHostFunc(s, count_fn, NULL));
    wait_flag(&head.started);
    CHECK(pthread_create(&releaser, NULL, release_gate, &head) == 0);
    CHECK_OK(aclrtDestroyStream(s));
    pthread_join(releaser, NULL);
    CHECK(atomic_load(&head.done) == 1);
    CHECK(atomic_load(&count_calls) == 2);
    CHECK_OK(aclrtQueryEventStatus(ev, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_FAIL(aclrtSynchronizeStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_OK(aclrtDestroyEvent(ev));
}

int main(void)
{
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    bad_inputs();
    running_head_finishes_the_rest_is_cancelled();
    head_on_an_idle_stream_always_runs();
    staged_copies_are_waited_for();
    plain_destroy_waits_for_everything();
    CHECK_OK(aclrtResetDevice(1));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("stream_force");
}
