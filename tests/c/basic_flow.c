/* SPDX-License-Identifier: Apache-2.0 */
/*
 * basic_flow.c - the seed flow of a CANN memory program: initialise, pick
 * device 0, allocate 1 MiB of device memory, copy a host pattern in and back
 * out, compare, free, reset the device, finalise.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define SIZE ((size_t)1 << 20)

int main(void)
{
    void *dev = NULL;
    unsigned char *src = (unsigned char *)malloc(SIZE);
    unsigned char *dst = (unsigned char *)malloc(SIZE);

    printf("basic_flow: the seed flow on device 0\n");
    if (src == NULL || dst == NULL) {
        printf("basic_flow: host malloc failed\n");
        return 1;
    }
    fill_pattern(src, SIZE, 1);
    memset(dst, 0, SIZE);

    check_section("initialise");
    if (!CHECK_OK(aclInit(NULL))) {
        return check_summary("basic_flow");
    }
    CHECK_OK(aclrtSetDevice(0));

    check_section("allocate 1 MiB");
    if (CHECK_OK(aclrtMalloc(&dev, SIZE, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK(dev != NULL);
        CHECK(((uintptr_t)dev % 64u) == 0);

        check_section("copy in and out");
        CHECK_OK(aclrtMemcpy(dev, SIZE, src, SIZE, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK_OK(aclrtMemcpy(dst, SIZE, dev, SIZE, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(memcmp(src, dst, SIZE) == 0);

        check_section("free");
        CHECK_OK(aclrtFree(dev));
    }

    check_section("tear down");
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());

    free(src);
    free(dst);
    return check_summary("basic_flow");
}
