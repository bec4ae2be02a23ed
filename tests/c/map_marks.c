/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/map_marks.c - the mappings the software NPU keeps apart for its own speed come back
 * when the process runs out of mappings.
 *
 * A range of device memory backed once stays a kernel mapping of its own after it is freed
 * (so that backing it again is one protection change). The program makes 2000 allocations of
 * 2 MiB HUGE_FIRST (each a 4 MiB block of VA whose end is never backed) and frees them: about
 * 4000 of the process's mappings are now such freed ranges and the never-backed ends between
 * them. It then uses up every other mapping by splitting a host reservation into single pages,
 * and allocates 128 KiB NORMAL_ONLY, which needs a new mapping: the allocation must succeed (the
 * freed ranges join their neighbours again, which gives mappings back), its bytes must be
 * writable and read back, and once the host mappings are gone aclrtGetMemInfo must be where it
 * started.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "mappings.h"

#define BLOCKS 2000
#define SMALL (128u << 10)

int main(void)
{
    static void *blocks[BLOCKS];
    static unsigned char out[SMALL], back[SMALL];
    size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0;
    void *p = NULL;
    char *area;
    long split = 0;
    int made = 0;

    printf("map_marks: an allocation at the mapping limit takes back the mappings of freed ranges\n");
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("map_marks");
    }
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total0));
    for (made = 0; made < BLOCKS; made++) {
        if (aclrtMalloc(&blocks[made], 2u << 20, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
            break;
        }
    }
    CHECK(made == BLOCKS);
    for (int i = 0; i < made; i++) {
        CHECK_OK(aclrtFree(blocks[i]));
    }
    area = use_up_mappings(&split);
    if (!CHECK(area != MAP_FAILED)) {
        return check_summary("map_marks");
    }
    printf("  %ld host pages split off\n", split);
    CHECK(split > 1000 && (unsigned long)split * 2 < USE_UP_PAGES);
    if (CHECK_OK(aclrtMalloc(&p, SMALL, ACL_MEM_MALLOC_NORMAL_ONLY))) {
        for (size_t i = 0; i < SMALL; i++) {
            out[i] = (unsigned char)(i * 13 + 5);
        }
        CHECK_OK(aclrtMemcpy(p, SMALL, out, SMALL, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK_OK(aclrtMemcpy(back, SMALL, p, SMALL, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(memcmp(out, back, SMALL) == 0);
        CHECK_OK(aclrtFree(p));
    }
    CHECK(release_mappings(area) == 0);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total1));
    CHECK(free1 == free0 && total1 == total0);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("map_marks");
}
