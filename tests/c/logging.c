/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logging.c - drives libascendcl through the calls whose log lines
 * tests/tests/logging.rs reads back (the process's plog file or stdout), and
 * through aclInit's configuration file and software-NPU settings checks.
 *
 *   logging calls              good calls and one failing call (aclrtFree(NULL))
 *   logging clean              good calls only
 *   logging config PATH CODE   aclInit(PATH) must return CODE (and say why)
 *   logging badenv             run with ACLRS_SIM_HBM=1M: aclInit fails naming the
 *                              variable, and later calls say that aclInit failed
 *
 * It prints "pid=N" first, so that the test can find the process's plog file.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl.h"
#include "check.h"

static void good_calls(void)
{
    void *dev = NULL;

    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(dev, 64, 0, 64));
    CHECK_OK(aclrtFree(dev));
}

/* 1 when the newest error message contains `want`. */
static int message_has(const char *want)
{
    const char *msg = aclGetRecentErrMsg();
    int ok = msg != NULL && strstr(msg, want) != NULL;

    printf("  message: %s\n", msg != NULL ? msg : "(null)");
    return ok;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "calls";

    printf("pid=%ld\n", (long)getpid());
    fflush(stdout);
    if (strcmp(mode, "config") == 0 && argc == 4) {
        int want = atoi(argv[3]);
        aclError got = aclInit(argv[2]);

        if (want == ACL_SUCCESS) {
            CHECK_OK(got);
            CHECK_OK(aclFinalize());
        } else {
            CHECK_RET(got, want);
            /* The message is printed for the test to read (line and column). */
            CHECK(message_has("configPath"));
            /* A failed aclInit left nothing behind: a plain one works. */
            CHECK_OK(aclInit(NULL));
            CHECK_OK(aclFinalize());
        }
        return check_summary("logging config");
    }
    if (strcmp(mode, "badenv") == 0) {
        CHECK_RET(aclInit(NULL), ACL_ERROR_INVALID_PARAM);
        CHECK(message_has("ACLRS_SIM_HBM"));
        CHECK_RET(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
        CHECK(message_has("aclInit failed"));
        return check_summary("logging badenv");
    }
    CHECK_OK(aclInit(NULL));
    good_calls();
    if (strcmp(mode, "calls") == 0) {
        CHECK_FAIL(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    }
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("logging");
}
