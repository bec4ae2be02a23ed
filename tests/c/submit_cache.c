/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/submit_cache.c - a thread that submits to the same streams again and
 * again (which the runtime answers from a per-thread cache of resolved streams)
 * sees every change made since, on its own thread or another: a destroyed or
 * force-destroyed stream is refused (107017), a reused handle slot names the new
 * stream only, a device reset kills the old streams and gives a new default
 * stream, aclFinalize + aclInit kills every old handle, and a change of the
 * current device refuses another device's stream (107003). Then a stress:
 * submitter threads race a destroyer thread that destroys and recreates their
 * streams; every launch to a live stream succeeds and its function runs exactly
 * once, every launch to a stream destroyed before it is refused with 107017.
 * Last, launchers race the destroy of the very stream they launch on: each launch
 * is either ordered before the destroy (accepted, and then it runs unless a forced
 * destroy cancelled it) or refused with 107017 - never accepted without running
 * under aclrtDestroyStream, never another code.
 *
 * Runs with ACLRS_SIM_DEVICES=2 (the device-change check needs a second one).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define RT_INVALID_HANDLE 107017
#define RT_STREAM_CONTEXT 107003

static atomic_long g_ran;

static void count(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_ran, 1);
}

/* Submits to `s` a few times in a row, so its resolution is cached. */
static int warm(aclrtStream s)
{
    int i, ok = 1;
    for (i = 0; i < 4; i++) {
        ok &= aclrtLaunchHostFunc(s, count, NULL) == ACL_SUCCESS;
    }
    return ok;
}

/* Memsets 4 bytes of `dev` on `s` a few times in a row (its stream and its live range are
 * then cached), and checks the last value landed. */
static int warm_memset(void *dev, aclrtStream s)
{
    int i, ok = 1;
    unsigned char got[4] = {0};
    for (i = 1; i <= 4; i++) {
        ok &= aclrtMemsetAsync(dev, 4096, i, 4, s) == ACL_SUCCESS;
    }
    ok &= aclrtSynchronizeStream(s) == ACL_SUCCESS;
    ok &= aclrtMemcpy(got, sizeof got, dev, sizeof got, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS;
    return ok && got[0] == 4 && got[3] == 4;
}

static void *destroy_on_other_thread(void *arg)
{
    aclrtStream s = *(aclrtStream *)arg;
    aclError rc;
    if (aclrtSetDevice(0) != ACL_SUCCESS) {
        return (void *)1;
    }
    rc = aclrtDestroyStreamForce(s);
    /* Its aclrtSetDevice counted a reference on the device: give it back. */
    if (aclrtResetDevice(0) != ACL_SUCCESS) {
        return (void *)1;
    }
    return (void *)(intptr_t)rc;
}

static void single_thread_changes(void)
{
    aclrtStream a = NULL, b = NULL, c = NULL;
    void *rc = NULL;
    pthread_t t;
    uint32_t devices = 0;
    void *dev = NULL;

    printf("destroy on this thread\n");
    CHECK_OK(aclrtCreateStream(&a));
    CHECK(warm(a));
    /* Memsets into one device buffer: after the first, the stream and the live range are
     * both answered by this thread's caches (the memset's fast path), which must still see
     * every change below. */
    CHECK_OK(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(warm_memset(dev, a));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtDestroyStream(a));
    CHECK_FAIL(aclrtLaunchHostFunc(a, count, NULL), RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtMemsetAsync(&g_ran, sizeof g_ran, 0, 4, a), RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtMemsetAsync(dev, 4096, 0, 4, a), RT_INVALID_HANDLE);

    printf("a reused slot names the new stream only\n");
    CHECK_OK(aclrtCreateStream(&b));
    CHECK(b != a);
    CHECK_FAIL(aclrtLaunchHostFunc(a, count, NULL), RT_INVALID_HANDLE);
    atomic_store(&g_ran, 0);
    CHECK(warm(b));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(atomic_load(&g_ran) == 4);

    printf("force-destroyed on another thread\n");
    CHECK(warm(b));
    CHECK(pthread_create(&t, NULL, destroy_on_other_thread, &b) == 0);
    CHECK(pthread_join(t, &rc) == 0);
    CHECK(rc == NULL);
    CHECK_FAIL(aclrtLaunchHostFunc(b, count, NULL), RT_INVALID_HANDLE);

    printf("the current device changes\n");
    CHECK_OK(aclrtGetDeviceCount(&devices));
    CHECK(devices >= 2);
    CHECK_OK(aclrtCreateStream(&c));
    CHECK(warm(c));
    CHECK(warm(NULL));
    CHECK(warm_memset(dev, c));
    CHECK_OK(aclrtSynchronizeStream(c));
    CHECK_OK(aclrtSynchronizeStream(NULL));
    CHECK_OK(aclrtSetDevice(1));
    CHECK_FAIL(aclrtLaunchHostFunc(c, count, NULL), RT_STREAM_CONTEXT);
    CHECK_FAIL(aclrtMemsetAsync(dev, 4096, 0, 4, c), RT_STREAM_CONTEXT);
    /* NULL now names device 1's default stream. */
    atomic_store(&g_ran, 0);
    CHECK_OK(aclrtLaunchHostFunc(NULL, count, NULL));
    CHECK_OK(aclrtSynchronizeStream(NULL));
    CHECK(atomic_load(&g_ran) == 1);
    CHECK_OK(aclrtSetDevice(0));
    CHECK(warm(c));
    CHECK(warm_memset(dev, c));
    CHECK_OK(aclrtSynchronizeStream(c));
    /* A free ends the live range at once. */
    CHECK_OK(aclrtFree(dev));
    CHECK_FAIL(aclrtMemsetAsync(dev, 4096, 0, 4, c), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(warm_memset(dev, c));
    CHECK_OK(aclrtSynchronizeStream(c));

    printf("device reset\n");
    /* Forced: this thread counted several references on device 0. */
    CHECK_OK(aclrtResetDeviceForce(0));
    CHECK_FAIL(aclrtLaunchHostFunc(c, count, NULL), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_FAIL(aclrtMemsetAsync(dev, 4096, 0, 4, c), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_OK(aclrtSetDevice(0));
    CHECK_FAIL(aclrtLaunchHostFunc(c, count, NULL), RT_INVALID_HANDLE);
    atomic_store(&g_ran, 0);
    CHECK(warm(NULL));
    CHECK_OK(aclrtSynchronizeStream(NULL));
    CHECK(atomic_load(&g_ran) == 4);

    printf("aclFinalize and aclInit\n");
    CHECK_OK(aclrtCreateStream(&c));
    CHECK(warm(c));
    CHECK_OK(aclrtSynchronizeStream(c));
    CHECK_OK(aclrtResetDevice(1));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    CHECK_FAIL(aclrtLaunchHostFunc(c, count, NULL), ACL_ERROR_UNINITIALIZE);
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_FAIL(aclrtLaunchHostFunc(c, count, NULL), RT_INVALID_HANDLE);
    CHECK_OK(aclrtCreateStream(&a));
    atomic_store(&g_ran, 0);
    CHECK(warm(a));
    CHECK(warm(NULL));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtSynchronizeStream(NULL));
    CHECK(atomic_load(&g_ran) == 8);
    CHECK_OK(aclrtDestroyStream(a));
}

/* ---- the stress: submitters racing a destroyer ----
 * Each submitter feeds two streams of its own, which nobody destroys, and after
 * each batch launches on the handle the destroyer destroyed last (published only
 * after aclrtDestroyStream returned): that launch must be refused. Meanwhile the
 * destroyer makes and destroys streams as fast as it can (slots are reused, the
 * removal epoch moves all the time) and launches on each before destroying it.
 * (A launch racing the destroy of its own stream is the caller's race, as in
 * CANN, and is not made here.) */
#define SUBMITTERS 3
#define ROUNDS 400
#define PER_ROUND 16

static _Atomic(aclrtStream) g_dead;
static atomic_int g_stop;
static atomic_long g_accepted, g_refused, g_odd;

static void *submitter(void *arg)
{
    aclrtStream own[2] = { NULL, NULL };
    int k;
    (void)arg;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&own[0]) != ACL_SUCCESS ||
        aclrtCreateStream(&own[1]) != ACL_SUCCESS) {
        atomic_fetch_add(&g_odd, 1);
        return NULL;
    }
    while (!atomic_load(&g_stop)) {
        aclrtStream dead = atomic_load(&g_dead);
        aclError rc;
        for (k = 0; k < PER_ROUND; k++) {
            rc = aclrtLaunchHostFunc(own[k & 1], count, NULL);
            if (rc == ACL_SUCCESS) {
                atomic_fetch_add(&g_accepted, 1);
            } else if (atomic_fetch_add(&g_odd, 1) < 5) {
                printf("  own stream: code %d: %s\n", (int)rc, aclGetRecentErrMsg());
            }
        }
        /* Each round ends with its streams drained, so rounds interleave with the destroyer. */
        for (k = 0; k < 2; k++) {
            if (aclrtSynchronizeStream(own[k]) != ACL_SUCCESS) {
                atomic_fetch_add(&g_odd, 1);
            }
        }
        if (dead != NULL) {
            rc = aclrtLaunchHostFunc(dead, count, NULL);
            if (rc == RT_INVALID_HANDLE) {
                atomic_fetch_add(&g_refused, 1);
            } else if (atomic_fetch_add(&g_odd, 1) < 5) {
                printf("  destroyed stream: code %d: %s\n", (int)rc, aclGetRecentErrMsg());
            }
        }
    }
    for (k = 0; k < 2; k++) {
        if (aclrtDestroyStream(own[k]) != ACL_SUCCESS) {
            atomic_fetch_add(&g_odd, 1);
        }
    }
    if (aclrtResetDevice(0) != ACL_SUCCESS) {
        atomic_fetch_add(&g_odd, 1);
    }
    return NULL;
}

static void destroyer_race(void)
{
    pthread_t t[SUBMITTERS];
    int i, r, made = 1;
    long ran, mine = 0;

    printf("submitters racing a destroyer\n");
    atomic_store(&g_ran, 0);
    for (i = 0; i < SUBMITTERS; i++) {
        CHECK(pthread_create(&t[i], NULL, submitter, NULL) == 0);
    }
    for (r = 0; r < ROUNDS; r++) {
        aclrtStream s = NULL;
        made &= aclrtCreateStream(&s) == ACL_SUCCESS;
        made &= aclrtLaunchHostFunc(s, count, NULL) == ACL_SUCCESS;
        mine++;
        /* A plain destroy waits for the task, so it runs. */
        made &= aclrtDestroyStream(s) == ACL_SUCCESS;
        made &= aclrtLaunchHostFunc(s, count, NULL) == RT_INVALID_HANDLE;
        atomic_store(&g_dead, s);
    }
    atomic_store(&g_stop, 1);
    for (i = 0; i < SUBMITTERS; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
    }
    CHECK(made);
    ran = atomic_load(&g_ran);
    printf("  accepted %ld + %ld, refused %ld, ran %ld\n", atomic_load(&g_accepted), mine,
           atomic_load(&g_refused), ran);
    CHECK(atomic_load(&g_odd) == 0);
    CHECK(ran == atomic_load(&g_accepted) + mine);
}

/* ---- launches racing the destroy of their own stream ----
 * Each round publishes a fresh stream; the launchers launch on it (each launch's
 * function counts into the round's counter) until a launch is refused, which must
 * be with 107017. The main thread destroys the stream once the launchers have had
 * a few launches accepted, plainly in even rounds (which waits for every accepted
 * launch: each must have run) and forced in odd ones (which may cancel accepted
 * launches that had not started: none may run after the destroy returned). */
#define RACERS 3
#define RACE_ROUNDS 120

struct race_round {
    atomic_long accepted, ran, refused, odd;
};

static struct race_round g_rounds[RACE_ROUNDS];
static _Atomic(aclrtStream) g_target;
static atomic_int g_round = -1;
static atomic_int g_racers_done;
static atomic_int g_race_over;

static void count_round(void *arg)
{
    atomic_fetch_add(&((struct race_round *)arg)->ran, 1);
}

static void *racer(void *arg)
{
    int seen = -1;
    (void)arg;
    if (aclrtSetDevice(0) != ACL_SUCCESS) {
        atomic_fetch_add(&g_rounds[0].odd, 1);
        return NULL;
    }
    while (!atomic_load(&g_race_over)) {
        int r = atomic_load(&g_round);
        aclrtStream s;
        struct race_round *rr;
        if (r == seen || r < 0) {
            sched_yield();
            continue;
        }
        seen = r;
        s = atomic_load(&g_target);
        rr = &g_rounds[r];
        for (;;) {
            aclError rc = aclrtLaunchHostFunc(s, count_round, rr);
            if (rc == ACL_SUCCESS) {
                atomic_fetch_add(&rr->accepted, 1);
                continue;
            }
            if (rc == RT_INVALID_HANDLE) {
                atomic_fetch_add(&rr->refused, 1);
            } else if (atomic_fetch_add(&rr->odd, 1) < 3) {
                printf("  round %d: a launch racing the destroy got %d: %s\n", r, (int)rc,
                       aclGetRecentErrMsg());
            }
            break;
        }
        atomic_fetch_add(&g_racers_done, 1);
    }
    if (aclrtResetDevice(0) != ACL_SUCCESS) {
        atomic_fetch_add(&g_rounds[0].odd, 1);
    }
    return NULL;
}

static void launches_racing_their_destroy(void)
{
    pthread_t t[RACERS];
    int i, r, ok = 1, lost = 0, late = 0;
    long accepted = 0, cancelled = 0;

    printf("launches racing the destroy of their own stream\n");
    for (i = 0; i < RACERS; i++) {
        CHECK(pthread_create(&t[i], NULL, racer, NULL) == 0);
    }
    for (r = 0; r < RACE_ROUNDS; r++) {
        struct race_round *rr = &g_rounds[r];
        aclrtStream s = NULL;
        long ran_at_destroy;
        if (aclrtCreateStream(&s) != ACL_SUCCESS) {
            ok = 0;
            break;
        }
        atomic_store(&g_racers_done, 0);
        atomic_store(&g_target, s);
        atomic_store(&g_round, r);
        /* Destroy while the launchers are in full flight (some launches in, more coming). */
        while (atomic_load(&rr->accepted) < 8 * (r % 4 + 1) &&
               atomic_load(&g_racers_done) < RACERS) {
            sched_yield();
        }
        if (r % 2 == 0) {
            ok &= aclrtDestroyStream(s) == ACL_SUCCESS;
        } else {
            ok &= aclrtDestroyStreamForce(s) == ACL_SUCCESS;
        }
        ran_at_destroy = atomic_load(&rr->ran);
        /* Every racer ends the round with a refusal (join point for this round). */
        while (atomic_load(&g_racers_done) < RACERS) {
            sched_yield();
        }
        accepted += atomic_load(&rr->accepted);
        if (r % 2 == 0) {
            /* A plain destroy waited for every accepted launch. */
            lost += atomic_load(&rr->ran) != atomic_load(&rr->accepted);
        } else {
            cancelled += atomic_load(&rr->accepted) - atomic_load(&rr->ran);
        }
        /* Nothing of the stream runs after its destroy returned. */
        late += atomic_load(&rr->ran) != ran_at_destroy;
        ok &= atomic_load(&rr->refused) == RACERS;
        if (atomic_load(&rr->odd) != 0 || !ok) {
            break;
        }
    }
    atomic_store(&g_race_over, 1);
    for (i = 0; i < RACERS; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
    }
    printf("  %d rounds, %ld launches accepted, %ld cancelled by forced destroys\n", r, accepted,
           cancelled);
    CHECK(ok);
    CHECK(r == RACE_ROUNDS);
    for (i = 0; i < RACE_ROUNDS; i++) {
        CHECK(atomic_load(&g_rounds[i].odd) == 0);
    }
    CHECK(lost == 0);
    CHECK(late == 0);
}

int main(void)
{
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("submit_cache");
    }
    single_thread_changes();
    destroyer_race();
    launches_racing_their_destroy();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("submit_cache");
}
