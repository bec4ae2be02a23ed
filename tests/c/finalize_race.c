/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/finalize_race.c - calls on other threads race aclFinalize. Every call finds the
 * runtime with no read-modify-write (a hazard slot of its thread, see the README's scheduler
 * section); aclFinalize does not wait for the calls that pinned the runtime, and the runtime
 * goes when the last of them ends. Twenty times: aclInit, four threads calling aclrtGetDevice,
 * aclrtMalloc + aclrtFree and aclrtMemsetAsync + aclrtSynchronizeStream on streams of their
 * own in a loop, aclFinalize in the middle of their calls, then the threads end. Every call
 * answers success or a documented code (never a crash, never another code), and every next
 * aclInit succeeds: the runtime the calls had pinned was let go by the last of them (a runtime
 * kept alive would still hold its VA windows, and aclInit could not reserve them). Then
 * twenty times more with the threads left running: aclFinalize, and at once aclInit again
 * while calls that pinned the old runtime may still be under way (aclInit waits for them to
 * let it go; the threads rejoin the new runtime). At the end a memset still works.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "acl/acl.h"
#include "check.h"

#define THREADS 4
#define CYCLES 20
/* ACL_ERROR_UNINITIALIZE, ACL_ERROR_RT_CONTEXT_NULL, ACL_ERROR_RT_INVALID_HANDLE (a stream of
 * a finalized runtime), ACL_ERROR_INVALID_PARAM (a pointer of a finalized runtime). */
#define UNINIT 100001
#define CONTEXT_NULL 107002
#define INVALID_HANDLE 107017
#define INVALID_PARAM 100000

static atomic_int g_stop;
static atomic_int g_bad;
static atomic_long g_ok;

static int documented(aclError e)
{
    return e == ACL_SUCCESS || e == UNINIT || e == CONTEXT_NULL || e == INVALID_HANDLE ||
           e == INVALID_PARAM || e == 107003 /* stream of another device */ ||
           e == 507033 /* device being reset */ || e == 107001 /* invalid device */ ||
           e == 207004 /* the stream's device closed by the finalize */ ||
           e == 107000 /* a pointer the finalize freed */;
}

static void note(const char *what, aclError e)
{
    if (e == ACL_SUCCESS) {
        atomic_fetch_add(&g_ok, 1);
    } else if (!documented(e)) {
        if (atomic_fetch_add(&g_bad, 1) < 5) {
            printf("  FAIL  %s returned %d: %s\n", what, (int)e, aclGetRecentErrMsg());
        }
    }
}

static void *caller(void *arg)
{
    (void)arg;
    aclrtStream s = NULL;
    while (!atomic_load(&g_stop)) {
        if (s == NULL) {
            /* (Re)join the current runtime: a device and a stream of this thread. */
            if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&s) != ACL_SUCCESS) {
                s = NULL;
                continue;
            }
        }
        int32_t dev = -1;
        note("aclrtGetDevice", aclrtGetDevice(&dev));
        void *p = NULL;
        aclError e = aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
        note("aclrtMalloc", e);
        if (e == ACL_SUCCESS) {
            note("aclrtMemsetAsync", aclrtMemsetAsync(p, 4096, 7, 64, s));
            note("aclrtSynchronizeStream", aclrtSynchronizeStream(s));
            note("aclrtFree", aclrtFree(p));
        } else {
            /* The runtime this thread's stream belonged to is gone. */
            s = NULL;
        }
    }
    return NULL;
}

int main(void)
{
    printf("finalize_race: %d threads calling while aclFinalize runs, %d times\n", THREADS, CYCLES);
    int inits = 0;
    for (int k = 0; k < CYCLES; k++) {
        aclError i = aclInit(NULL);
        if (i != ACL_SUCCESS) {
            printf("  FAIL  cycle %d: aclInit %d: %s\n", k, (int)i, aclGetRecentErrMsg());
            break;
        }
        inits++;
        atomic_store(&g_stop, 0);
        pthread_t t[THREADS];
        for (int j = 0; j < THREADS; j++) {
            CHECK(pthread_create(&t[j], NULL, caller, NULL) == 0);
        }
        /* Let the callers make some calls on this runtime first. */
        long seen = atomic_load(&g_ok);
        while (atomic_load(&g_ok) < seen + 50 && !atomic_load(&g_bad)) {
            sched_yield();
        }
        aclError f = aclFinalize();
        if (f != ACL_SUCCESS) {
            printf("  FAIL  cycle %d: aclFinalize %d: %s\n", k, (int)f, aclGetRecentErrMsg());
        }
        atomic_store(&g_stop, 1);
        for (int j = 0; j < THREADS; j++) {
            pthread_join(t[j], NULL);
        }
    }
    CHECK(inits == CYCLES);
    CHECK(atomic_load(&g_bad) == 0);
    CHECK(atomic_load(&g_ok) > 0);

    printf("finalize_race: aclInit at once after aclFinalize, the callers running, %d times\n", CYCLES);
    int reinits = 0;
    if (CHECK_OK(aclInit(NULL))) {
        pthread_t t[THREADS];
        atomic_store(&g_stop, 0);
        for (int j = 0; j < THREADS; j++) {
            CHECK(pthread_create(&t[j], NULL, caller, NULL) == 0);
        }
        for (int k = 0; k < CYCLES; k++) {
            long seen = atomic_load(&g_ok);
            while (atomic_load(&g_ok) < seen + 50 && !atomic_load(&g_bad)) {
                sched_yield();
            }
            aclError f = aclFinalize();
            aclError i = aclInit(NULL);
            if (f != ACL_SUCCESS || i != ACL_SUCCESS) {
                printf("  FAIL  cycle %d: aclFinalize %d, aclInit %d: %s\n", k, (int)f, (int)i,
                       aclGetRecentErrMsg());
                break;
            }
            reinits++;
        }
        atomic_store(&g_stop, 1);
        for (int j = 0; j < THREADS; j++) {
            pthread_join(t[j], NULL);
        }
        CHECK_OK(aclFinalize());
    }
    CHECK(reinits == CYCLES);
    CHECK(atomic_load(&g_bad) == 0);
    /* A runtime after all that works. */
    aclrtStream s = NULL;
    void *p = NULL;
    if (CHECK_OK(aclInit(NULL)) && CHECK_OK(aclrtSetDevice(0)) && CHECK_OK(aclrtCreateStream(&s)) &&
        CHECK_OK(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK_OK(aclrtMemsetAsync(p, 4096, 9, 4096, s));
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK_OK(aclrtFree(p));
        CHECK_OK(aclrtDestroyStream(s));
    }
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("finalize_race");
}
