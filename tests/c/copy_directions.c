/* SPDX-License-Identifier: Apache-2.0 */
/*
 * copy_directions.c - aclrtMemcpy in every direction the runtime supports:
 * host-to-host (malloc'd and pinned), host-to-device, device-to-host,
 * device-to-device, ACL_MEMCPY_DEFAULT inference, HOST_TO_BUF_TO_DEVICE,
 * copies at offsets inside an allocation, a 64 MiB copy verified by checksum,
 * a copy on device 1, and the kind rules: a kind that disagrees with two
 * ACL-allocated pointers is corrected, while for plain malloc'd
 * ("unregistered") memory only the kinds allowed by the direction table of
 * the fact sheet (section 9.2.3) are accepted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define SZ ((size_t)1 << 20)
#define BIG ((size_t)64 << 20)

/* Reads len bytes of device memory back through plain malloc'd memory and
 * compares them with fill_pattern(seed). */
static int dev_has_pattern(const void *dev, size_t len, unsigned seed)
{
    unsigned char *tmp = (unsigned char *)calloc(1, len);
    aclError rc;
    int ok;

    if (tmp == NULL) {
        return 0;
    }
    rc = aclrtMemcpy(tmp, len, dev, len, ACL_MEMCPY_DEVICE_TO_HOST);
    ok = rc == ACL_SUCCESS && has_pattern(tmp, len, seed);
    if (rc != ACL_SUCCESS) {
        printf("        (read-back D2H returned %d)\n", rc);
    }
    free(tmp);
    return ok;
}

/* 1 when the device range equals the host reference. */
static int dev_equals(const void *dev, const void *ref, size_t len)
{
    unsigned char *tmp = (unsigned char *)calloc(1, len);
    aclError rc;
    int ok;

    if (tmp == NULL) {
        return 0;
    }
    rc = aclrtMemcpy(tmp, len, dev, len, ACL_MEMCPY_DEVICE_TO_HOST);
    ok = rc == ACL_SUCCESS && memcmp(tmp, ref, len) == 0;
    free(tmp);
    return ok;
}

static uint64_t fnv1a64(const unsigned char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void fill_random(unsigned char *p, size_t len, uint64_t seed)
{
    uint64_t x = seed | 1u;
    size_t i;

    for (i = 0; i < len; i++) {
        if ((i & 7u) == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        p[i] = (unsigned char)(x >> ((i & 7u) * 8u));
    }
}

int main(void)
{
    void *d1 = NULL, *d2 = NULL, *p1 = NULL, *p2 = NULL;
    unsigned char *m1 = (unsigned char *)malloc(SZ);
    unsigned char *m2 = (unsigned char *)malloc(SZ);
    unsigned char *ref = (unsigned char *)malloc(SZ);
    unsigned char *dc1, *dc2, *pc1, *pc2;
    int32_t cur = -1;

    printf("copy_directions: aclrtMemcpy in every supported direction\n");
    if (m1 == NULL || m2 == NULL || ref == NULL) {
        printf("copy_directions: host malloc failed\n");
        return 1;
    }

    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("copy_directions");
    }
    if (!CHECK_OK(aclrtMalloc(&d1, SZ, ACL_MEM_MALLOC_HUGE_FIRST)) ||
        !CHECK_OK(aclrtMalloc(&d2, SZ, ACL_MEM_MALLOC_HUGE_FIRST)) ||
        !CHECK_OK(aclrtMallocHost(&p1, SZ)) || !CHECK_OK(aclrtMallocHost(&p2, SZ))) {
        return check_summary("copy_directions");
    }
    CHECK(((uintptr_t)p1 % 64u) == 0 && ((uintptr_t)p2 % 64u) == 0);
    dc1 = (unsigned char *)d1;
    dc2 = (unsigned char *)d2;
    pc1 = (unsigned char *)p1;
    pc2 = (unsigned char *)p2;

    check_section("host to host (malloc'd and pinned)");
    fill_pattern(m1, SZ, 1);
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_HOST));
    CHECK(has_pattern(m2, SZ, 1));
    fill_pattern(p1, SZ, 2);
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, p1, SZ, ACL_MEMCPY_HOST_TO_HOST));
    CHECK(has_pattern(p2, SZ, 2));
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_HOST));
    CHECK(has_pattern(p2, SZ, 1));
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, p1, SZ, ACL_MEMCPY_HOST_TO_HOST));
    CHECK(has_pattern(m2, SZ, 2));

    check_section("host to device and back (malloc'd host memory)");
    fill_pattern(m1, SZ, 3);
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(d1, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(m2, SZ, d1, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(m2, SZ, 3));

    check_section("host to device and back (pinned host memory)");
    fill_pattern(p1, SZ, 4);
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(d1, SZ, p1, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(p2, SZ, d1, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(p2, SZ, 4));

    check_section("device to device (two allocations, same device)");
    CHECK_OK(aclrtMemcpy(d2, SZ, d1, SZ, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK(dev_has_pattern(d2, SZ, 4));

    check_section("ACL_MEMCPY_DEFAULT infers the direction");
    fill_pattern(m1, SZ, 5);
    CHECK_OK(aclrtMemcpy(d1, SZ, m1, SZ, ACL_MEMCPY_DEFAULT)); /* unregistered -> device */
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, d1, SZ, ACL_MEMCPY_DEFAULT)); /* device -> unregistered */
    CHECK(has_pattern(m2, SZ, 5));
    fill_pattern(p1, SZ, 6);
    CHECK_OK(aclrtMemcpy(d2, SZ, p1, SZ, ACL_MEMCPY_DEFAULT)); /* host -> device */
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, d2, SZ, ACL_MEMCPY_DEFAULT)); /* device -> host */
    CHECK(has_pattern(p2, SZ, 6));
    CHECK_OK(aclrtMemcpy(d1, SZ, d2, SZ, ACL_MEMCPY_DEFAULT)); /* device -> device */
    CHECK(dev_has_pattern(d1, SZ, 6));
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, p1, SZ, ACL_MEMCPY_DEFAULT)); /* host -> host */
    CHECK(has_pattern(p2, SZ, 6));
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, m1, SZ, ACL_MEMCPY_DEFAULT)); /* unregistered pair */
    CHECK(has_pattern(m2, SZ, 5));
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, p1, SZ, ACL_MEMCPY_DEFAULT)); /* host -> unregistered */
    CHECK(has_pattern(m2, SZ, 6));
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, m1, SZ, ACL_MEMCPY_DEFAULT)); /* unregistered -> host */
    CHECK(has_pattern(p2, SZ, 5));

    check_section("ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: source reusable at once");
    {
        unsigned char *tmp = (unsigned char *)malloc(SZ);
        if (CHECK(tmp != NULL)) {
            fill_pattern(tmp, SZ, 7);
            CHECK_OK(aclrtMemcpy(d1, SZ, tmp, SZ, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE));
            memset(tmp, 0xEE, SZ); /* scribble, then give it back */
            free(tmp);
            CHECK(dev_has_pattern(d1, SZ, 7));
        }
    }
    fill_pattern(p1, SZ, 8);
    CHECK_OK(aclrtMemcpy(d2, SZ, p1, SZ, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE));
    memset(p1, 0xEE, SZ);
    CHECK(dev_has_pattern(d2, SZ, 8));

    check_section("offsets inside an allocation");
    {
        const size_t off = 4096 + 7;
        const size_t n = 1000;
        unsigned char chunk[1000];

        fill_pattern(ref, SZ, 9);
        CHECK_OK(aclrtMemcpy(d1, SZ, ref, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
        fill_pattern(chunk, n, 10);
        CHECK_OK(aclrtMemcpy(dc1 + off, SZ - off, chunk, n, ACL_MEMCPY_HOST_TO_DEVICE));
        memcpy(ref + off, chunk, n);
        CHECK(dev_equals(d1, ref, SZ));

        memset(m2, 0, SZ);
        CHECK_OK(aclrtMemcpy(m2, SZ, dc1 + off + 100, 500, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(memcmp(m2, ref + off + 100, 500) == 0);

        /* the last 100 bytes of the allocation, both ways */
        fill_pattern(chunk, 100, 11);
        CHECK_OK(aclrtMemcpy(dc1 + SZ - 100, 100, chunk, 100, ACL_MEMCPY_HOST_TO_DEVICE));
        memcpy(ref + SZ - 100, chunk, 100);
        memset(m2, 0, SZ);
        CHECK_OK(aclrtMemcpy(m2, 100, dc1 + SZ - 100, 100, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(memcmp(m2, chunk, 100) == 0);
        CHECK(dev_equals(d1, ref, SZ));

        /* device to device between interior offsets, other bytes untouched */
        CHECK_OK(aclrtMemcpy(d2, SZ, ref, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK_OK(aclrtMemcpy(dc2 + 123, SZ - 123, dc1 + off, n, ACL_MEMCPY_DEVICE_TO_DEVICE));
        memmove(ref + 123, ref + off, n);
        CHECK(dev_equals(d2, ref, SZ));

        /* pinned memory at an offset */
        fill_pattern(pc1 + 64, 4096, 12);
        CHECK_OK(aclrtMemcpy(dc1 + 8192, 4096, pc1 + 64, 4096, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK_OK(aclrtMemcpy(pc2 + 3, 4096, dc1 + 8192, 4096, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(has_pattern(pc2 + 3, 4096, 12));
    }

    check_section("64 MiB copy verified by checksum");
    {
        void *big = NULL;
        unsigned char *h1 = (unsigned char *)malloc(BIG);
        unsigned char *h2 = (unsigned char *)malloc(BIG);

        if (CHECK(h1 != NULL && h2 != NULL) &&
            CHECK_OK(aclrtMalloc(&big, BIG, ACL_MEM_MALLOC_HUGE_FIRST))) {
            uint64_t want, got;

            fill_random(h1, BIG, 0x5eed1234abcdull);
            memset(h2, 0, BIG);
            want = fnv1a64(h1, BIG);
            CHECK_OK(aclrtMemcpy(big, BIG, h1, BIG, ACL_MEMCPY_HOST_TO_DEVICE));
            CHECK_OK(aclrtMemcpy(h2, BIG, big, BIG, ACL_MEMCPY_DEVICE_TO_HOST));
            got = fnv1a64(h2, BIG);
            printf("        checksum sent %016llx, received %016llx\n", (unsigned long long)want,
                   (unsigned long long)got);
            CHECK(got == want);
            CHECK(memcmp(h1, h2, BIG) == 0);
            CHECK_OK(aclrtFree(big));
        }
        free(h1);
        free(h2);
    }

    check_section("a kind that disagrees with two ACL pointers is corrected");
    fill_pattern(p1, SZ, 13);
    CHECK_OK(aclrtMemcpy(d1, SZ, p1, SZ, ACL_MEMCPY_DEVICE_TO_HOST)); /* really H2D */
    CHECK(dev_has_pattern(d1, SZ, 13));
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, d1, SZ, ACL_MEMCPY_HOST_TO_DEVICE)); /* really D2H */
    CHECK(has_pattern(p2, SZ, 13));
    CHECK_OK(aclrtMemcpy(d2, SZ, d1, SZ, ACL_MEMCPY_HOST_TO_HOST)); /* really D2D */
    CHECK(dev_has_pattern(d2, SZ, 13));
    fill_pattern(p1, SZ, 14);
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, p1, SZ, ACL_MEMCPY_DEVICE_TO_DEVICE)); /* really H2H */
    CHECK(has_pattern(p2, SZ, 14));

    check_section("unregistered (malloc'd) source, device destination: H2D, D2D only");
    fill_pattern(m1, SZ, 15);
    CHECK_OK(aclrtMemcpy(d1, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(dev_has_pattern(d1, SZ, 15));
    fill_pattern(m1, SZ, 16);
    CHECK_OK(aclrtMemcpy(d1, SZ, m1, SZ, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK(dev_has_pattern(d1, SZ, 16));
    fill_pattern(m1, SZ, 17);
    CHECK_FAIL(aclrtMemcpy(d1, SZ, m1, SZ, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(d1, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(dev_has_pattern(d1, SZ, 16)); /* rejected copies changed nothing */

    check_section("device source, unregistered destination: D2H, D2D only");
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, d1, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(m2, SZ, 16));
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, d1, SZ, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK(has_pattern(m2, SZ, 16));
    memset(m2, 0x5A, SZ);
    CHECK_FAIL(aclrtMemcpy(m2, SZ, d1, SZ, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(m2, SZ, d1, SZ, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(all_bytes(m2, SZ, 0x5A));

    check_section("pinned source, unregistered destination: H2H, H2D only");
    fill_pattern(p1, SZ, 18);
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, p1, SZ, ACL_MEMCPY_HOST_TO_HOST));
    CHECK(has_pattern(m2, SZ, 18));
    memset(m2, 0, SZ);
    CHECK_OK(aclrtMemcpy(m2, SZ, p1, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(has_pattern(m2, SZ, 18));
    memset(m2, 0x5A, SZ);
    CHECK_FAIL(aclrtMemcpy(m2, SZ, p1, SZ, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(m2, SZ, p1, SZ, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(all_bytes(m2, SZ, 0x5A));

    check_section("unregistered source, pinned destination: H2H, D2H only");
    fill_pattern(m1, SZ, 19);
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_HOST));
    CHECK(has_pattern(p2, SZ, 19));
    memset(p2, 0, SZ);
    CHECK_OK(aclrtMemcpy(p2, SZ, m1, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(p2, SZ, 19));
    memset(p2, 0x5A, SZ);
    CHECK_FAIL(aclrtMemcpy(p2, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(p2, SZ, m1, SZ, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(all_bytes(p2, SZ, 0x5A));

    check_section("unregistered to unregistered: all four kinds");
    {
        static const aclrtMemcpyKind kinds[4] = {ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
                                                 ACL_MEMCPY_DEVICE_TO_HOST,
                                                 ACL_MEMCPY_DEVICE_TO_DEVICE};
        int k;

        for (k = 0; k < 4; k++) {
            fill_pattern(m1, SZ, 20u + (unsigned)k);
            memset(m2, 0, SZ);
            printf("        kind %d\n", (int)kinds[k]);
            CHECK_OK(aclrtMemcpy(m2, SZ, m1, SZ, kinds[k]));
            CHECK(has_pattern(m2, SZ, 20u + (unsigned)k));
        }
    }

    check_section("release device 0 memory");
    CHECK_OK(aclrtFree(d1));
    CHECK_OK(aclrtFree(d2));
    CHECK_OK(aclrtFreeHost(p1));
    CHECK_OK(aclrtFreeHost(p2));

    check_section("copies on device 1");
    if (CHECK_OK(aclrtSetDevice(1))) {
        void *e1 = NULL, *e2 = NULL;

        CHECK_OK(aclrtGetDevice(&cur));
        CHECK(cur == 1);
        if (CHECK_OK(aclrtMalloc(&e1, SZ, ACL_MEM_MALLOC_HUGE_FIRST)) &&
            CHECK_OK(aclrtMalloc(&e2, SZ, ACL_MEM_MALLOC_NORMAL_ONLY))) {
            fill_pattern(m1, SZ, 30);
            memset(m2, 0, SZ);
            CHECK_OK(aclrtMemcpy(e1, SZ, m1, SZ, ACL_MEMCPY_HOST_TO_DEVICE));
            CHECK_OK(aclrtMemcpy(e2, SZ, e1, SZ, ACL_MEMCPY_DEVICE_TO_DEVICE));
            CHECK_OK(aclrtMemcpy(m2, SZ, e2, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
            CHECK(has_pattern(m2, SZ, 30));
            CHECK_OK(aclrtFree(e1));
            CHECK_OK(aclrtFree(e2));
        }
        CHECK_OK(aclrtResetDevice(1));
    }

    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    free(m1);
    free(m2);
    free(ref);
    return check_summary("copy_directions");
}
