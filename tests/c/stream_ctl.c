/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/stream_ctl.c - stream control (fact sheet section 8): stream-state
 * callbacks, id/flag/priority queries, priority range, available streams,
 * attributes, the stream-config handle and aclrtCreateStreamV2, waits with a
 * timeout and the flag variant, stop, and abort (queued tasks dropped, 107023
 * while it runs, the stream usable afterwards). Bad inputs included.
 *
 * Ordering is never decided by time: a stream is held by an aclrtValueWait
 * on a gate word, or by a host function blocked on a condition variable that
 * this program opens; "has not run" is checked while such a gate is closed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

/* ---- stream-state callbacks ---- */
static struct {
    aclrtStream stm;
    aclrtStreamState state;
    char who;
} g_log[64];
static int g_n;

static void state_cb(aclrtStream stm, aclrtStreamState state, void *args)
{
    if (g_n < 64) {
        g_log[g_n].stm = stm;
        g_log[g_n].state = state;
        g_log[g_n].who = *(const char *)args;
        g_n++;
    }
}

static void callbacks_before_set_device(void)
{
    static const char a = 'a', b = 'b';
    check_section("aclrtRegStreamStateCallback: names are unique, NULL unregisters");
    CHECK_FAIL(aclrtRegStreamStateCallback(NULL, state_cb, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtRegStreamStateCallback("zz-second", state_cb, (void *)&b));
    CHECK_OK(aclrtRegStreamStateCallback("aa-first", state_cb, (void *)&a));
    CHECK_FAIL(aclrtRegStreamStateCallback("aa-first", state_cb, (void *)&a), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtRegStreamStateCallback("never-registered", NULL, NULL));
}

static void callbacks_fire(void)
{
    aclrtStream s = NULL;
    int before;
    check_section("callbacks fire after create and before destroy, in name order");
    /* The default stream's creation is reported too (on its first use here). */
    CHECK(g_n == 0);
    CHECK_OK(aclrtSynchronizeStream(NULL));
    CHECK(g_n == 2 && g_log[0].stm != NULL && g_log[0].state == ACL_RT_STREAM_STATE_CREATE_POST);
    before = g_n;
    CHECK_OK(aclrtCreateStream(&s));
    CHECK(g_n == before + 2);
    CHECK(g_log[before].stm == s && g_log[before].state == ACL_RT_STREAM_STATE_CREATE_POST);
    CHECK(g_log[before].who == 'a' && g_log[before + 1].who == 'b');
    CHECK_OK(aclrtDestroyStream(s));
    CHECK(g_n == before + 4);
    CHECK(g_log[before + 2].stm == s && g_log[before + 2].state == ACL_RT_STREAM_STATE_DESTROY_PRE);
    CHECK_OK(aclrtRegStreamStateCallback("aa-first", NULL, NULL));
    CHECK_OK(aclrtRegStreamStateCallback("zz-second", NULL, NULL));
    before = g_n;
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtDestroyStream(s));
    CHECK(g_n == before);
}

/* ---- queries ---- */
static void queries(void)
{
    aclrtStream s1 = NULL, s2 = NULL;
    int32_t id1 = -1, id2 = -1, least = -1, greatest = -1;
    uint32_t flags = 99, prio = 99, avail = 0, avail2 = 0;

    check_section("aclrtStreamGetId / GetFlags / GetPriority");
    CHECK_OK(aclrtCreateStreamWithConfig(&s1, 3, ACL_STREAM_FAST_LAUNCH));
    CHECK_OK(aclrtCreateStreamWithConfig(&s2, 42, 0));
    CHECK_OK(aclrtStreamGetId(s1, &id1));
    CHECK_OK(aclrtStreamGetId(s2, &id2));
    CHECK(id1 >= 0 && id2 >= 0 && id1 != id2);
    CHECK_OK(aclrtStreamGetFlags(s1, &flags));
    CHECK(flags == ACL_STREAM_FAST_LAUNCH);
    CHECK_OK(aclrtStreamGetPriority(s1, &prio));
    CHECK(prio == 3);
    CHECK_OK(aclrtStreamGetPriority(s2, &prio));
    CHECK(prio == 7); /* clamped into [0, 7] */
    CHECK_OK(aclrtStreamGetFlags(NULL, &flags));
    CHECK(flags == 0);
    CHECK_OK(aclrtStreamGetId(NULL, &id1));
    CHECK_FAIL(aclrtStreamGetId(s1, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtStreamGetFlags(s1, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtStreamGetPriority(s1, NULL), ACL_ERROR_INVALID_PARAM);

    check_section("aclrtDeviceGetStreamPriorityRange / aclrtGetStreamAvailableNum");
    CHECK_OK(aclrtDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK(least == 7 && greatest == 0);
    CHECK_OK(aclrtDeviceGetStreamPriorityRange(NULL, NULL));
    CHECK_OK(aclrtGetStreamAvailableNum(&avail));
    CHECK_OK(aclrtDestroyStream(s2));
    CHECK_OK(aclrtGetStreamAvailableNum(&avail2));
    CHECK(avail > 0 && avail2 == avail + 1);
    CHECK_FAIL(aclrtGetStreamAvailableNum(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtDestroyStream(s1));
}

/* ---- attributes ---- */
static void attributes(void)
{
    aclrtStream s = NULL;
    aclrtStreamAttrValue v;

    check_section("aclrtSetStreamAttribute / aclrtGetStreamAttribute");
    CHECK_OK(aclrtCreateStream(&s));
    memset(&v, 0, sizeof v);
    v.overflowSwitch = 1;
    CHECK_OK(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK, &v));
    v.userCustomTag = 77;
    CHECK_OK(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_USER_CUSTOM_TAG, &v));
    v.cacheOpInfoSwitch = 1;
    CHECK_OK(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_CACHE_OP_INFO, &v));
    v.streamPriority = 9;
    CHECK_OK(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_PRIORITY, &v));
    memset(&v, 0, sizeof v);
    CHECK_OK(aclrtGetStreamAttribute(s, ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK, &v));
    CHECK(v.overflowSwitch == 1);
    CHECK_OK(aclrtGetStreamAttribute(s, ACL_STREAM_ATTR_USER_CUSTOM_TAG, &v));
    CHECK(v.userCustomTag == 77);
    CHECK_OK(aclrtGetStreamAttribute(s, ACL_STREAM_ATTR_CACHE_OP_INFO, &v));
    CHECK(v.cacheOpInfoSwitch == 1);
    CHECK_OK(aclrtGetStreamAttribute(s, ACL_STREAM_ATTR_PRIORITY, &v));
    CHECK(v.streamPriority == 7); /* clamped */
    memset(&v, 0, sizeof v);
    CHECK_OK(aclrtGetStreamAttribute(s, ACL_STREAM_ATTR_FAILURE_MODE, &v));
    CHECK(v.failureMode == 0);
    v.failureMode = 1;
    CHECK_OK(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_FAILURE_MODE, &v));
    CHECK_OK(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_FAILURE_MODE, &v)); /* same mode again */
    v.failureMode = 0;
    CHECK_FAIL(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_FAILURE_MODE, &v), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_OK(aclrtGetStreamAttribute(s, ACL_STREAM_ATTR_FAILURE_MODE, &v));
    CHECK(v.failureMode == 1);
    CHECK_FAIL(aclrtSetStreamAttribute(NULL, ACL_STREAM_ATTR_PRIORITY, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetStreamAttribute(s, (aclrtStreamAttr)0, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetStreamAttribute(s, (aclrtStreamAttr)6, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetStreamAttribute(s, ACL_STREAM_ATTR_PRIORITY, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetStreamAttribute(s, ACL_STREAM_ATTR_PRIORITY, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtDestroyStream(s));
}

/* ---- stream config ---- */
static void stream_config(void)
{
    aclrtStreamConfigHandle *h;
    aclrtStream s = NULL, s0 = NULL;
    size_t work = 4096, flag = 0;
    uint32_t flag32 = 0, prio = 2, bad = 8, got = 99;

    check_section("stream-config handle and aclrtCreateStreamV2");
    h = aclrtCreateStreamConfigHandle();
    if (!CHECK(h != NULL)) {
        return;
    }
    CHECK(h->workptr == NULL && h->workSize == 0 && h->flag == 0 && h->priority == 0);
    CHECK_OK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_WORK_SIZE, &work, sizeof work));
    CHECK(h->workSize == 4096);
    CHECK_FAIL(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_FLAG, &flag32, sizeof flag32), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_FLAG, &flag, sizeof flag));
    CHECK_FAIL(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_PRIORITY, &bad, sizeof bad), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_PRIORITY, &prio, sizeof prio));
    CHECK_FAIL(aclrtSetStreamConfigOpt(h, (aclrtStreamConfigAttr)4, &prio, sizeof prio), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtSetStreamConfigOpt(NULL, ACL_RT_STREAM_PRIORITY, &prio, sizeof prio), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_PRIORITY, NULL, sizeof prio), ACL_ERROR_INVALID_PARAM);
    CHECK(h->priority == 2);
    CHECK_OK(aclrtCreateStreamV2(&s, h));
    CHECK_OK(aclrtStreamGetPriority(s, &got));
    CHECK(got == 2);
    CHECK_OK(aclrtStreamGetFlags(s, &got));
    CHECK(got == 0);
    CHECK_OK(aclrtCreateStreamV2(&s0, NULL));
    CHECK_FAIL(aclrtCreateStreamV2(NULL, h), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtDestroyStreamConfigHandle(h));
    CHECK_FAIL(aclrtDestroyStreamConfigHandle(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtDestroyStream(s0));
}

/* ---- gates ---- */
static void *g_gate;

static void close_gate(void)
{
    CHECK_OK(aclrtMemset(g_gate, 64, 0, 64));
}

static void open_gate(void)
{
    uint64_t one = 1;
    CHECK_OK(aclrtMemcpy(g_gate, 8, &one, 8, ACL_MEMCPY_HOST_TO_DEVICE));
}

static int g_flags[8];
static void set_flag(void *arg)
{
    g_flags[(intptr_t)arg] = 1;
}

static void timed_waits(void)
{
    aclrtStream a = NULL, b = NULL;
    aclrtEvent e = NULL, plain = NULL;
    aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;

    check_section("aclrtStreamWaitEventWithTimeout: bad inputs");
    CHECK_OK(aclrtCreateStream(&a));
    CHECK_OK(aclrtCreateStream(&b));
    CHECK_OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    CHECK_OK(aclrtCreateEventExWithFlag(&plain, ACL_EVENT_TIME_LINE));
    CHECK_FAIL(aclrtStreamWaitEventWithTimeout(b, e, -1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtStreamWaitEventWithTimeout(b, NULL, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtStreamWaitEventWithTimeout(b, plain, 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtStreamWaitEventWithFlag(b, e, 0, 2), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtStreamWaitEventWithFlag(b, e, 5, ACL_EVENT_WAIT_EXTERNAL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtStreamWaitEventWithFlag(b, NULL, 0, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtStreamWaitEventWithFlag(b, e, 0, ACL_EVENT_WAIT_EXTERNAL), ACL_ERROR_RT_STREAM_NOT_CAPTURED);

    check_section("a timed wait holds the stream until the record, in order");
    memset(g_flags, 0, sizeof g_flags);
    close_gate();
    CHECK_OK(aclrtValueWait(g_gate, 1, ACL_STREAM_WAIT_VALUE_EQ, a));
    CHECK_OK(aclrtLaunchHostFunc(a, set_flag, (void *)0));
    CHECK_OK(aclrtRecordEvent(e, a));
    CHECK_OK(aclrtStreamWaitEventWithTimeout(b, e, 60));
    CHECK_OK(aclrtLaunchHostFunc(b, set_flag, (void *)1));
    CHECK_OK(aclrtStreamQuery(b, &st));
    CHECK(st == ACL_STREAM_STATUS_NOT_READY && g_flags[1] == 0);
    open_gate();
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(g_flags[0] == 1 && g_flags[1] == 1);
    CHECK_OK(aclrtSynchronizeStream(a));

    check_section("the flag variant with ACL_EVENT_WAIT_DEFAULT waits the same way");
    memset(g_flags, 0, sizeof g_flags);
    close_gate();
    CHECK_OK(aclrtValueWait(g_gate, 1, ACL_STREAM_WAIT_VALUE_EQ, a));
    CHECK_OK(aclrtRecordEvent(e, a));
    CHECK_OK(aclrtStreamWaitEventWithFlag(b, e, 0, ACL_EVENT_WAIT_DEFAULT));
    CHECK_OK(aclrtLaunchHostFunc(b, set_flag, (void *)2));
    CHECK_OK(aclrtStreamQuery(b, &st));
    CHECK(st == ACL_STREAM_STATUS_NOT_READY && g_flags[2] == 0);
    open_gate();
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(g_flags[2] == 1);
    CHECK_OK(aclrtSynchronizeStream(a));

    check_section("an expired timed wait fails the waiting stream's next synchronize");
    close_gate();
    CHECK_OK(aclrtValueWait(g_gate, 1, ACL_STREAM_WAIT_VALUE_EQ, a));
    CHECK_OK(aclrtRecordEvent(e, a));
    CHECK_OK(aclrtStreamWaitEventWithTimeout(b, e, 1)); /* the gate stays closed */
    CHECK_FAIL(aclrtSynchronizeStream(b), ACL_ERROR_RT_WAIT_TIMEOUT);
    CHECK_OK(aclrtLaunchHostFunc(b, set_flag, (void *)3));
    CHECK_OK(aclrtSynchronizeStream(b)); /* the stream goes on */
    CHECK(g_flags[3] == 1);
    open_gate();
    CHECK_OK(aclrtSynchronizeStream(a));

    CHECK_OK(aclrtDestroyEvent(e));
    CHECK_OK(aclrtDestroyEvent(plain));
    CHECK_OK(aclrtDestroyStream(a));
    CHECK_OK(aclrtDestroyStream(b));
}

static void stop(void)
{
    aclrtStream s = NULL;
    check_section("aclrtStreamStop keeps queued tasks; NULL is refused");
    CHECK_FAIL(aclrtStreamStop(NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtCreateStream(&s));
    memset(g_flags, 0, sizeof g_flags);
    close_gate();
    CHECK_OK(aclrtValueWait(g_gate, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    CHECK_OK(aclrtLaunchHostFunc(s, set_flag, (void *)0));
    CHECK_OK(aclrtStreamStop(s));
    open_gate();
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(g_flags[0] == 1);
    CHECK_OK(aclrtDestroyStream(s));
}

/* A host function that holds its stream until released. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_entered, g_release;

static void blocker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_mu);
    g_entered = 1;
    pthread_cond_broadcast(&g_cv);
    while (!g_release) {
        pthread_cond_wait(&g_cv, &g_mu);
    }
    pthread_mutex_unlock(&g_mu);
}

static aclrtContext g_ctx;
static aclError g_abort_rc = -1;
static int g_abort_done;
static void *abort_thread(void *arg)
{
    aclrtSetCurrentContext(g_ctx);
    g_abort_rc = aclrtStreamAbort((aclrtStream)arg);
    __atomic_store_n(&g_abort_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void abort_stream(void)
{
    aclrtStream s = NULL;
    pthread_t t;
    aclError rc;

    check_section("aclrtStreamAbort drops queued tasks and leaves the stream usable");
    CHECK_OK(aclrtCreateStream(&s));
    memset(g_flags, 0, sizeof g_flags);
    close_gate();
    CHECK_OK(aclrtValueWait(g_gate, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    CHECK_OK(aclrtLaunchHostFunc(s, set_flag, (void *)0));
    rc = aclrtStreamAbort(s);
    if (rc == ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
        /* A backend that cannot drop queued tasks (the davinci backend today): the documented
         * code, a message, and the stream untouched. */
        CHECK_FAIL(rc, ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        open_gate();
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK(g_flags[0] == 1);
        CHECK_OK(aclrtDestroyStream(s));
        return;
    }
    CHECK_RET(rc, ACL_SUCCESS);
    CHECK(g_flags[0] == 0);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtLaunchHostFunc(s, set_flag, (void *)1));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(g_flags[0] == 0 && g_flags[1] == 1);
    CHECK_OK(aclrtStreamAbort(NULL)); /* the default stream */

    check_section("while an abort runs, synchronize and submissions return 107023");
    g_entered = 0;
    g_release = 0;
    CHECK_OK(aclrtLaunchHostFunc(s, blocker, NULL));
    CHECK_OK(aclrtLaunchHostFunc(s, set_flag, (void *)2));
    pthread_mutex_lock(&g_mu);
    while (!g_entered) {
        pthread_cond_wait(&g_cv, &g_mu);
    }
    pthread_mutex_unlock(&g_mu);
    CHECK_OK(aclrtGetCurrentContext(&g_ctx));
    pthread_create(&t, NULL, abort_thread, s);
    /* Poll until the abort is seen: before it, the blocked stream just times out. */
    do {
        rc = aclrtSynchronizeStreamWithTimeout(s, 0);
    } while (rc != ACL_ERROR_RT_STREAM_ABORT && !__atomic_load_n(&g_abort_done, __ATOMIC_ACQUIRE));
    CHECK_FAIL(rc, ACL_ERROR_RT_STREAM_ABORT);
    CHECK_FAIL(aclrtLaunchHostFunc(s, set_flag, (void *)3), ACL_ERROR_RT_STREAM_ABORT);
    pthread_mutex_lock(&g_mu);
    g_release = 1;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    pthread_join(t, NULL);
    CHECK_RET(g_abort_rc, ACL_SUCCESS);
    CHECK(g_flags[2] == 0 && g_flags[3] == 0);
    CHECK_OK(aclrtLaunchHostFunc(s, set_flag, (void *)4));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(g_flags[4] == 1);
    CHECK_OK(aclrtDestroyStream(s));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (aclInit(NULL) != ACL_SUCCESS) {
        printf("aclInit failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    callbacks_before_set_device();
    if (!CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("stream_ctl");
    }
    callbacks_fire();
    queries();
    attributes();
    stream_config();
    if (CHECK_OK(aclrtMalloc(&g_gate, 64, ACL_MEM_MALLOC_NORMAL_ONLY))) {
        timed_waits();
        stop();
        abort_stream();
        CHECK_OK(aclrtFree(g_gate));
    }
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("stream_ctl");
}
