/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/memory_rest.c - the memory module's remaining calls and the runtime
 * behaviours programs rely on (issue 19, groups 0, 11 and 12), each with its
 * bad inputs: aclFinalizeReference, managed memory, descriptor / offset /
 * conditional copies, device symbols (a kernel binary with a variable, path in
 * ACLRS_TEST_KERNELS), cache maintenance, the mapping variants, memset on
 * ordinary host memory, peer grants across a forced reset, pointer attributes
 * of registered host memory, device status and utilisation, the current
 * default stream, and the exception callbacks.
 *
 * ACLRS_SIM_SOC selects the SoC profile (A2 by default); the A3-only calls are
 * checked on A3 and must answer 207000 elsewhere.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define MIB ((size_t)1 << 20)

static int g_calls = 0;
static uint32_t g_device = 0xFFFFFFFFu;
static uint32_t g_code = 0;
static int g_args_rc = 0;
static uint32_t g_stream = 0;

static void on_exception(aclrtExceptionInfo *info)
{
    void *args = NULL;
    uint32_t len = 0;
    g_calls++;
    g_device = aclrtGetDeviceIdFromExceptionInfo(info);
    g_code = aclrtGetErrorCodeFromExceptionInfo(info);
    g_stream = aclrtGetStreamIdFromExceptionInfo(info);
    g_args_rc = (int)aclrtGetArgsFromExceptionInfo(info, &args, &len);
}

static void other_callback(aclrtExceptionInfo *info)
{
    (void)info;
}

static int is_soc(const char *name)
{
    const char *s = getenv("ACLRS_SIM_SOC");
    return s != NULL && strcmp(s, name) == 0;
}

static void finalize_reference(void)
{
    uint64_t left = 99;
    check_section("aclFinalizeReference pairs with aclInit");
    CHECK_RET(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    CHECK_FAIL(aclFinalizeReference(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclFinalizeReference(&left));
    CHECK(left == 1);
    /* Still initialised: one reference is left. */
    CHECK_OK(aclrtSetDevice(0));
}

static void managed(aclrtStream stream)
{
    char *m = NULL;
    void *plain = NULL, *dev = NULL;
    char back[4096];
    int32_t rm = -1, ty = -1;
    aclrtMemManagedLocation loc, locs[3];
    aclrtMemManagedLocation dev0 = {ACL_MEM_LOCATIONTYPE_DEVICE, 0};
    aclrtMemManagedLocation dev1 = {ACL_MEM_LOCATIONTYPE_DEVICE, 1};
    aclrtMemManagedLocation host = {ACL_MEM_LOCATIONTYPE_HOST, 0};
    aclrtMemManagedLocation bad = {ACL_MEM_LOCATIONTYPE_INVALID, 0};
    aclrtPtrAttributes attr;
    size_t f0 = 0, f1 = 0, f2 = 0, t = 0;
    const size_t size = 4 * MIB;

    check_section("aclrtMemAllocManaged: one pointer on the host and the device");
    CHECK_FAIL(aclrtMemAllocManaged(NULL, size, ACL_RT_MEM_ATTACH_GLOBAL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemAllocManaged((void **)&m, 0, ACL_RT_MEM_ATTACH_GLOBAL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemAllocManaged((void **)&m, size, 0), ACL_ERROR_INVALID_PARAM);
    CHECK(m == NULL);
    if (!CHECK_OK(aclrtMemAllocManaged((void **)&m, size, ACL_RT_MEM_ATTACH_GLOBAL))) {
        return;
    }
    memset(m, 0x5C, 4096); /* the host writes through the pointer */
    CHECK_OK(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemcpy(dev, 4096, m, 4096, ACL_MEMCPY_DEVICE_TO_DEVICE)); /* the device reads it */
    CHECK_OK(aclrtMemcpy(back, sizeof back, dev, 4096, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(back[0] == 0x5C && back[4095] == 0x5C);
    CHECK_OK(aclrtPointerGetAttributes(m, &attr));
    CHECK(attr.location.type == (is_soc("A3") ? ACL_MEM_LOCATION_TYPE_DEVICE : ACL_MEM_LOCATION_TYPE_MANAGED));

    check_section("aclrtMemManagedAdvise and the attribute queries");
    CHECK_OK(aclrtMemManagedAdvise(m, size, ACL_MEM_ADVISE_SET_READ_MOSTLY, bad));
    CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, size, &rm, sizeof rm));
    CHECK(rm == 1);
    CHECK_OK(aclrtMemManagedAdvise(m + 4096, 4096, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, dev0));
    CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, size, &loc, sizeof loc));
    CHECK(loc.type == ACL_MEM_LOCATIONTYPE_DEVICE && loc.id == 0);
    CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, size, &ty, sizeof ty));
    CHECK(ty == ACL_MEM_LOCATIONTYPE_DEVICE);
    CHECK_OK(aclrtMemManagedAdvise(m, size, ACL_MEM_ADVISE_SET_ACCESSED_BY, dev1));
    memset(locs, 0x7F, sizeof locs);
    CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, size, locs, sizeof locs));
    CHECK(locs[0].type == ACL_MEM_LOCATIONTYPE_DEVICE && locs[0].id == 1);
    CHECK(locs[1].type == ACL_MEM_LOCATIONTYPE_INVALID && locs[2].type == ACL_MEM_LOCATIONTYPE_INVALID);
    CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, size, &loc, sizeof loc));
    CHECK(loc.type == ACL_MEM_LOCATIONTYPE_INVALID);
    CHECK_FAIL(aclrtMemManagedAdvise(m, size, (aclrtMemManagedAdviseType)9, dev0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemManagedAdvise(m, size, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, bad), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemManagedAdvise(NULL, size, ACL_MEM_ADVISE_SET_READ_MOSTLY, bad), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemManagedAdvise(m, size + 1, ACL_MEM_ADVISE_SET_READ_MOSTLY, bad), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemManagedAdvise(dev, 4096, ACL_MEM_ADVISE_SET_READ_MOSTLY, bad), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, size, &loc, sizeof loc),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemManagedGetAttr((aclrtMemManagedRangeAttribute)0, m, size, &rm, sizeof rm),
               ACL_ERROR_INVALID_PARAM);
    {
        aclrtMemManagedRangeAttribute which[2] = {ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                                  ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID};
        int32_t a = -1, b = -1;
        void *data[2] = {&a, &b};
        size_t sizes[2] = {sizeof a, sizeof b};
        CHECK_OK(aclrtMemManagedGetAttrs(which, 2, m, size, data, sizes));
        CHECK(a == 1 && b == 0);
        CHECK_FAIL(aclrtMemManagedGetAttrs(which, 0, m, size, data, sizes), ACL_ERROR_INVALID_PARAM);
    }

    check_section("prefetch: recorded, reported, and accounted where the pages went");
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f0, &t));
    CHECK_OK(aclrtMemManagedPrefetchAsync(m, size, host, 0, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, size, &loc, sizeof loc));
    CHECK(loc.type == ACL_MEM_LOCATIONTYPE_HOST);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f1, &t));
    CHECK(f1 == f0 + size);
    CHECK_OK(aclrtMemManagedPrefetchAsync(m, size, dev0, 0, stream));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f2, &t));
    CHECK(f2 == f0);
    CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, m, size, &ty, sizeof ty));
    CHECK(ty == 0);
    CHECK_FAIL(aclrtMemManagedPrefetchAsync(m, size, host, 1, stream), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemManagedPrefetchAsync(m, size, bad, 0, stream), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemManagedPrefetchAsync(dev, 4096, host, 0, stream), ACL_ERROR_RT_PARAM_INVALID);
    {
        const void *ptrs[2] = {m, m + MIB};
        size_t sizes[2] = {MIB, MIB};
        aclrtMemManagedLocation where[2] = {host, dev0};
        size_t idx[2] = {0, 1};
        size_t bad_idx[2] = {1, 0};
        CHECK_OK(aclrtMemManagedPrefetchBatchAsync(ptrs, sizes, 2, where, idx, 2, 0, stream));
        CHECK_OK(aclrtSynchronizeStream(stream));
        CHECK_OK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, size, &ty,
                                        sizeof ty));
        CHECK(ty == ACL_MEM_LOCATIONTYPE_DEVICE); /* the last entry's location */
        CHECK_FAIL(aclrtMemManagedPrefetchBatchAsync(ptrs, sizes, 2, where, bad_idx, 2, 0, stream),
                   ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtMemManagedPrefetchBatchAsync(ptrs, sizes, 2, where, idx, 3, 0, stream),
                   ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtMemManagedPrefetchBatchAsync(NULL, sizes, 2, where, idx, 2, 0, stream),
                   ACL_ERROR_INVALID_PARAM);
    }
    CHECK_OK(aclrtFree(m));
    CHECK_FAIL(aclrtMemManagedAdvise(m, size, ACL_MEM_ADVISE_SET_READ_MOSTLY, bad), ACL_ERROR_RT_PARAM_INVALID);

    check_section("aclrtMemP2PMap");
    CHECK_OK(aclrtMemP2PMap(dev, 4096, 1, 0));
    CHECK_FAIL(aclrtMemP2PMap(dev, 4096, 1, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemP2PMap(dev, 4096, 9, 0), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtMemP2PMap(NULL, 4096, 1, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemP2PMap(back, sizeof back, 1, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFree(dev));
    (void)plain;
}

static void descriptor_copies(aclrtStream stream)
{
    size_t n = 0;
    unsigned char *desc = NULL, *src = NULL, *dst = NULL;
    unsigned char host[256], back[256], stack_desc[64];
    void *dbase, *sbase;
    int i, bad = 0;

    check_section("descriptor copies (ACL_MEMCPY_INNER_DEVICE_TO_DEVICE only)");
    CHECK_FAIL(aclrtGetMemcpyDescSize(ACL_MEMCPY_HOST_TO_DEVICE, &n), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &n));
    CHECK(n == 32);
    CHECK_OK(aclrtMalloc((void **)&desc, n, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc((void **)&src, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc((void **)&dst, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    for (i = 0; i < 256; i++) {
        host[i] = (unsigned char)i;
    }
    CHECK_OK(aclrtMemcpy(src, 256, host, 256, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemset(dst, 256, 0, 256));
    CHECK_OK(aclrtMemset(desc, n, 0, n));
    CHECK_FAIL(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, src, dst, 256, host),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_DEVICE_TO_DEVICE, src, dst, 256, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtSetMemcpyDesc(NULL, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, src, dst, 256, NULL),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtSetMemcpyDesc(stack_desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, src, dst, 256, NULL),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, src, dst, 4096, NULL),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, src, dst, 256, NULL));
    CHECK_FAIL(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemcpy(back, 256, dst, 256, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(back, host, 256) == 0);

    check_section("offset copies");
    CHECK_OK(aclrtMemset(dst, 256, 0, 256));
    dbase = dst;
    sbase = src;
    CHECK_OK(aclrtMemcpyAsyncWithOffset(&dbase, 256, 16, (const void **)&sbase, 64, 32,
                                        ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemcpy(back, 256, dst, 256, ACL_MEMCPY_DEVICE_TO_HOST));
    for (i = 0; i < 256; i++) {
        unsigned char want = (i >= 16 && i < 80) ? (unsigned char)(i + 16) : 0;
        bad += back[i] != want;
    }
    CHECK(bad == 0);
    CHECK_FAIL(aclrtMemcpyAsyncWithOffset(&dbase, 256, 240, (const void **)&sbase, 64, 0,
                                          ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpyAsyncWithOffset(&dbase, 256, 0, (const void **)&sbase, 64, 0,
                                          ACL_MEMCPY_HOST_TO_DEVICE, stream),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyAsyncWithOffset(NULL, 256, 0, (const void **)&sbase, 64, 0,
                                          ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream),
               ACL_ERROR_INVALID_PARAM);

    check_section("aclrtMemcpyAsyncWithCondition is aclrtMemcpyAsync");
    CHECK_OK(aclrtMemcpyAsyncWithCondition(dst, 256, src, 256, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemcpy(back, 256, dst, 256, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(back, host, 256) == 0);
    CHECK_FAIL(aclrtMemcpyAsyncWithCondition(dst, 255, src, 256, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFree(desc));
    CHECK_OK(aclrtFree(src));
    CHECK_OK(aclrtFree(dst));
}

static void symbols(aclrtStream stream)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle bump = NULL;
    void *so, *sym = NULL, *devp = NULL;
    size_t n = 0;
    int32_t vals[16], back[16];
    int local = 0, i, bad = 0;

    check_section("device symbols of a loaded kernel binary");
    if (!CHECK(lib != NULL) || !CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin))) {
        return;
    }
    CHECK_OK(aclrtBinaryGetFunction(bin, "bump", &bump));
    so = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    CHECK(so != NULL);
    if (so == NULL) {
        return;
    }
    sym = dlsym(so, "aclrs_counters");
    CHECK(sym != NULL);
    CHECK_OK(aclrtGetSymbolAddress(sym, &devp));
    CHECK(devp == sym);
    CHECK_OK(aclrtGetSymbolSize(sym, &n));
    CHECK(n == sizeof vals);
    for (i = 0; i < 16; i++) {
        vals[i] = 100 * i;
    }
    CHECK_OK(aclrtMemcpyToSymbol(sym, vals, sizeof vals, 0, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtLaunchKernelV2(bump, 16, NULL, 0, NULL, stream));
    memset(back, 0, sizeof back);
    CHECK_OK(aclrtMemcpyFromSymbolAsync(back, sizeof back, sym, sizeof back, 0, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    for (i = 0; i < 16; i++) {
        bad += back[i] != 100 * i + 1;
    }
    CHECK(bad == 0);
    CHECK_OK(aclrtMemcpyToSymbolAsync(sym, vals, 8, 8, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_OK(aclrtMemcpyFromSymbol(back, sizeof back, sym, 8, 8, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(back[0] == 0 && back[1] == 100);

    CHECK_FAIL(aclrtGetSymbolAddress(&local, &devp), ACL_ERROR_RT_INVALID_SYMBOL);
    CHECK_FAIL(aclrtGetSymbolSize((char *)sym + 4, &n), ACL_ERROR_RT_INVALID_SYMBOL);
    CHECK_FAIL(aclrtGetSymbolAddress((void *)(uintptr_t)bump, &devp), ACL_ERROR_RT_INVALID_SYMBOL);
    CHECK_FAIL(aclrtGetSymbolAddress(NULL, &devp), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetSymbolSize(sym, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyFromSymbol(back, sizeof back, sym, 8, 60, ACL_MEMCPY_DEVICE_TO_HOST),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyFromSymbol(back, sizeof back, sym, 8, 0, ACL_MEMCPY_HOST_TO_DEVICE),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemcpyToSymbol(sym, vals, 8, 0, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    /* Unloaded: no longer a device variable. */
    CHECK_FAIL(aclrtGetSymbolAddress(sym, &devp), ACL_ERROR_RT_INVALID_SYMBOL);
    dlclose(so);
}

static void cache_maintenance(aclrtStream stream)
{
    void *dev = NULL, *desc = NULL;
    char host[64];
    size_t n = 0;
    aclrtBarrierTaskInfo info;

    check_section("cache maintenance: stream-ordered and range-checked");
    CHECK_OK(aclrtMalloc(&dev, 8192, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtCmoAsync(dev, 8192, ACL_RT_CMO_TYPE_FLUSH, stream));
    CHECK_OK(aclrtCmoAsync((char *)dev + 4096, 4096, ACL_RT_CMO_TYPE_PREFETCH, NULL));
    CHECK_FAIL(aclrtCmoAsync(dev, 8192, (aclrtCmoType)9, stream), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCmoAsync(dev, 0, ACL_RT_CMO_TYPE_FLUSH, stream), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCmoAsync(NULL, 64, ACL_RT_CMO_TYPE_FLUSH, stream), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCmoAsync(host, sizeof host, ACL_RT_CMO_TYPE_FLUSH, stream), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtCmoAsync(dev, 16384, ACL_RT_CMO_TYPE_FLUSH, stream), ACL_ERROR_RT_PARAM_INVALID);

    CHECK_OK(aclrtCmoAsyncWithBarrier(dev, 8192, ACL_RT_CMO_TYPE_INVALID, 1, stream));
    CHECK_FAIL(aclrtCmoAsyncWithBarrier(dev, 8192, ACL_RT_CMO_TYPE_INVALID, 1, stream), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtCmoAsyncWithBarrier(dev, 8192, ACL_RT_CMO_TYPE_INVALID, 0, stream), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCmoAsyncWithBarrier(dev, 8192, ACL_RT_CMO_TYPE_INVALID, 7, stream), ACL_ERROR_INVALID_PARAM);
    memset(&info, 0, sizeof info);
    info.barrierNum = 1;
    info.cmoInfo[0].cmoType = ACL_RT_CMO_TYPE_FLUSH;
    info.cmoInfo[0].barrierId = 1;
    CHECK_FAIL(aclrtCmoWaitBarrier(&info, stream, 0), ACL_ERROR_RT_PARAM_INVALID); /* other type */
    info.cmoInfo[0].cmoType = ACL_RT_CMO_TYPE_INVALID;
    CHECK_FAIL(aclrtCmoWaitBarrier(&info, stream, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCmoWaitBarrier(&info, stream, 0));
    CHECK_FAIL(aclrtCmoWaitBarrier(&info, stream, 0), ACL_ERROR_RT_PARAM_INVALID); /* already waited */
    info.barrierNum = 0;
    CHECK_FAIL(aclrtCmoWaitBarrier(&info, stream, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCmoWaitBarrier(NULL, stream, 0), ACL_ERROR_INVALID_PARAM);

    CHECK_FAIL(aclrtCmoGetDescSize(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCmoGetDescSize(&n));
    CHECK(n == 32);
    CHECK_OK(aclrtMalloc(&desc, n, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(desc, n, 0, n));
    CHECK_FAIL(aclrtCmoAsyncWithDesc(desc, ACL_RT_CMO_TYPE_WRITEBACK, stream, NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtCmoSetDesc(desc, host, sizeof host), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtCmoSetDesc(desc, dev, 8192));
    CHECK_OK(aclrtCmoAsyncWithDesc(desc, ACL_RT_CMO_TYPE_WRITEBACK, stream, NULL));
    CHECK_FAIL(aclrtCmoAsyncWithDesc(desc, ACL_RT_CMO_TYPE_WRITEBACK, stream, host), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCmoAsyncWithDesc(NULL, ACL_RT_CMO_TYPE_WRITEBACK, stream, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtFree(desc));
    CHECK_OK(aclrtFree(dev));
}

static void mapping_variants(void)
{
    aclrtPhysicalMemProp prop;
    aclrtDrvMemHandle h = NULL;
    void *va = NULL, *va2 = NULL;
    size_t gran = 0;
    uint64_t flag = 99;
    aclrtMemLocation loc;
    aclrtMemAccessDesc access;
    aclrtHostMemMapCapability cap = ACL_RT_HOST_MEM_MAP_NOT_SUPPORTED;
    int32_t pid = 1;
    aclrtServerPid sp;
    int a3 = is_soc("A3");

    check_section("aclrtMemMapNoAccess: mapped, no access until aclrtMemSetAccess");
    memset(&prop, 0, sizeof prop);
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CHECK_OK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &gran));
    CHECK_OK(aclrtMallocPhysical(&h, gran, &prop, 0));
    CHECK_OK(aclrtReserveMemAddress(&va, 2 * gran, 0, NULL, 0));
    CHECK_FAIL(aclrtMemMapNoAccess(va, gran, 0, h, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemMapNoAccess(NULL, gran, 0, h, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemMapNoAccess(va, gran, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMemMapNoAccess(va, gran, 0, h, 0));
    loc.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    loc.id = 0;
    CHECK_OK(aclrtMemGetAccess(va, &loc, &flag));
    CHECK(flag == ACL_RT_MEM_ACCESS_FLAGS_NONE);
    memset(&access, 0, sizeof access);
    access.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
    access.location = loc;
    CHECK_OK(aclrtMemSetAccess(va, gran, &access, 1));
    CHECK_OK(aclrtMemGetAccess(va, &loc, &flag));
    CHECK(flag == ACL_RT_MEM_ACCESS_FLAGS_READWRITE);

    check_section("aclrtMemMapSelectedLink and aclrtMemMapSetLink (A3)");
    va2 = (char *)va + gran;
    if (a3) {
        CHECK_FAIL(aclrtMemMapSelectedLink(va2, gran, va, 2), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtMemMapSelectedLink(va2, 0, va, 1), ACL_ERROR_INVALID_PARAM);
        CHECK_OK(aclrtMemMapSelectedLink(va2, gran, va, ACL_RT_MEM_LINK_IDX_1));
        CHECK_OK(aclrtUnmapMem(va2));
        CHECK_OK(aclrtMemMapSetLink(h, ACL_RT_MEM_ACCESS_LINK_HCCS));
        CHECK_FAIL(aclrtMemMapSetLink(h, ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH), ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED);
    } else {
        CHECK_FAIL(aclrtMemMapSelectedLink(va2, gran, va, ACL_RT_MEM_LINK_IDX_1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        CHECK_FAIL(aclrtMemMapSetLink(h, ACL_RT_MEM_ACCESS_LINK_HCCS), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    }
    CHECK_FAIL(aclrtMemMapSetLink(NULL, ACL_RT_MEM_ACCESS_LINK_HCCS), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtUnmapMem(va));
    CHECK_OK(aclrtReleaseMemAddress(va));
    CHECK_OK(aclrtFreePhysical(h));

    check_section("aclrtReserveMemAddressNoUCMemory (A3)");
    va = NULL;
    if (a3) {
        CHECK_FAIL(aclrtReserveMemAddressNoUCMemory(&va, (size_t)1 << 30, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtReserveMemAddressNoUCMemory(&va, gran, 0, (void *)(uintptr_t)(17ULL << 40), 0),
                   ACL_ERROR_INVALID_PARAM);
    } else {
        CHECK_FAIL(aclrtReserveMemAddressNoUCMemory(&va, (size_t)1 << 30, 0, (void *)(uintptr_t)(17ULL << 40), 0),
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    }

    check_section("aclrtHostMemMapCapabilities");
    CHECK_OK(aclrtHostMemMapCapabilities(0, ACL_RT_HAC_TYPE_AIC, &cap));
    CHECK(cap == ACL_RT_HOST_MEM_MAP_SUPPORTED);
    CHECK_OK(aclrtHostMemMapCapabilities(0, ACL_RT_HAC_TYPE_RDMA, &cap));
    CHECK(cap == ACL_RT_HOST_MEM_MAP_NOT_SUPPORTED);
    CHECK_FAIL(aclrtHostMemMapCapabilities(0, (aclrtHacType)10, &cap), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtHostMemMapCapabilities(9, ACL_RT_HAC_TYPE_AIC, &cap), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtHostMemMapCapabilities(0, ACL_RT_HAC_TYPE_AIC, NULL), ACL_ERROR_INVALID_PARAM);

    check_section("aclrtIpcMemImportPidInterServer");
    sp.sdid = 0;
    sp.pid = &pid;
    sp.num = 1;
    CHECK_FAIL(aclrtIpcMemImportPidInterServer(NULL, &sp, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemImportPidInterServer("aclrs-no-such-key", NULL, 1), ACL_ERROR_INVALID_PARAM);
    if (!a3) {
        CHECK_FAIL(aclrtIpcMemImportPidInterServer("aclrs-no-such-key", &sp, 1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    }
}

static void behaviours(void)
{
    char stack[256];
    char *heap = malloc(4096);
    void *reg = NULL, *devp = NULL;
    aclrtPtrAttributes attr;
    aclrtDeviceStatus st = ACL_RT_DEVICE_STATUS_ABNORMAL;
    aclrtUtilizationInfo u;
    aclrtStream def = NULL;
    int i, bad = 0;

    check_section("aclrtMemset on ordinary host memory");
    CHECK_OK(aclrtMemset(stack, sizeof stack, 0xA5, sizeof stack));
    for (i = 0; i < (int)sizeof stack; i++) {
        bad += (unsigned char)stack[i] != 0xA5;
    }
    CHECK(bad == 0);
    CHECK(heap != NULL);
    if (heap != NULL) {
        CHECK_OK(aclrtMemsetAsync(heap, 4096, 0x3C, 4096, NULL));
        CHECK((unsigned char)heap[4095] == 0x3C);
        CHECK_FAIL(aclrtMemset(heap, 16, 0, 17), ACL_ERROR_RT_PARAM_INVALID);
        free(heap);
    }

    check_section("pointer attributes of registered host memory");
    reg = aligned_alloc(4096, 8192);
    CHECK(reg != NULL);
    if (reg != NULL) {
        CHECK_OK(aclrtPointerGetAttributes(reg, &attr));
        CHECK(attr.location.type == ACL_MEM_LOCATION_TYPE_UNREGISTERED);
        CHECK_OK(aclrtHostRegister(reg, 8192, ACL_HOST_REGISTER_MAPPED, &devp));
        CHECK_OK(aclrtPointerGetAttributes((char *)reg + 4100, &attr));
        CHECK(attr.location.type == ACL_MEM_LOCATION_TYPE_HOST && attr.pageSize == 4096);
        CHECK_OK(aclrtHostUnregister(reg));
        CHECK_OK(aclrtPointerGetAttributes(reg, &attr));
        CHECK(attr.location.type == ACL_MEM_LOCATION_TYPE_UNREGISTERED);
        free(reg);
    }

    check_section("a forced reset of device 1 leaves device 0's grant to it");
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtDeviceEnablePeerAccess(1, 0));
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtResetDeviceForce(1));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtDeviceDisablePeerAccess(1));
    CHECK_FAIL(aclrtDeviceDisablePeerAccess(1), ACL_ERROR_RT_PARAM_INVALID);

    check_section("device status, utilisation, the current default stream");
    CHECK_OK(aclrtQueryDeviceStatus(0, &st));
    CHECK(st == ACL_RT_DEVICE_STATUS_NORMAL);
    CHECK_FAIL(aclrtQueryDeviceStatus(99, &st), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtQueryDeviceStatus(0, NULL), ACL_ERROR_INVALID_PARAM);
    memset(&u, 0, sizeof u);
    CHECK_OK(aclrtGetDeviceUtilizationRate(0, &u));
    CHECK(u.cubeUtilization == -1 && u.vectorUtilization == -1 && u.aicpuUtilization == -1 &&
          u.memoryUtilization == -1);
    u.utilizationExtend = (aclrtUtilizationExtendInfo *)(void *)&u;
    CHECK_FAIL(aclrtGetDeviceUtilizationRate(0, &u), ACL_ERROR_INVALID_PARAM);
    u.utilizationExtend = NULL;
    CHECK_FAIL(aclrtGetDeviceUtilizationRate(-1, &u), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtGetDeviceUtilizationRate(0, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtCtxGetCurrentDefaultStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtCtxGetCurrentDefaultStream(&def));
    CHECK(def != NULL);
    CHECK_OK(aclrtMemsetAsync(stack, sizeof stack, 1, sizeof stack, def));
    CHECK_OK(aclrtSynchronizeStream(def));
}

static void exceptions(aclrtStream stream)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle fail = NULL;
    void *p = NULL;
    uint32_t len = 0;

    check_section("exception callbacks and accessors");
    CHECK_FAIL(aclrtExceptionInfoCallbackRegister(NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtExceptionInfoCallbackUnregister(NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtExceptionInfoCallbackUnregister(other_callback)); /* unknown: no error */
    CHECK_OK(aclrtExceptionInfoCallbackRegister(on_exception));
    CHECK_OK(aclrtExceptionInfoCallbackRegister(on_exception)); /* still one entry */
    CHECK_OK(aclrtSetExceptionInfoCallback(NULL));
    CHECK(aclrtGetTaskIdFromExceptionInfo(NULL) == 0xFFFFFFFFu);
    CHECK(aclrtGetStreamIdFromExceptionInfo(NULL) == 0xFFFFFFFFu);
    CHECK(aclrtGetThreadIdFromExceptionInfo(NULL) == 0xFFFFFFFFu);
    CHECK(aclrtGetDeviceIdFromExceptionInfo(NULL) == 0xFFFFFFFFu);
    CHECK(aclrtGetErrorCodeFromExceptionInfo(NULL) == 0xFFFFFFFFu);
    CHECK(aclrtGetArgsFromExceptionInfo(NULL, &p, &len) == (aclError)0xFFFFFFFF);
    if (lib == NULL || !CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin))) {
        return;
    }
    CHECK_OK(aclrtBinaryGetFunction(bin, "fail_now", &fail));
    CHECK_OK(aclrtLaunchKernelV2(fail, 1, NULL, 0, NULL, stream));
    CHECK_RET(aclrtSynchronizeStream(stream), 507015);
    CHECK(g_calls == 1);
    CHECK(g_device == 0);
    CHECK(g_code == 507015);
    CHECK(g_args_rc == (int)0xFFFFFFFF); /* no argument block recorded */
    CHECK(g_stream != 0xFFFFFFFFu);
    /* A device synchronisation reports the failure too, as a device-level record. */
    CHECK_OK(aclrtLaunchKernelV2(fail, 1, NULL, 0, NULL, stream));
    CHECK_RET(aclrtSynchronizeDevice(), 507015);
    CHECK(g_calls == 2);
    CHECK(g_stream == 0xFFFFFFFFu && g_code == 507015);
    CHECK_OK(aclrtExceptionInfoCallbackUnregister(on_exception));
    CHECK_OK(aclrtLaunchKernelV2(fail, 1, NULL, 0, NULL, stream));
    CHECK_RET(aclrtSynchronizeStream(stream), 507015);
    CHECK(g_calls == 2);
    CHECK_OK(aclrtBinaryUnLoad(bin));
}

int main(void)
{
    aclrtStream stream = NULL;
    uint64_t left = 99;

    CHECK_OK(aclInit(NULL));
    finalize_reference();
    CHECK_OK(aclrtCreateStream(&stream));
    managed(stream);
    descriptor_copies(stream);
    symbols(stream);
    cache_maintenance(stream);
    mapping_variants();
    exceptions(stream);
    CHECK_OK(aclrtDestroyStream(stream));
    behaviours();

    check_section("the last reference finalizes");
    CHECK_OK(aclFinalizeReference(&left));
    CHECK(left == 0);
    CHECK_RET(aclFinalizeReference(&left), ACL_ERROR_REPEAT_FINALIZE);
    CHECK_RET(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    return check_summary("memory_rest");
}
