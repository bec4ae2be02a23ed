/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/cross_wait.c - a task that waits for a later task of another stream. Stream b runs
 * a host function that waits (on a condition variable) until stream a's host function, queued
 * after it, has run; a device runs streams side by side, so this always finishes, whatever
 * the device threads were doing when the two were queued. Many rounds, with pauses of
 * different lengths before them (so the device threads are found spinning, parked, or just
 * back from a task of stream a), each synchronised with a timeout: a round whose stream a task
 * was left in a queue no device thread looks at fails with a timeout instead of hanging.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "acl/acl.h"
#include "check.h"

#define ROUNDS 1000
#define TIMEOUT_MS 5000

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_ready;
static int g_timed_out;

static void nothing(void *arg)
{
    (void)arg;
}

/* Stream b: waits until `signal` ran (or 2 * TIMEOUT_MS passed, so a lost task cannot hang
 * the test). */
static void wait_for_signal(void *arg)
{
    (void)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2 * TIMEOUT_MS / 1000;
    pthread_mutex_lock(&g_mu);
    while (!g_ready) {
        if (pthread_cond_timedwait(&g_cv, &g_mu, &until) != 0) {
            g_timed_out = 1;
            break;
        }
    }
    g_ready = 0;
    pthread_mutex_unlock(&g_mu);
}

/* Stream a: lets `wait_for_signal` go. */
static void signal_it(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_mu);
    g_ready = 1;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

static void pause_us(long us)
{
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

int main(void)
{
    aclrtStream a = NULL, b = NULL;
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&a));
    CHECK_OK(aclrtCreateStream(&b));
    int failed = 0;
    for (int r = 0; r < ROUNDS && !failed; r++) {
        /* With the device threads parked (a pause of 1-2 ms), a task of stream a and the wait
         * on stream b are queued together, so that one device thread may take both queues,
         * serve stream a's task and then run the wait; stream a's next task comes after a
         * pause of 0 to about 500 us, while that thread is in the wait. */
        pause_us(1000 + (r * 131) % 1000);
        CHECK_OK(aclrtLaunchHostFunc(a, nothing, NULL));
        CHECK_OK(aclrtLaunchHostFunc(b, wait_for_signal, NULL));
        pause_us((r * 37) % 500);
        CHECK_OK(aclrtLaunchHostFunc(a, signal_it, NULL));
        aclError ea = aclrtSynchronizeStreamWithTimeout(a, TIMEOUT_MS);
        aclError eb = aclrtSynchronizeStreamWithTimeout(b, 3 * TIMEOUT_MS);
        if (ea != ACL_SUCCESS || eb != ACL_SUCCESS || g_timed_out) {
            printf("  FAIL  round %d: stream a %d, stream b %d, the wait %s\n", r, (int)ea, (int)eb,
                   g_timed_out ? "timed out" : "ended");
            failed = 1;
        }
        CHECK(ea == ACL_SUCCESS && eb == ACL_SUCCESS && !g_timed_out);
        if (failed) {
            break;
        }
    }
    CHECK_OK(aclrtDestroyStream(a));
    CHECK_OK(aclrtDestroyStream(b));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("cross_wait");
}
