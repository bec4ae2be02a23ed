/* SPDX-License-Identifier: Apache-2.0 */
/*
 * window_addresses.c - every address inside a runtime VA window is the
 * runtime's, used or not: a copy or set that names one where nothing is
 * allocated fails with ACL_ERROR_RT_PARAM_INVALID (107000) and a message, and
 * is never treated as ordinary host memory (which would fault the process).
 *
 * The windows: pinned host memory at 7 TiB (1 TiB), the stream-ordered pool
 * window at 12 TiB (4 TiB, a 64 GiB slice per device; no pool exists here), the
 * device windows from 16 TiB (128 GiB per device, 64 devices).
 * Each stray address is tried as destination and source of synchronous and
 * asynchronous copies of every kind that could apply, and with memset; then
 * a live allocation and the host buffers are checked unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define SZ ((size_t)4096)
#define TIB ((uint64_t)1 << 40)
#define GIB ((uint64_t)1 << 30)

static void *at(uint64_t a)
{
    return (void *)(uintptr_t)a;
}

int main(void)
{
    struct {
        const char *what;
        uint64_t addr;
    } stray[] = {
        {"pool window start (12 TiB)", 12 * TIB},
        {"pool window middle (14 TiB)", 14 * TIB + 4096},
        {"pool window last page", 16 * TIB - SZ},
        {"device 0 window, nothing allocated", 16 * TIB + 32 * GIB},
        {"device 0 window, driver's part", 16 * TIB + 127 * GIB},
        {"window of device 63 (not present)", 16 * TIB + 63 * 128 * GIB},
        {"pinned window, nothing allocated", 7 * TIB + 512 * GIB},
    };
    unsigned char *host = (unsigned char *)malloc(SZ);
    unsigned char *back = (unsigned char *)malloc(SZ);
    void *dev = NULL;
    aclrtStream s = NULL;
    size_t i;

    if (host == NULL || back == NULL || !CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("window_addresses");
    }
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtMalloc(&dev, SZ, ACL_MEM_MALLOC_HUGE_FIRST));
    fill_pattern(host, SZ, 7);
    CHECK_OK(aclrtMemcpy(dev, SZ, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE));

    for (i = 0; i < sizeof stray / sizeof stray[0]; i++) {
        void *a = at(stray[i].addr);

        check_section(stray[i].what);
        fflush(stdout);
        CHECK_FAIL(aclrtMemcpy(a, SZ, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpy(a, SZ, host, SZ, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpy(a, SZ, host, SZ, ACL_MEMCPY_DEFAULT), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpy(back, SZ, a, SZ, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpy(back, SZ, a, SZ, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpy(back, SZ, a, SZ, ACL_MEMCPY_DEFAULT), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpy(dev, SZ, a, SZ, ACL_MEMCPY_DEFAULT), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpy(a, SZ, dev, SZ, ACL_MEMCPY_DEFAULT), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemset(a, SZ, 0xEE, SZ), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpyAsync(a, SZ, host, SZ, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpyAsync(a, SZ, host, SZ, ACL_MEMCPY_DEFAULT, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpyAsync(back, SZ, a, SZ, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpyAsync(back, SZ, a, SZ, ACL_MEMCPY_DEFAULT, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemcpyAsync(dev, SZ, a, SZ, ACL_MEMCPY_DEFAULT, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemsetAsync(a, SZ, 0xEE, SZ, s), ACL_ERROR_RT_PARAM_INVALID);
    }

    check_section("nothing changed");
    CHECK_OK(aclrtSynchronizeStream(s));
    memset(back, 0, SZ);
    CHECK_OK(aclrtMemcpy(back, SZ, dev, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(back, SZ, 7));
    CHECK(has_pattern(host, SZ, 7));
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    free(host);
    free(back);
    return check_summary("window_addresses");
}
