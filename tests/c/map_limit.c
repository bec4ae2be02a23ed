/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/map_limit.c - a process out of memory mappings gets the out-of-memory code with a
 * message naming the limit, never 507000, and nothing changes.
 *
 * The program uses up its own mappings (vm.max_map_count) by splitting one host reservation
 * into single pages of alternating protection, then asks for device memory: aclrtMalloc must
 * fail with 207001 and name vm.max_map_count, aclrtGetMemInfo must be unchanged; once the host
 * mappings are gone the same allocation succeeds.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "mappings.h"


int main(void)
{
    size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0;
    void *p = NULL;
    char *area;
    long split = 0;

    printf("map_limit: aclrtMalloc when the process has no mapping left\n");
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("map_limit");
    }
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total0));
    area = use_up_mappings(&split);
    if (!CHECK(area != MAP_FAILED)) {
        return check_summary("map_limit");
    }
    printf("  %ld host pages split off\n", split);
    CHECK(split > 1000 && (unsigned long)split * 2 < USE_UP_PAGES);
    {
        aclError rc = aclrtMalloc(&p, 128 << 10, ACL_MEM_MALLOC_NORMAL_ONLY);
        const char *msg = aclGetRecentErrMsg();
        printf("  aclrtMalloc -> %d [%s]\n", rc, msg != NULL ? msg : "(no message)");
        CHECK(rc == ACL_ERROR_RT_MEMORY_ALLOCATION);
        CHECK(msg != NULL && strstr(msg, "vm.max_map_count") != NULL);
    }
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total1));
    CHECK(free1 == free0 && total1 == total0);
    CHECK(release_mappings(area) == 0);
    CHECK_OK(aclrtMalloc(&p, 128 << 10, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_OK(aclrtMemset(p, 128 << 10, 7, 128 << 10));
    CHECK_OK(aclrtFree(p));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total1));
    CHECK(free1 == free0);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("map_limit");
}
