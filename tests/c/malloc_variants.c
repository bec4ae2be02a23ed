/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/malloc_variants.c - every device-allocation entry point and memory query, with its
 * documented successes and every bad input.
 *
 * Runs on a private software NPU with ACLRS_SIM_HBM=4G, ACLRS_SIM_HUGE2M=512M,
 * ACLRS_SIM_HUGE1G=2G (set by the harness). With ACLRS_SIM_SOC=Ascend950PR the per-SoC
 * differences (no padding, no aclrtGetMemUsageInfo, no VA_FLAG) are checked instead.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)

static int is_950;

static size_t range_size(void *p)
{
    void *base = NULL;
    size_t size = 0;
    if (aclrtMemGetAddressRange(p, &base, &size) != ACL_SUCCESS || base != p) {
        return 0;
    }
    return size;
}

static uint32_t page_of(void *p)
{
    aclrtPtrAttributes a;
    memset(&a, 0xAB, sizeof a);
    if (aclrtPointerGetAttributes(p, &a) != ACL_SUCCESS) {
        return 0;
    }
    return a.pageSize;
}

static size_t hbm_free(aclrtMemAttr attr)
{
    size_t f = 0, t = 0;
    aclrtGetMemInfo(attr, &f, &t);
    return f;
}

static void rounding(void)
{
    void *p = NULL;
    size_t pad = is_950 ? 0 : 32;

    check_section("rounding per entry point, observed through aclrtMemGetAddressRange");
    if (CHECK_OK(aclrtMalloc(&p, 33, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK(range_size(p) == 64 + pad);
        CHECK(((uintptr_t)p % 64) == 0);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMalloc(&p, 32, ACL_MEM_MALLOC_NORMAL_ONLY))) {
        CHECK(range_size(p) == 32 + pad);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMallocAlign32(&p, 33, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK(range_size(p) == 64);
        CHECK(((uintptr_t)p % 64) == 0);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMallocCached(&p, 33, ACL_MEM_MALLOC_NORMAL_ONLY))) {
        CHECK(range_size(p) == 64 + pad);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMallocWithCfg(&p, 33, ACL_MEM_MALLOC_HUGE_FIRST, NULL))) {
        CHECK(range_size(p) == 64);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMallocForTaskScheduler(&p, 100, ACL_MEM_MALLOC_NORMAL_ONLY, NULL))) {
        CHECK(range_size(p) == 128);
        CHECK_OK(aclrtFree(p));
    }
    /* 1 GiB pages: no padding, 1 GiB alignment and pages. */
    if (CHECK_OK(aclrtMalloc(&p, 33, ACL_MEM_MALLOC_HUGE1G_ONLY))) {
        CHECK(range_size(p) == 64);
        CHECK(((uintptr_t)p % GIB) == 0);
        CHECK(page_of(p) == GIB);
        CHECK_OK(aclrtFree(p));
    }
    /* 64-byte start alignment for many sizes and every variant. */
    {
        void *ps[64];
        size_t i;
        int aligned = 1, ok = 1;
        for (i = 0; i < 64; i++) {
            size_t size = 1 + i * 977;
            aclError rc;
            switch (i % 4) {
            case 0: rc = aclrtMalloc(&ps[i], size, ACL_MEM_MALLOC_HUGE_FIRST); break;
            case 1: rc = aclrtMallocAlign32(&ps[i], size, ACL_MEM_MALLOC_NORMAL_ONLY); break;
            case 2: rc = aclrtMallocCached(&ps[i], size, ACL_MEM_MALLOC_HUGE_ONLY); break;
            default: rc = aclrtMallocWithCfg(&ps[i], size, ACL_MEM_MALLOC_NORMAL_ONLY_P2P, NULL); break;
            }
            ok = ok && rc == ACL_SUCCESS;
            aligned = aligned && ((uintptr_t)ps[i] % 64) == 0;
        }
        CHECK(ok);
        CHECK(aligned);
        for (i = 0; i < 64; i++) {
            ok = ok && aclrtFree(ps[i]) == ACL_SUCCESS;
        }
        CHECK(ok);
    }
}

static void policies(void)
{
    void *blocks[16];
    void *p = NULL;
    size_t n = 0, i, hfree, before;

    check_section("HUGE_ONLY fails and HUGE_FIRST falls back once the 2 MiB budget is used");
    before = hbm_free(ACL_HBM_MEM);
    while (n < 16 && aclrtMalloc(&blocks[n], 64 * MIB - 64, ACL_MEM_MALLOC_HUGE_ONLY) == ACL_SUCCESS) {
        n++;
    }
    CHECK(n == 8); /* 512 MiB budget / 64 MiB */
    hfree = hbm_free(ACL_HBM_MEM_HUGE);
    CHECK(hfree == 0);
    CHECK_FAIL(aclrtMalloc(&p, 3 * MIB, ACL_MEM_MALLOC_HUGE_ONLY), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK_FAIL(aclrtMalloc(&p, 3 * MIB, ACL_MEM_MALLOC_HUGE_ONLY_P2P), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK(hbm_free(ACL_HBM_MEM) == before - 8 * 64 * MIB);
    if (CHECK_OK(aclrtMalloc(&p, 4 * MIB, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK(page_of(p) == 4 * KIB);
        CHECK(hbm_free(ACL_HBM_MEM) == before - 8 * 64 * MIB - 4 * MIB - (is_950 ? 0 : 4 * KIB));
        CHECK_OK(aclrtFree(p));
    }
    for (i = 0; i < n; i++) {
        CHECK_OK(aclrtFree(blocks[i]));
    }
    CHECK(hbm_free(ACL_HBM_MEM) == before);
    if (CHECK_OK(aclrtMalloc(&p, 4 * MIB, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK(page_of(p) == 2 * MIB);
        CHECK_OK(aclrtFree(p));
    }

    check_section("1 GiB policies use the 1 GiB budget");
    before = hbm_free(ACL_HBM_MEM_HUGE1G);
    CHECK(before == 2 * GIB);
    if (CHECK_OK(aclrtMalloc(&blocks[0], GIB + 1, ACL_MEM_MALLOC_HUGE1G_ONLY))) {
        CHECK(hbm_free(ACL_HBM_MEM_HUGE1G) == 0);
        CHECK_FAIL(aclrtMalloc(&p, 1, ACL_MEM_MALLOC_HUGE1G_ONLY_P2P), ACL_ERROR_RT_MEMORY_ALLOCATION);
        CHECK_OK(aclrtFree(blocks[0]));
    }
    CHECK(hbm_free(ACL_HBM_MEM_HUGE1G) == before);

    check_section("policy words");
    /* A flag ORed into aclrtMalloc's policy makes it the default policy (huge from 2 MiB). */
    if (CHECK_OK(aclrtMalloc(&p, 4 * MIB, (aclrtMemMallocPolicy)(ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_MALLOC_NORMAL_ONLY)))) {
        CHECK(page_of(p) == 2 * MIB);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMallocWithCfg(&p, 4 * MIB,
                                    (aclrtMemMallocPolicy)(ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_MALLOC_NORMAL_ONLY),
                                    NULL))) {
        CHECK(page_of(p) == 4 * KIB);
        CHECK_OK(aclrtFree(p));
    }
    /* Words outside the enum are the default policy (D-11-01): normal pages below 2 MiB. */
    if (CHECK_OK(aclrtMallocWithCfg(&p, 64, (aclrtMemMallocPolicy)0x200, NULL))) {
        CHECK(page_of(p) == 4 * KIB);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMallocWithCfg(&p, 64, (aclrtMemMallocPolicy)9, NULL))) {
        CHECK(page_of(p) == 4 * KIB);
        CHECK_OK(aclrtFree(p));
    }
    CHECK_FAIL(aclrtMallocWithCfg(&p, 64,
                                  (aclrtMemMallocPolicy)(ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_TYPE_LOW_BAND_WIDTH),
                                  NULL),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocCached(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST_P2P), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocCached(&p, 64, (aclrtMemMallocPolicy)0x1000), ACL_ERROR_INVALID_PARAM);

    check_section("USER_SPACE_READONLY memory refuses host writes");
    if (CHECK_OK(aclrtMallocWithCfg(&p, 4096,
                                    (aclrtMemMallocPolicy)(ACL_MEM_ACCESS_USER_SPACE_READONLY | ACL_MEM_MALLOC_HUGE_FIRST),
                                    NULL))) {
        char buf[4096];
        memset(buf, 1, sizeof buf);
        CHECK_FAIL(aclrtMemcpy(p, sizeof buf, buf, sizeof buf, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemset(p, sizeof buf, 7, sizeof buf), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtMemcpy(buf, sizeof buf, p, sizeof buf, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK_OK(aclrtFree(p));
    }
    /* A large (page-backed) read-only block: the asynchronous set is refused too, at the call,
     * and a writable block of the same size takes it; a set running 4 KiB past its end is refused. */
    if (CHECK_OK(aclrtMallocWithCfg(&p, 4 << 20,
                                    (aclrtMemMallocPolicy)(ACL_MEM_ACCESS_USER_SPACE_READONLY | ACL_MEM_MALLOC_HUGE_FIRST),
                                    NULL))) {
        aclrtStream s = NULL;
        void *w = NULL;
        unsigned char buf4[64];
        CHECK_OK(aclrtCreateStream(&s));
        CHECK_FAIL(aclrtMemsetAsync((char *)p + 4096, 64, 7, 64, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtMalloc(&w, 4 << 20, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_OK(aclrtMemsetAsync((char *)w + 4096, 64, 7, 64, s));
        CHECK_FAIL(aclrtMemsetAsync((char *)w + (4 << 20) - 4096, 8192, 7, 8192, s), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK_OK(aclrtMemcpy(buf4, sizeof buf4, (char *)w + 4096, sizeof buf4, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(buf4[0] == 7 && buf4[63] == 7);
        CHECK_OK(aclrtFree(w));
        CHECK_OK(aclrtDestroyStream(s));
        CHECK_OK(aclrtFree(p));
    }
}

static void configs(void)
{
    aclrtMallocAttribute attrs[3];
    aclrtMallocConfig cfg;
    aclrtMemUsageInfo info[8];
    size_t out = 0, i;
    void *p = NULL, *q = NULL;
    int found = 0;

    check_section("aclrtMallocWithCfg attributes");
    memset(attrs, 0, sizeof attrs);
    attrs[0].attr = ACL_RT_MEM_ATTR_MODULE_ID;
    attrs[0].value.moduleId = 7;
    attrs[1].attr = ACL_RT_MEM_ATTR_DEVICE_ID;
    attrs[1].value.deviceId = 0;
    attrs[2].attr = ACL_RT_MEM_ATTR_RSV;
    cfg.attrs = attrs;
    cfg.numAttrs = 3;
    if (CHECK_OK(aclrtMallocWithCfg(&p, 3 * MIB, ACL_MEM_MALLOC_HUGE_FIRST, &cfg))) {
        if (is_950) {
            CHECK_FAIL(aclrtGetMemUsageInfo(0, info, 8, &out), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        } else if (CHECK_OK(aclrtGetMemUsageInfo(0, info, 8, &out))) {
            printf("        %zu components:", out);
            for (i = 0; i < out; i++) {
                printf(" %s=%llu/%llu", info[i].name, (unsigned long long)info[i].curMemSize,
                       (unsigned long long)info[i].memPeakSize);
                if (strcmp(info[i].name, "MODULE_7") == 0) {
                    found = info[i].curMemSize == 3 * MIB;
                }
                if (i > 0) {
                    CHECK(info[i - 1].curMemSize >= info[i].curMemSize);
                }
                CHECK(info[i].curMemSize <= info[i].memPeakSize);
            }
            printf("\n");
            CHECK(found);
            CHECK_OK(aclrtGetMemUsageInfo(0, info, 1, &out));
            CHECK(out == 1);
        }
        CHECK_OK(aclrtFree(p));
    }
    attrs[1].value.deviceId = 1;
    CHECK_FAIL(aclrtMallocWithCfg(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST, &cfg), ACL_ERROR_INVALID_PARAM);
    attrs[1].attr = ACL_RT_MEM_ATTR_VA_FLAG;
    attrs[1].value.vaFlag = 1;
    CHECK_FAIL(aclrtMallocWithCfg(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST, &cfg), ACL_ERROR_INVALID_PARAM);
    attrs[1].attr = (aclrtMallocAttrType)9;
    CHECK_FAIL(aclrtMallocForTaskScheduler(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST, &cfg), ACL_ERROR_INVALID_PARAM);
    cfg.attrs = NULL;
    CHECK_FAIL(aclrtMallocWithCfg(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST, &cfg), ACL_ERROR_INVALID_PARAM);
    cfg.numAttrs = 0;
    if (CHECK_OK(aclrtMallocWithCfg(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST, &cfg))) {
        CHECK_OK(aclrtFree(p));
    }

    check_section("aclrtMallocHostWithCfg attributes");
    CHECK_OK(aclrtMallocHostWithCfg(&q, 100, NULL));
    CHECK_OK(aclrtFreeHost(q));
    attrs[0].attr = ACL_RT_MEM_ATTR_MODULE_ID;
    attrs[0].value.moduleId = 33;
    attrs[1].attr = ACL_RT_MEM_ATTR_VA_FLAG;
    attrs[1].value.vaFlag = 1;
    cfg.attrs = attrs;
    cfg.numAttrs = 2;
    if (is_950) {
        CHECK_FAIL(aclrtMallocHostWithCfg(&q, 100, &cfg), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    } else if (CHECK_OK(aclrtMallocHostWithCfg(&q, 100, &cfg))) {
        CHECK_OK(aclrtFreeHost(q));
    }
    attrs[1].value.vaFlag = 2;
    CHECK_FAIL(aclrtMallocHostWithCfg(&q, 100, &cfg), ACL_ERROR_INVALID_PARAM);
    attrs[1].attr = ACL_RT_MEM_ATTR_RSV;
    CHECK_FAIL(aclrtMallocHostWithCfg(&q, 100, &cfg), ACL_ERROR_INVALID_PARAM);
    attrs[1].attr = ACL_RT_MEM_ATTR_DEVICE_ID;
    CHECK_FAIL(aclrtMallocHostWithCfg(&q, 100, &cfg), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocHostWithCfg(NULL, 100, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocHostWithCfg(&q, 0, NULL), ACL_ERROR_INVALID_PARAM);

    check_section("aclrtGetMemUsageInfo bad input");
    if (!is_950) {
        CHECK_FAIL(aclrtGetMemUsageInfo(2, info, 8, &out), ACL_ERROR_RT_INVALID_DEVICEID);
        CHECK_FAIL(aclrtGetMemUsageInfo(-1, info, 8, &out), ACL_ERROR_RT_INVALID_DEVICEID);
        CHECK_FAIL(aclrtGetMemUsageInfo(0, NULL, 8, &out), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtGetMemUsageInfo(0, info, 8, NULL), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtGetMemUsageInfo(0, info, 0, &out), ACL_ERROR_INVALID_PARAM);
    }
}

static void queries(void)
{
    void *d = NULL, *h = NULL, *list[3];
    char *m = malloc(256);
    uint32_t res = 7;
    aclrtPtrAttributes a;
    void *base = NULL;
    size_t size = 0;

    check_section("aclrtCheckMemType, aclrtPointerGetAttributes, aclrtMemGetAddressRange");
    if (!CHECK_OK(aclrtMalloc(&d, 1000, ACL_MEM_MALLOC_HUGE_FIRST)) || !CHECK_OK(aclrtMallocHost(&h, 1000))) {
        free(m);
        return;
    }
    list[0] = d;
    list[1] = (char *)d + 500;
    CHECK_OK(aclrtCheckMemType(list, 2, ACL_RT_MEM_TYPE_DEV, &res, 0));
    CHECK(res == 1);
    CHECK_OK(aclrtCheckMemType(list, 2, ACL_RT_MEM_TYPE_DEV | ACL_RT_MEM_TYPE_RSVD, &res, 0));
    CHECK(res == 1);
    list[2] = h;
    CHECK_OK(aclrtCheckMemType(list, 3, ACL_RT_MEM_TYPE_DEV, &res, 0));
    CHECK(res == 0);
    CHECK_OK(aclrtCheckMemType(list, 1, ACL_RT_MEM_TYPE_RSVD, &res, 0));
    CHECK(res == 0);
    CHECK_FAIL(aclrtCheckMemType(list, 1, 0, &res, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCheckMemType(list, 1, 0x4, &res, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCheckMemType(list, 1, ACL_RT_MEM_TYPE_DEV, &res, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCheckMemType(list, 0, ACL_RT_MEM_TYPE_DEV, &res, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCheckMemType(NULL, 1, ACL_RT_MEM_TYPE_DEV, &res, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCheckMemType(list, 1, ACL_RT_MEM_TYPE_DEV, NULL, 0), ACL_ERROR_INVALID_PARAM);

    CHECK_OK(aclrtPointerGetAttributes((char *)d + 10, &a));
    CHECK(a.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && a.location.id == 0 && a.pageSize == 4 * KIB);
    CHECK(a.rsv[0] == 0 && a.rsv[3] == 0);
    CHECK_OK(aclrtPointerGetAttributes(h, &a));
    CHECK(a.location.type == ACL_MEM_LOCATION_TYPE_HOST && a.pageSize == 4 * KIB);
    CHECK_OK(aclrtPointerGetAttributes(m, &a));
    CHECK(a.location.type == ACL_MEM_LOCATION_TYPE_UNREGISTERED);
    CHECK_FAIL(aclrtPointerGetAttributes(NULL, &a), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtPointerGetAttributes(d, NULL), ACL_ERROR_INVALID_PARAM);

    CHECK_OK(aclrtMemGetAddressRange((char *)d + 999, &base, &size));
    CHECK(base == d && size == 1000 + (is_950 ? 24 : 56));
    CHECK_OK(aclrtMemGetAddressRange((char *)h + 5, &base, NULL));
    CHECK(base == h);
    CHECK_OK(aclrtMemGetAddressRange(h, NULL, &size));
    CHECK(size == 1024);
    CHECK_FAIL(aclrtMemGetAddressRange(m, &base, &size), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemGetAddressRange(d, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemGetAddressRange(NULL, &base, &size), ACL_ERROR_INVALID_PARAM);

    check_section("aclrtMemFlush / aclrtMemInvalidate");
    CHECK_OK(aclrtMemFlush(d, 1000));
    CHECK_OK(aclrtMemInvalidate((char *)d + 100, 900));
    CHECK_FAIL(aclrtMemFlush(d, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemInvalidate(NULL, 10), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemFlush(d, 4096), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemFlush(m, 16), ACL_ERROR_RT_PARAM_INVALID);

    CHECK_OK(aclrtFree(d));
    CHECK_FAIL(aclrtPointerGetAttributes(d, &a), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemGetAddressRange(d, &base, &size), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFreeHost(h));
    free(m);
}

static void bad_frees(void)
{
    void *p = NULL, *q = NULL;
    size_t before;
    char host[64];

    check_section("bad allocations and frees change nothing");
    before = hbm_free(ACL_HBM_MEM);
    CHECK_FAIL(aclrtMalloc(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocAlign32(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocCached(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocWithCfg(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocForTaskScheduler(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocAlign32(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocCached(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocWithCfg(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocAlign32(&p, SIZE_MAX - 3, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMalloc(&p, 5 * GIB, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK_FAIL(aclrtMalloc(&p, 5 * GIB, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK_FAIL(aclrtMallocWithCfg(&p, (size_t)1 << 40, ACL_MEM_MALLOC_HUGE_FIRST, NULL), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK(hbm_free(ACL_HBM_MEM) == before);

    if (!CHECK_OK(aclrtMalloc(&p, 8 * MIB, ACL_MEM_MALLOC_HUGE_FIRST))) {
        return;
    }
    CHECK_FAIL(aclrtFree((char *)p + 64), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFree(host), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtMemset(p, 8 * MIB, 1, 8 * MIB));
    /* Free on the wrong device: a device-1 pointer while device 0 is current. */
    if (CHECK_OK(aclrtSetDevice(1)) && CHECK_OK(aclrtMalloc(&q, 4096, ACL_MEM_MALLOC_HUGE_FIRST))) {
        CHECK_OK(aclrtSetDevice(0));
        CHECK_FAIL(aclrtFree(q), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtSetDevice(1));
        CHECK_OK(aclrtFree(q));
        CHECK_OK(aclrtResetDevice(1));
        CHECK_OK(aclrtSetDevice(0));
        CHECK_OK(aclrtResetDevice(0));
    }
    CHECK_OK(aclrtMemset(p, 8 * MIB, 2, 8 * MIB));
    CHECK_OK(aclrtFree(p));
    CHECK_FAIL(aclrtFree(p), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(hbm_free(ACL_HBM_MEM) == before);
}

int main(void)
{
    const char *soc = getenv("ACLRS_SIM_SOC");
    is_950 = soc != NULL && strstr(soc, "950") != NULL;
    printf("malloc_variants: the allocation family and memory queries (%s)\n", is_950 ? "950" : "A2");
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("malloc_variants");
    }
    rounding();
    policies();
    configs();
    queries();
    bad_frees();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("malloc_variants");
}
