/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/host_func.c - host-function threads (fact sheet section 9):
 * aclrtSubscribeHostFunc binds a thread (its pthread_self value) to a stream,
 * the thread runs the stream's aclrtLaunchHostFunc functions in its
 * aclrtProcessHostFunc loop, in stream order; one thread per stream (107011
 * otherwise), one thread may serve several streams; after
 * aclrtUnSubscribeHostFunc the runtime's own thread runs them again. The
 * report-callback slot is separate. Bad inputs included.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

static pthread_t g_ran_on[16];
static int g_order[16];
static int g_n;

static void record(void *arg)
{
    g_ran_on[g_n] = pthread_self();
    g_order[g_n] = (int)(intptr_t)arg;
    g_n++;
}

static int g_to_process;
static aclError g_worker_rc = ACL_SUCCESS;
static void *worker(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < g_to_process; i++) {
        aclError rc = aclrtProcessHostFunc(-1);
        if (rc != ACL_SUCCESS) {
            g_worker_rc = rc;
        }
    }
    return NULL;
}

static void report_cb(void *arg)
{
    (void)arg;
}

int main(void)
{
    aclrtStream s = NULL, s2 = NULL;
    pthread_t t;
    uint64_t tid;
    int i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        printf("init failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStream(&s2));

    check_section("bad inputs");
    CHECK_FAIL(aclrtSubscribeHostFunc(1, NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtUnSubscribeHostFunc(1, NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtProcessHostFunc(0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtProcessHostFunc(-2), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtUnSubscribeHostFunc(1, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    /* An unsubscribed thread simply waits until its timeout. */
    CHECK_FAIL(aclrtProcessHostFunc(20), ACL_ERROR_RT_REPORT_TIMEOUT);

    check_section("the subscribed thread runs the streams' host functions in order");
    g_to_process = 5;
    pthread_create(&t, NULL, worker, NULL);
    tid = (uint64_t)t;
    CHECK_OK(aclrtSubscribeHostFunc(tid, s));
    CHECK_OK(aclrtSubscribeHostFunc(tid, s2)); /* one thread, several streams */
    CHECK_FAIL(aclrtSubscribeHostFunc(tid + 1, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    CHECK_FAIL(aclrtSubscribeHostFunc(tid, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    /* The report slot is independent of the host-function slot. */
    CHECK_OK(aclrtSubscribeReport((uint64_t)pthread_self(), s));
    CHECK_OK(aclrtLaunchCallback(report_cb, NULL, ACL_CALLBACK_NO_BLOCK, s));
    g_n = 0;
    for (i = 0; i < 4; i++) {
        CHECK_OK(aclrtLaunchHostFunc(s, record, (void *)(intptr_t)i));
    }
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtLaunchHostFunc(s2, record, (void *)(intptr_t)4));
    CHECK_OK(aclrtSynchronizeStream(s2));
    pthread_join(t, NULL);
    CHECK_RET(g_worker_rc, ACL_SUCCESS);
    CHECK(g_n == 5);
    for (i = 0; i < g_n; i++) {
        CHECK(pthread_equal(g_ran_on[i], t) && g_order[i] == i);
    }
    CHECK_OK(aclrtProcessReport(1000)); /* the callback went to the report slot's thread */

    check_section("after unsubscribing, the runtime's thread runs them");
    CHECK_FAIL(aclrtUnSubscribeHostFunc(tid + 1, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    CHECK_OK(aclrtUnSubscribeHostFunc(tid, s));
    CHECK_OK(aclrtUnSubscribeHostFunc(tid, s2));
    CHECK_OK(aclrtUnSubscribeReport((uint64_t)pthread_self(), s));
    g_n = 0;
    CHECK_OK(aclrtLaunchHostFunc(s, record, (void *)(intptr_t)9));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(g_n == 1 && g_order[0] == 9 && !pthread_equal(g_ran_on[0], t) &&
          !pthread_equal(g_ran_on[0], pthread_self()));
    CHECK_OK(aclrtSubscribeHostFunc(tid + 1, s)); /* the slot is free again */
    CHECK_OK(aclrtUnSubscribeHostFunc(tid + 1, s));

    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtDestroyStream(s2));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("host_func");
}
