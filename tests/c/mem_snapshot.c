/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mem_snapshot.c - aclrsMemSummary, aclrsMemRecordHistory, aclrsMemSnapshot
 * and the figures of an out-of-memory message.
 *
 * Run with argv[1] = the snapshot path. With history recorded, it makes large
 * and small allocations, frees one, takes pool blocks and frees one of them on
 * a stream, then writes the snapshot and prints "USED <bytes>" (total - free
 * from aclrtGetMemInfo on this private machine) for the harness, which reads
 * the pickle back with Python and checks it against that figure. It also
 * checks the summary's snprintf-like length and truncation rules, bad
 * arguments, and that an out-of-memory message names the free bytes, the
 * largest backable range, the pools' reservation and the caller's usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_sim.h"
#include "check.h"

#define MIB ((size_t)1 << 20)

int main(int argc, char **argv)
{
    void *big = NULL, *big2 = NULL, *small = NULL, *small2 = NULL, *pb = NULL, *pb2 = NULL;
    aclrtMemPool pool = NULL;
    aclrtMemPoolProps props;
    aclrtStream stream = NULL;
    size_t free_b = 0, total_b = 0;
    char tiny[8];
    char *buf;
    size_t need;

    if (argc < 2) {
        printf("usage: mem_snapshot SNAPSHOT_PATH\n");
        return 2;
    }
    check_section("before aclInit");
    CHECK(aclrsMemSummary(NULL, 0) == 0);
    CHECK(aclGetRecentErrMsg() != NULL);
    CHECK_FAIL(aclrsMemSnapshot(argv[1]), ACL_ERROR_UNINITIALIZE);
    CHECK_FAIL(aclrsMemRecordHistory(2, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrsMemRecordHistory(1, 0));

    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&stream));

    check_section("allocations");
    CHECK_OK(aclrtMalloc(&big, 8 * MIB, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc(&big2, 3 * MIB, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_OK(aclrtMalloc(&small, 1000, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc(&small2, 1000, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtFree(big2));
    memset(&props, 0, sizeof props);
    props.allocType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    props.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    props.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.maxSize = 64 * MIB;
    CHECK_OK(aclrtMemPoolCreate(&pool, &props));
    CHECK_OK(aclrtMemPoolMallocAsync(&pb, 5 * MIB, pool, stream));
    CHECK_OK(aclrtMemPoolMallocAsync(&pb2, 1 * MIB, pool, stream));
    CHECK_OK(aclrtMemPoolFreeAsync(pb2, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));

    check_section("summary");
    need = aclrsMemSummary(NULL, 0);
    CHECK(need > 100);
    buf = malloc(need + 1);
    CHECK(buf != NULL);
    CHECK(aclrsMemSummary(buf, need + 1) == need);
    CHECK(strlen(buf) == need);
    CHECK(strstr(buf, "Allocated memory") != NULL);
    CHECK(strstr(buf, "Reserved memory") != NULL);
    CHECK(strstr(buf, "pool 1 reserved") != NULL);
    CHECK(strstr(buf, "module 33") != NULL);
    printf("%s", buf);
    memset(tiny, 'x', sizeof tiny);
    CHECK(aclrsMemSummary(tiny, sizeof tiny) == need);
    CHECK(tiny[sizeof tiny - 1] == '\0' && strlen(tiny) == sizeof tiny - 1);
    CHECK(memcmp(tiny, buf, sizeof tiny - 1) == 0);
    CHECK(aclrsMemSummary(NULL, 4) == 0);
    CHECK(aclGetRecentErrMsg() != NULL);
    free(buf);

    check_section("snapshot");
    CHECK_FAIL(aclrsMemSnapshot(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrsMemSnapshot(""), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrsMemSnapshot("/nonexistent-dir/x.pickle"), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b));
    CHECK_OK(aclrsMemSnapshot(argv[1]));
    printf("USED %zu\n", total_b - free_b);
    printf("ADDRS %llu %llu %llu %llu\n", (unsigned long long)(uintptr_t)big,
           (unsigned long long)(uintptr_t)small, (unsigned long long)(uintptr_t)small2,
           (unsigned long long)(uintptr_t)pb);

    check_section("out of memory");
    {
        void *huge = NULL;
        const char *msg;
        CHECK_RET(aclrtMalloc(&huge, total_b, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_RT_MEMORY_ALLOCATION);
        msg = aclGetRecentErrMsg();
        CHECK(msg != NULL);
        if (msg != NULL) {
            printf("  message: %s\n", msg);
            CHECK(strstr(msg, "bytes free of") != NULL);
            CHECK(strstr(msg, "largest range that could be backed") != NULL);
            CHECK(strstr(msg, "pools reserve 6291456 bytes") != NULL);
            CHECK(strstr(msg, "this process has") != NULL);
        }
        CHECK(huge == NULL);
        /* A pool allocation that finds no memory says the same (and writes the snapshot of
         * ACLRS_MEM_SNAPSHOT while the pool is not locked). */
        props.maxSize = 0;
        {
            aclrtMemPool big_pool = NULL;
            if (CHECK_OK(aclrtMemPoolCreate(&big_pool, &props))) {
                CHECK_RET(aclrtMemPoolMallocAsync(&huge, total_b - 2 * MIB, big_pool, stream),
                          ACL_ERROR_RT_MEMORY_ALLOCATION);
                msg = aclGetRecentErrMsg();
                CHECK(msg != NULL && strstr(msg, "largest range that could be backed") != NULL);
                if (msg != NULL) {
                    printf("  message: %s\n", msg);
                }
                CHECK_OK(aclrtMemPoolDestroy(big_pool));
            }
        }
    }

    CHECK_OK(aclrtFree(big));
    CHECK_OK(aclrtFree(small));
    CHECK_OK(aclrtFree(small2));
    CHECK_OK(aclrtMemPoolFreeAsync(pb, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_OK(aclrtDestroyStream(stream));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("mem_snapshot");
}
