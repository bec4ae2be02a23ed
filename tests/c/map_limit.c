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
#include <sys/mman.h>

#include "check.h"

#define PAGES 200000ul

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
    area = mmap(NULL, PAGES * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!CHECK(area != MAP_FAILED)) {
        return check_summary("map_limit");
    }
    /* Every page made readable between inaccessible ones is two more mappings. */
    while ((unsigned long)split * 2 < PAGES && mprotect(area + split * 2 * 4096, 4096, PROT_READ) == 0) {
        split++;
    }
    /* One mapping may be left: take it (this may fail when there is none, which is as good). */
    (void)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("  %ld host pages split off\n", split);
    CHECK(split > 1000 && (unsigned long)split * 2 < PAGES);
    {
        aclError rc = aclrtMalloc(&p, 128 << 10, ACL_MEM_MALLOC_NORMAL_ONLY);
        const char *msg = aclGetRecentErrMsg();
        printf("  aclrtMalloc -> %d [%s]\n", rc, msg != NULL ? msg : "(no message)");
        CHECK(rc == ACL_ERROR_RT_MEMORY_ALLOCATION);
        CHECK(msg != NULL && strstr(msg, "vm.max_map_count") != NULL);
    }
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total1));
    CHECK(free1 == free0 && total1 == total0);
    CHECK(munmap(area, PAGES * 4096) == 0);
    CHECK_OK(aclrtMalloc(&p, 128 << 10, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_OK(aclrtMemset(p, 128 << 10, 7, 128 << 10));
    CHECK_OK(aclrtFree(p));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total1));
    CHECK(free1 == free0);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("map_limit");
}
