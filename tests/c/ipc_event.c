/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/ipc_event.c - IPC events (fact sheet section 6): an event made with
 * ACL_EVENT_IPC, recorded in one process and waited on (aclrtStreamWaitEvent)
 * and synchronized in another on the same simulated device (this program
 * starts itself again, see peer.h), then recorded by the second process and
 * seen complete by both; the forbidden uses and bad inputs.
 *
 * Ordering is never decided by time: the owner's record sits behind an
 * aclrtValueWait on a gate word that only the owner opens, after the other
 * process has checked that its stream still waits.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"
#include "peer.h"

static int g_flag;
static void set_flag(void *arg)
{
    (void)arg;
    g_flag = 1;
}

static void to_hex(const aclrtIpcEventHandle *h, char *out)
{
    const unsigned char *b = (const unsigned char *)h->reserved;
    int i;
    for (i = 0; i < (int)ACL_IPC_EVENT_HANDLE_SIZE; i++) {
        sprintf(out + 2 * i, "%02x", b[i]);
    }
}

static void from_hex(const char *in, aclrtIpcEventHandle *h)
{
    int i;
    for (i = 0; i < (int)ACL_IPC_EVENT_HANDLE_SIZE; i++) {
        unsigned v = 0;
        sscanf(in + 2 * i, "%2x", &v);
        h->reserved[i] = (char)v;
    }
}

static int not_ready(aclrtStream s)
{
    aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
    return aclrtStreamQuery(s, &st) == ACL_SUCCESS && st == ACL_STREAM_STATUS_NOT_READY;
}

/* The second process: opens the handle, waits on it, then records it itself. */
static int opener(char **argv)
{
    Peer p;
    char line[256];
    aclrtIpcEventHandle h;
    aclrtEvent e = NULL;
    aclrtStream s = NULL;
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;

    peer_attach(&p, argv);
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&s) != 0) {
        peer_send(&p, "init-failed");
        return 1;
    }
    if (!peer_recv(&p, line, sizeof line)) {
        return 1;
    }
    from_hex(line, &h);
    CHECK_OK(aclrtIpcOpenEventHandle(h, &e));
    CHECK_OK(aclrtStreamWaitEvent(s, e));
    CHECK_OK(aclrtLaunchHostFunc(s, set_flag, NULL));
    CHECK(not_ready(s) && g_flag == 0); /* the owner's record is held by its gate */
    peer_send(&p, "waiting");
    CHECK_OK(aclrtSynchronizeStream(s)); /* returns once the owner opened its gate */
    CHECK(g_flag == 1);
    CHECK_OK(aclrtSynchronizeEvent(e));
    CHECK_FAIL(aclrtResetEvent(e, s), ACL_ERROR_RT_PARAM_INVALID);
    /* Record it here; the owner sees this record. */
    CHECK_OK(aclrtRecordEvent(e, s));
    CHECK_OK(aclrtSynchronizeEvent(e));
    CHECK_OK(aclrtQueryEventStatus(e, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_OK(aclrtDestroyEvent(e));
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    peer_send(&p, check_failures_ == 0 ? "done ok" : "done failed");
    return check_summary("ipc_event (opener)");
}

static void local_rules(void)
{
    aclrtEvent e = NULL, plain = NULL, same = NULL;
    aclrtIpcEventHandle h, junk;
    aclrtStream s = NULL;
    uint64_t ts = 0;
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;

    check_section("creation and bad inputs");
    CHECK_FAIL(aclrtCreateEventExWithFlag(&e, ACL_EVENT_IPC | ACL_EVENT_SYNC), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtCreateEventExWithFlag(&e, ACL_EVENT_IPC));
    CHECK_OK(aclrtCreateEventExWithFlag(&plain, ACL_EVENT_SYNC));
    CHECK_FAIL(aclrtIpcGetEventHandle(plain, &h), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtIpcGetEventHandle(NULL, &h), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcGetEventHandle(e, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtIpcGetEventHandle(e, &h));
    CHECK_FAIL(aclrtIpcOpenEventHandle(h, NULL), ACL_ERROR_INVALID_PARAM);
    memset(&junk, 0x01, sizeof junk);
    CHECK_FAIL(aclrtIpcOpenEventHandle(junk, &same), ACL_ERROR_RT_PARAM_INVALID);
    memset(&junk, 0, sizeof junk);
    memcpy(junk.reserved, "no-such-event", 13);
    CHECK_FAIL(aclrtIpcOpenEventHandle(junk, &same), ACL_ERROR_RT_PARAM_INVALID);

    check_section("never recorded: complete; forbidden uses are refused");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtQueryEventStatus(e, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_OK(aclrtStreamWaitEvent(s, e)); /* nothing outstanding: no task */
    CHECK_OK(aclrtSynchronizeEvent(e));
    CHECK_FAIL(aclrtResetEvent(e, s), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtEventGetTimestamp(e, &ts), ACL_ERROR_RT_PARAM_INVALID);

    check_section("opened in the creating process: the same event");
    CHECK_OK(aclrtIpcOpenEventHandle(h, &same));
    CHECK_OK(aclrtRecordEvent(same, s));
    CHECK_OK(aclrtSynchronizeEvent(e));
    CHECK_OK(aclrtQueryEventStatus(e, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_OK(aclrtDestroyEvent(same));
    CHECK_OK(aclrtDestroyEvent(e));
    CHECK_OK(aclrtDestroyEvent(plain));
    CHECK_OK(aclrtDestroyStream(s));
}

static void across_processes(void)
{
    aclrtEvent e = NULL;
    aclrtIpcEventHandle h;
    aclrtStream s = NULL;
    void *gate = NULL;
    uint64_t one = 1;
    char hex[2 * ACL_IPC_EVENT_HANDLE_SIZE + 1], line[256];
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    Peer b;

    check_section("recorded here, waited on and synchronized in another process");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtMalloc(&gate, 64, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_OK(aclrtMemset(gate, 64, 0, 64));
    CHECK_OK(aclrtCreateEventExWithFlag(&e, ACL_EVENT_IPC));
    CHECK_OK(aclrtValueWait(gate, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    CHECK_OK(aclrtRecordEvent(e, s));
    CHECK_OK(aclrtIpcGetEventHandle(e, &h));
    CHECK_OK(aclrtQueryEventStatus(e, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    if (!CHECK(peer_start(&b, "opener"))) {
        return;
    }
    to_hex(&h, hex);
    peer_send(&b, hex);
    CHECK(peer_recv(&b, line, sizeof line) && strcmp(line, "waiting") == 0);
    CHECK_OK(aclrtMemcpy(gate, 8, &one, 8, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtSynchronizeEvent(e));
    CHECK(peer_recv(&b, line, sizeof line) && strcmp(line, "done ok") == 0);
    CHECK(peer_wait(&b) == 0);
    /* The other process's record ran too. */
    CHECK_OK(aclrtSynchronizeEvent(e));
    CHECK_OK(aclrtQueryEventStatus(e, &st));
    CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_OK(aclrtDestroyEvent(e));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtFree(gate));
    CHECK_OK(aclrtDestroyStream(s));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "opener") == 0) {
        return opener(argv);
    }
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        printf("init failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    local_rules();
    across_processes();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("ipc_event");
}
