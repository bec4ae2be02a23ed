/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/notify.c - notifies (fact sheet section 3): create, destroy,
 * record, wait-and-reset (before or after the record, with and without a
 * timeout), ids, batch reset; IPC notifies across real processes (this
 * program starts itself again, see peer.h): export key, import-pid whitelist
 * (a process not on it is refused with 207006, as for IPC memory), import by
 * key, a record in the importer releasing the owner's wait, and an importer
 * killed with SIGKILL wedging nothing; count notifies (207000). Bad inputs
 * included.
 *
 * Ordering is never decided by time: "still waiting" is checked while nothing
 * can have released the wait.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"
#include "peer.h"

static int g_flags[8];
static void set_flag(void *arg)
{
    g_flags[(intptr_t)arg] = 1;
}

static int not_ready(aclrtStream s)
{
    aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
    return aclrtStreamQuery(s, &st) == ACL_SUCCESS && st == ACL_STREAM_STATUS_NOT_READY;
}

static void cnt_record(aclrtCntNotify cn, aclrtStream s, aclrtCntNotifyRecordMode mode, uint32_t value)
{
    aclrtCntNotifyRecordInfo ri;
    ri.mode = mode;
    ri.value = value;
    CHECK_OK(aclrtCntNotifyRecord(cn, s, &ri));
}

static aclError cnt_wait(aclrtCntNotify cn, aclrtStream s, aclrtCntNotifyWaitMode mode, uint32_t value,
                         uint32_t timeout, uint8_t clear)
{
    aclrtCntNotifyWaitInfo wi;
    memset(&wi, 0, sizeof wi);
    wi.mode = mode;
    wi.value = value;
    wi.timeout = timeout;
    wi.isClear = clear;
    return aclrtCntNotifyWaitWithTimeout(cn, s, &wi);
}

static void count_notifies(aclrtStream a, aclrtStream b)
{
    aclrtCntNotify cn = NULL, cn2 = NULL;
    uint32_t id = 0, id2 = 0;
    aclrtCntNotifyRecordInfo ri;

    check_section("count notifies (Ascend 950): records change the count, waits compare it");
    CHECK_FAIL(aclrtCntNotifyCreate(&cn, 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtCntNotifyCreate(&cn, 0));
    CHECK_OK(aclrtCntNotifyCreate(&cn2, 0));
    CHECK_OK(aclrtCntNotifyGetId(cn, &id));
    CHECK_OK(aclrtCntNotifyGetId(cn2, &id2));
    CHECK(id != id2);
    CHECK_FAIL(aclrtCntNotifyGetId(cn, NULL), ACL_ERROR_INVALID_PARAM);
    ri.mode = (aclrtCntNotifyRecordMode)3;
    ri.value = 1;
    CHECK_FAIL(aclrtCntNotifyRecord(cn, a, &ri), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(cnt_wait(cn, b, (aclrtCntNotifyWaitMode)5, 1, 0, 0), ACL_ERROR_RT_PARAM_INVALID);

    memset(g_flags, 0, sizeof g_flags);
    CHECK_OK(cnt_wait(cn, b, ACL_RT_CNT_NOTIFY_WAIT_BIGGER_OR_EQUAL_MODE, 3, 0, 1));
    CHECK_OK(aclrtLaunchHostFunc(b, set_flag, (void *)5));
    CHECK(not_ready(b));
    cnt_record(cn, a, ACL_RT_CNT_NOTIFY_RECORD_ADD_MODE, 1);
    cnt_record(cn, a, ACL_RT_CNT_NOTIFY_RECORD_ADD_MODE, 1);
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK(not_ready(b) && g_flags[5] == 0); /* 2 < 3 */
    cnt_record(cn, a, ACL_RT_CNT_NOTIFY_RECORD_ADD_MODE, 1);
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(g_flags[5] == 1);
    /* isClear reset it: */
    CHECK_OK(cnt_wait(cn, b, ACL_RT_CNT_NOTIFY_WAIT_EQUAL_MODE, 0, 5, 0));
    CHECK_OK(aclrtSynchronizeStream(b));

    cnt_record(cn, a, ACL_RT_CNT_NOTIFY_RECORD_SET_VALUE_MODE, 8);
    cnt_record(cn, a, ACL_RT_CNT_NOTIFY_RECORD_BIT_OR_MODE, 1);
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(cnt_wait(cn, b, ACL_RT_CNT_NOTIFY_WAIT_EQUAL_WITH_BITMASK_MODE, 9, 5, 0));
    CHECK_OK(cnt_wait(cn, b, ACL_RT_CNT_NOTIFY_WAIT_BIGGER_MODE, 8, 5, 0));
    CHECK_OK(aclrtSynchronizeStream(b));
    cnt_record(cn, a, ACL_RT_CNT_NOTIFY_RECORD_BIT_AND_MODE, 1);
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(cnt_wait(cn, b, ACL_RT_CNT_NOTIFY_WAIT_EQUAL_MODE, 1, 5, 0));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK_OK(aclrtCntNotifyReset(cn, a));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(cnt_wait(cn, b, ACL_RT_CNT_NOTIFY_WAIT_LESS_MODE, 1, 5, 0));
    CHECK_OK(aclrtSynchronizeStream(b));

    check_section("an expired count wait fails the next synchronize");
    CHECK_OK(cnt_wait(cn, b, ACL_RT_CNT_NOTIFY_WAIT_EQUAL_MODE, 5, 1, 0));
    CHECK_FAIL(aclrtSynchronizeStream(b), ACL_ERROR_RT_WAIT_TIMEOUT);

    CHECK_OK(aclrtCntNotifyDestroy(cn));
    CHECK_OK(aclrtCntNotifyDestroy(cn2));
    CHECK_FAIL(aclrtCntNotifyDestroy(cn), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtCntNotifyDestroy(NULL), ACL_ERROR_INVALID_PARAM);
}

static void local(void)
{
    aclrtNotify n = NULL, m = NULL;
    aclrtStream a = NULL, b = NULL;
    uint32_t id1 = 0, id2 = 0;
    aclrtNotify list[2];
    char key[80];
    aclrtCntNotify cn = NULL;
    aclrtCntNotifyRecordInfo ri;
    aclrtServerPid sp;
    int32_t pid = 1;

    check_section("create, ids, bad inputs");
    CHECK_FAIL(aclrtCreateNotify(NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCreateNotify(&n, 2), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT));
    CHECK_OK(aclrtCreateNotify(&m, ACL_NOTIFY_DEVICE_USE_ONLY));
    CHECK_OK(aclrtGetNotifyId(n, &id1));
    CHECK_OK(aclrtGetNotifyId(m, &id2));
    CHECK(id1 != id2);
    CHECK_FAIL(aclrtGetNotifyId(NULL, &id1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetNotifyId(n, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtRecordNotify(NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtWaitAndResetNotify(NULL, NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtDestroyNotify(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCreateStream(&a));
    CHECK_OK(aclrtCreateStream(&b));

    check_section("a wait enqueued before the record holds its stream until the record");
    memset(g_flags, 0, sizeof g_flags);
    CHECK_OK(aclrtWaitAndResetNotify(n, b, 0));
    CHECK_OK(aclrtLaunchHostFunc(b, set_flag, (void *)0));
    CHECK(not_ready(b) && g_flags[0] == 0);
    CHECK_OK(aclrtRecordNotify(n, a));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(g_flags[0] == 1);

    check_section("the wait reset the notify: the next wait needs a new record");
    CHECK_OK(aclrtWaitAndResetNotify(n, b, UINT32_MAX));
    CHECK_OK(aclrtLaunchHostFunc(b, set_flag, (void *)1));
    CHECK(not_ready(b) && g_flags[1] == 0);
    CHECK_OK(aclrtRecordNotify(n, NULL)); /* the default stream */
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(g_flags[1] == 1);

    check_section("a record before a timed wait releases it; an expired one fails the sync");
    CHECK_OK(aclrtRecordNotify(n, a));
    CHECK_OK(aclrtSynchronizeStream(a));
    CHECK_OK(aclrtWaitAndResetNotify(n, b, 30));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK_OK(aclrtWaitAndResetNotify(n, b, 1)); /* nobody records */
    CHECK_FAIL(aclrtSynchronizeStream(b), ACL_ERROR_RT_WAIT_TIMEOUT);
    CHECK_OK(aclrtLaunchHostFunc(b, set_flag, (void *)2));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK(g_flags[2] == 1);

    check_section("aclrtNotifyBatchReset clears set notifies");
    CHECK_OK(aclrtRecordNotify(n, a));
    CHECK_OK(aclrtRecordNotify(m, a));
    CHECK_OK(aclrtSynchronizeStream(a));
    list[0] = n;
    list[1] = m;
    CHECK_OK(aclrtNotifyBatchReset(list, 2));
    CHECK_OK(aclrtWaitAndResetNotify(m, b, 0));
    CHECK(not_ready(b));
    CHECK_OK(aclrtRecordNotify(m, a));
    CHECK_OK(aclrtSynchronizeStream(b));
    CHECK_FAIL(aclrtNotifyBatchReset(NULL, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtNotifyBatchReset(list, 0), ACL_ERROR_RT_PARAM_INVALID);

    check_section("export and import: bad inputs");
    CHECK_FAIL(aclrtNotifyGetExportKey(n, NULL, sizeof key, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtNotifyGetExportKey(NULL, key, sizeof key, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtNotifyGetExportKey(n, key, 0, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtNotifyGetExportKey(n, key, 10, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtNotifyGetExportKey(n, key, sizeof key, 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtNotifySetImportPid(n, &pid, 1), ACL_ERROR_RT_PARAM_INVALID); /* not exported */
    CHECK_OK(aclrtNotifyGetExportKey(m, key, 65, ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION));
    CHECK(strlen(key) > 0 && strlen(key) <= 64);
    CHECK_FAIL(aclrtNotifyGetExportKey(m, key, sizeof key, 0), ACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_FAIL(aclrtNotifySetImportPid(m, NULL, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtNotifySetImportPid(m, &pid, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtNotifyImportByKey(NULL, key, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtNotifyImportByKey(&n, NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtNotifyImportByKey(&n, key, 4), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtNotifyImportByKey(&n, "no-such-key", 0), ACL_ERROR_RT_PARAM_INVALID);
    sp.sdid = 0;
    sp.pid = &pid;
    sp.num = 1;
    CHECK_FAIL(aclrtNotifySetImportPidInterServer(m, &sp, 1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT); /* not A3 */
    /* Still a working notify after its export. */
    CHECK_OK(aclrtWaitAndResetNotify(m, b, 0));
    CHECK(not_ready(b));
    CHECK_OK(aclrtRecordNotify(m, a));
    CHECK_OK(aclrtSynchronizeStream(b));

    CHECK_FAIL(aclrtCntNotifyCreate(NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCntNotifyRecord(cn, a, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCntNotifyWaitWithTimeout(cn, a, NULL), ACL_ERROR_INVALID_PARAM);
    if (strcmp(aclrtGetSocName(), "Ascend950PR") == 0) {
        count_notifies(a, b);
    } else {
        check_section("count notifies exist only on Ascend 950");
        CHECK_FAIL(aclrtCntNotifyCreate(&cn, 0), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        ri.mode = ACL_RT_CNT_NOTIFY_RECORD_ADD_MODE;
        ri.value = 1;
        CHECK_FAIL(aclrtCntNotifyRecord(cn, a, &ri), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    }

    check_section("destroy");
    CHECK_OK(aclrtDestroyNotify(n));
    CHECK_OK(aclrtDestroyNotify(m));
    CHECK_FAIL(aclrtDestroyNotify(n), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtRecordNotify(n, a), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_OK(aclrtDestroyStream(a));
    CHECK_OK(aclrtDestroyStream(b));
}

/* ---- the second process ---- */

/* Importer: pid, then for each command: "import KEY" -> rc; "record" -> rc (record + sync);
 * "wait" -> rc of a wait on the import; "quit". */
static int importer(char **argv)
{
    Peer p;
    char line[160], out[160];
    aclrtNotify n = NULL;
    aclrtStream s = NULL;
    int32_t pid = 0;

    peer_attach(&p, argv);
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&s) != 0 ||
        aclrtDeviceGetBareTgid(&pid) != ACL_SUCCESS) {
        peer_send(&p, "init-failed");
        return 1;
    }
    snprintf(out, sizeof out, "%d", pid);
    peer_send(&p, out);
    while (peer_recv(&p, line, sizeof line)) {
        aclError rc = 0;
        if (strncmp(line, "import ", 7) == 0) {
            rc = aclrtNotifyImportByKey(&n, line + 7, ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS);
        } else if (strcmp(line, "record") == 0) {
            rc = aclrtRecordNotify(n, s);
            if (rc == 0) {
                rc = aclrtSynchronizeStream(s);
            }
        } else if (strcmp(line, "wait") == 0) {
            rc = aclrtWaitAndResetNotify(n, s, 0);
        } else if (strcmp(line, "destroy") == 0) {
            rc = aclrtDestroyNotify(n);
        } else if (strcmp(line, "quit") == 0) {
            break;
        }
        snprintf(out, sizeof out, "rc %d", (int)rc);
        peer_send(&p, out);
    }
    aclrtDestroyStream(s);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}

static int ask(Peer *p, const char *cmd)
{
    char line[160];
    peer_send(p, cmd);
    if (!peer_recv(p, line, sizeof line) || strncmp(line, "rc ", 3) != 0) {
        printf("  peer answered \"%s\" to \"%s\"\n", line, cmd);
        return -1;
    }
    return atoi(line + 3);
}

static void across_processes(void)
{
    aclrtNotify n = NULL, n2 = NULL;
    aclrtStream s = NULL;
    Peer b, c, k;
    char key[80], cmd[160], line[160];
    int32_t pid_b;

    check_section("IPC notify: whitelist, import, a record in another process releases the wait");
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateNotify(&n, 0));
    CHECK_OK(aclrtNotifyGetExportKey(n, key, sizeof key, ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT));
    if (!CHECK(peer_start(&b, "importer") && peer_recv(&b, line, sizeof line)) ||
        !CHECK(peer_start(&c, "importer") && peer_recv(&c, cmd, sizeof cmd))) {
        return;
    }
    pid_b = atoi(line);
    CHECK(pid_b > 0);
    snprintf(cmd, sizeof cmd, "import %s", key);
    CHECK_RET(ask(&b, cmd), ACL_ERROR_RT_NO_PERMISSION); /* not whitelisted yet */
    CHECK_OK(aclrtNotifySetImportPid(n, &pid_b, 1));
    CHECK_RET(ask(&b, cmd), ACL_SUCCESS);
    CHECK_RET(ask(&c, cmd), ACL_ERROR_RT_NO_PERMISSION); /* C is not on the whitelist */
    CHECK_RET(ask(&b, "wait"), ACL_ERROR_RT_PARAM_INVALID); /* only the owner waits */

    memset(g_flags, 0, sizeof g_flags);
    CHECK_OK(aclrtWaitAndResetNotify(n, s, 0));
    CHECK_OK(aclrtLaunchHostFunc(s, set_flag, (void *)0));
    CHECK(not_ready(s) && g_flags[0] == 0);
    CHECK_RET(ask(&b, "record"), ACL_SUCCESS);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(g_flags[0] == 1);
    /* Once more: the wait reset the shared word. */
    CHECK_OK(aclrtWaitAndResetNotify(n, s, 0));
    CHECK(not_ready(s));
    CHECK_RET(ask(&b, "record"), ACL_SUCCESS);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_RET(ask(&b, "destroy"), ACL_SUCCESS);
    peer_send(&b, "quit");
    CHECK(peer_wait(&b) == 0);
    peer_send(&c, "quit");
    CHECK(peer_wait(&c) == 0);

    check_section("an importer killed with SIGKILL wedges nothing");
    if (CHECK(peer_start(&k, "importer") && peer_recv(&k, line, sizeof line))) {
        int32_t pid_k = atoi(line);
        CHECK_OK(aclrtNotifySetImportPid(n, &pid_k, 1));
        CHECK_RET(ask(&k, cmd), ACL_SUCCESS);
        peer_kill(&k);
    }
    CHECK_OK(aclrtDestroyNotify(n));
    CHECK_OK(aclrtCreateNotify(&n2, 0));
    CHECK_OK(aclrtNotifyGetExportKey(n2, key, sizeof key, ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION));
    CHECK_OK(aclrtRecordNotify(n2, s));
    CHECK_OK(aclrtWaitAndResetNotify(n2, s, 0));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtDestroyNotify(n2));
    CHECK_OK(aclrtDestroyStream(s));
}

int main(int argc, char **argv)
{
    aclrtNotify n = NULL;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "importer") == 0) {
        return importer(argv);
    }
    if (aclInit(NULL) != ACL_SUCCESS) {
        printf("aclInit failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    check_section("no current device");
    CHECK_FAIL(aclrtCreateNotify(&n, 0), ACL_ERROR_RT_CONTEXT_NULL);
    if (!CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("notify");
    }
    local();
    across_processes();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("notify");
}
