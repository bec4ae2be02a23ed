/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/many_allocs.c - running out of mappings is not running out of memory.
 *
 * Makes 100,000 live 128 KiB NORMAL_ONLY allocations on a 16 GiB device (run with
 * ACLRS_SIM_HBM=16G), checks a few by writing and reading them back, reports how many
 * mappings the process holds (/proc/self/maps), frees everything and checks that
 * aclrtGetMemInfo is back where it started.
 */
#include <stdlib.h>

#include "check.h"

#define COUNT 100000
#define SIZE (128u << 10)

static long map_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long lines = 0;
    int c;
    if (f == NULL) {
        return -1;
    }
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n') {
            lines++;
        }
    }
    fclose(f);
    return lines;
}

static int round_trip(void *dev, unsigned char seed)
{
    static unsigned char out[SIZE], back[SIZE];
    for (size_t i = 0; i < SIZE; i++) {
        out[i] = (unsigned char)(seed + i * 7);
    }
    if (aclrtMemcpy(dev, SIZE, out, SIZE, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
        return 0;
    }
    memset(back, 0, SIZE);
    if (aclrtMemcpy(back, SIZE, dev, SIZE, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
        return 0;
    }
    return memcmp(out, back, SIZE) == 0;
}

int main(void)
{
    static void *ptrs[COUNT];
    size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0, free2 = 0, total2 = 0;
    long maps_before, maps_after;
    int made = 0;
    aclError rc = ACL_SUCCESS;

    printf("many_allocs: %d live %u KiB NORMAL_ONLY allocations\n", COUNT, SIZE >> 10);
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("many_allocs");
    }
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total0));
    CHECK(total0 >= 16ull << 30);
    maps_before = map_count();
    for (made = 0; made < COUNT; made++) {
        rc = aclrtMalloc(&ptrs[made], SIZE, ACL_MEM_MALLOC_NORMAL_ONLY);
        if (rc != ACL_SUCCESS) {
            break;
        }
    }
    if (rc != ACL_SUCCESS) {
        printf("  allocation %d failed with %d: %s\n", made, rc, aclGetRecentErrMsg());
    }
    CHECK(made == COUNT);
    maps_after = map_count();
    printf("  mappings of the process: %ld before, %ld with %d live allocations\n", maps_before, maps_after,
           made);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total1));
    CHECK(free0 - free1 >= (size_t)made * SIZE);
    if (made > 0) {
        CHECK(round_trip(ptrs[0], 1));
        CHECK(round_trip(ptrs[made / 2], 2));
        CHECK(round_trip(ptrs[made - 1], 3));
        /* The neighbours of a written allocation are untouched. */
        CHECK(round_trip(ptrs[made / 3], 4));
    }
    for (int i = 0; i < made; i++) {
        if (aclrtFree(ptrs[i]) != ACL_SUCCESS) {
            CHECK_OK(aclrtFree(ptrs[i]));
            break;
        }
    }
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free2, &total2));
    printf("  free: %zu at start, %zu with all live, %zu after freeing\n", free0, free1, free2);
    CHECK(free2 == free0 && total2 == total0);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("many_allocs");
}
