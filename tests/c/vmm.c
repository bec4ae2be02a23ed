/* Virtual memory management, host registration and peer access in one process: reserve, map
 * two physical handles side by side, use them as one range, unmap, release; every wrong order
 * and bad argument with its code; a growable buffer (the expandable-segment pattern) that keeps
 * its address while it grows; registered host memory as a copy source and destination; copies
 * between the two devices once peer access is on. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define MIB ((size_t)1 << 20)

static aclrtPhysicalMemProp prop_of(uint32_t dev)
{
    aclrtPhysicalMemProp p;
    memset(&p, 0, sizeof p);
    p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p.memAttr = ACL_HBM_MEM_HUGE;
    p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static void side_by_side(void)
{
    check_section("reserve, map two handles side by side, use, unmap, release");
    aclrtPhysicalMemProp prop = prop_of(0);
    size_t gran = 0;
    CHECK_OK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &gran));
    CHECK(gran == 2 * MIB);
    size_t free0 = 0, total = 0, free1 = 0;
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total));

    aclrtDrvMemHandle h1 = NULL, h2 = NULL;
    CHECK_OK(aclrtMallocPhysical(&h1, 2 * gran, &prop, 0));
    CHECK_OK(aclrtMallocPhysical(&h2, 2 * gran, &prop, 0));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total));
    CHECK(free0 - free1 == 4 * gran);

    void *va = NULL;
    CHECK_OK(aclrtReserveMemAddress(&va, 4 * gran, 0, NULL, 0));
    char *base = va;
    CHECK_OK(aclrtMapMem(base, 2 * gran, 0, h1, 0));
    CHECK_OK(aclrtMapMem(base + 2 * gran, 2 * gran, 0, h2, 0));

    /* One range across both handles. */
    size_t len = 4 * gran;
    unsigned char *host = malloc(len), *back = malloc(len);
    fill_pattern(host, len, 11);
    CHECK_OK(aclrtMemcpy(base, len, host, len, ACL_MEMCPY_HOST_TO_DEVICE));
    memset(back, 0, len);
    CHECK_OK(aclrtMemcpy(back, len, base + gran, 2 * gran, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(back, host + gran, 2 * gran) == 0);
    CHECK_OK(aclrtMemset(base + gran, 2 * gran, 0, 2 * gran));

    /* Access, retain, properties. */
    aclrtMemLocation loc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
    uint64_t flags = 99;
    CHECK_OK(aclrtMemGetAccess(base, &loc, &flags));
    CHECK(flags == ACL_RT_MEM_ACCESS_FLAGS_READWRITE);
    aclrtMemLocation hostloc = {0, ACL_MEM_LOCATION_TYPE_HOST};
    CHECK_OK(aclrtMemGetAccess(base, &hostloc, &flags));
    CHECK(flags == ACL_RT_MEM_ACCESS_FLAGS_NONE);
    aclrtMemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
    desc.location = hostloc;
    CHECK_OK(aclrtMemSetAccess(base, 2 * gran, &desc, 1));
    CHECK_OK(aclrtMemGetAccess(base, &hostloc, &flags));
    CHECK(flags == ACL_RT_MEM_ACCESS_FLAGS_READWRITE);
    CHECK_FAIL(aclrtMemSetAccess(base, gran, &desc, 1), ACL_ERROR_RT_PARAM_INVALID);
    desc.flags = ACL_RT_MEM_ACCESS_FLAGS_READ;
    CHECK_FAIL(aclrtMemSetAccess(base, 2 * gran, &desc, 1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtMemSetAccess(base, 2 * gran, &desc, 0), ACL_ERROR_INVALID_PARAM);

    aclrtDrvMemHandle r = NULL;
    CHECK_OK(aclrtMemRetainAllocationHandle(base + 2 * gran, &r));
    CHECK(r == h2);
    CHECK_FAIL(aclrtMemRetainAllocationHandle(base + gran, &r), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFreePhysical(h2)); /* balances the retain */
    aclrtPhysicalMemProp got;
    memset(&got, 0xff, sizeof got);
    CHECK_OK(aclrtMemGetAllocationPropertiesFromHandle(h1, &got));
    CHECK(got.memAttr == ACL_HBM_MEM_HUGE && got.location.id == 0 &&
          got.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && got.handleType == ACL_MEM_HANDLE_TYPE_NONE);

    /* Wrong orders and wrong maps. */
    CHECK_FAIL(aclrtReleaseMemAddress(base), ACL_ERROR_RT_PARAM_INVALID);          /* still mapped */
    CHECK_FAIL(aclrtMapMem(base + gran, 2 * gran, 0, h1, 0), ACL_ERROR_RT_PARAM_INVALID); /* overlaps */
    CHECK_FAIL(aclrtMapMem(base + 4 * gran, 2 * gran, 0, h1, 0), ACL_ERROR_RT_PARAM_INVALID); /* outside */
    CHECK_FAIL(aclrtMapMem(base, 2 * gran, gran, h1, 0), ACL_ERROR_RT_PARAM_INVALID); /* offset */
    CHECK_FAIL(aclrtMapMem(base, 2 * gran, 0, h1, 1), ACL_ERROR_INVALID_PARAM);        /* flags */
    CHECK_FAIL(aclrtMapMem(base, 0, 0, h1, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtUnmapMem(base + gran), ACL_ERROR_RT_PARAM_INVALID);

    /* Freeing a mapped handle defers the release to the unmap. */
    CHECK_OK(aclrtFreePhysical(h1));
    CHECK_FAIL(aclrtFreePhysical(h1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtMemcpy(back, gran, base, gran, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(back, host, gran) == 0);
    CHECK_OK(aclrtUnmapMem(base));
    CHECK_OK(aclrtUnmapMem(base + 2 * gran));
    CHECK_FAIL(aclrtUnmapMem(base), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(back, gran, base, gran, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFreePhysical(h2));
    CHECK_OK(aclrtReleaseMemAddress(base));
    CHECK_FAIL(aclrtReleaseMemAddress(base), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total));
    CHECK(free1 == free0);

    /* A misaligned map inside a reservation. */
    aclrtDrvMemHandle h3 = NULL;
    CHECK_OK(aclrtMallocPhysical(&h3, gran, &prop, 0));
    CHECK_OK(aclrtReserveMemAddress(&va, 4 * gran, 0, NULL, 0));
    CHECK_FAIL(aclrtMapMem((char *)va + 4096, gran, 0, h3, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMapMem(va, 2 * gran, 0, h3, 0), ACL_ERROR_RT_PARAM_INVALID); /* size != handle */
    CHECK_OK(aclrtFreePhysical(h3));
    CHECK_OK(aclrtReleaseMemAddress(va));
    free(host);
    free(back);
}

static void bad_arguments(void)
{
    check_section("bad arguments");
    aclrtPhysicalMemProp prop = prop_of(0);
    aclrtDrvMemHandle h = NULL;
    void *va = NULL;
    size_t gran = 0;
    CHECK_FAIL(aclrtMallocPhysical(NULL, 2 * MIB, &prop, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocPhysical(&h, 0, &prop, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocPhysical(&h, 2 * MIB, &prop, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMallocPhysical(&h, 2 * MIB + 4096, &prop, 0), ACL_ERROR_RT_PARAM_INVALID);
    prop.handleType = (aclrtMemHandleType)100;
    CHECK_FAIL(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_ERROR_INVALID_PARAM);
    prop = prop_of(0);
    prop.allocationType = (aclrtMemAllocationType)100;
    CHECK_FAIL(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_ERROR_INVALID_PARAM);
    prop = prop_of(0);
    prop.location.type = ACL_MEM_LOCATION_TYPE_MANAGED;
    CHECK_FAIL(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_ERROR_INVALID_PARAM);
    prop = prop_of(0);
    prop.memAttr = ACL_DDR_MEM_HUGE;
    CHECK_FAIL(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_ERROR_INVALID_PARAM);
    prop.memAttr = ACL_HBM_MEM;
    CHECK_FAIL(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &gran),
               ACL_ERROR_INVALID_PARAM);
    prop = prop_of(0);
    CHECK_FAIL(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, &gran),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtReserveMemAddress(&va, 0, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtReserveMemAddress(&va, 2 * MIB, 0, NULL, 2), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtReserveMemAddress(&va, 2 * MIB, 4096, NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtReserveMemAddress(NULL, 2 * MIB, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtReleaseMemAddress(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFreePhysical(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtUnmapMem(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFreePhysical((aclrtDrvMemHandle)(uintptr_t)0x1234), ACL_ERROR_RT_PARAM_INVALID);

    /* Shareable handles and keys. */
    uint64_t sh = 0;
    int32_t pid = 1;
    CHECK_OK(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0));
    CHECK_FAIL(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 2, &sh), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemExportToShareableHandleV2(h, 30, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &sh),
               ACL_ERROR_INVALID_PARAM);
    aclrtDrvMemHandle imp = NULL;
    CHECK_OK(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh));
    CHECK(sh != 0);
    CHECK_FAIL(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemSetPidToShareableHandle(sh, &pid, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemSetPidToShareableHandle(sh, NULL, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtMemSetPidToShareableHandle(sh, &pid, 1));
    CHECK_FAIL(aclrtMemImportFromShareableHandle(sh, 0, &imp), ACL_ERROR_RT_FEATURE_NOT_SUPPORT); /* same process */
    CHECK_FAIL(aclrtMemSetPidToShareableHandleV2(NULL, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, &pid, 1),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemImportFromShareableHandleV2(&sh, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0, NULL),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemImportFromShareableHandleV2(&sh, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 1, &imp),
               ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemImportFromShareableHandle(sh, 99, &imp), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_OK(aclrtFreePhysical(h));

    void *dev = NULL;
    char key[65];
    CHECK_OK(aclrtMalloc(&dev, 4 * MIB, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_FAIL(aclrtIpcMemGetExportKey(NULL, 4 * MIB, key, 65, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemGetExportKey(dev, 4 * MIB, NULL, 65, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemGetExportKey(dev, 0, key, 65, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtIpcMemGetExportKey(dev, 4 * MIB, key, 0, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtIpcMemGetExportKey(dev, 4 * MIB, key, 65, 2), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtIpcMemGetExportKey((char *)dev + 4096, 4096, key, 65, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtIpcMemGetExportKey(dev, 8 * MIB, key, 65, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtIpcMemGetExportKey(dev, 4 * MIB, key, 65, 0));
    CHECK(strlen(key) > 0 && strlen(key) <= 64);
    void *imported = NULL;
    CHECK_FAIL(aclrtIpcMemImportByKey(NULL, key, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemImportByKey(&imported, NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemImportByKey(&imported, key, 2), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtIpcMemImportByKey(&imported, "no-such-key", 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtIpcMemSetImportPid(NULL, &pid, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemSetImportPid(key, NULL, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemSetImportPid(key, &pid, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtIpcMemSetImportPid(key, &pid, 1));
    CHECK_FAIL(aclrtIpcMemSetAttr(key, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_HCCS),
               ACL_ERROR_RT_FEATURE_NOT_SUPPORT); /* A2 */
    CHECK_FAIL(aclrtIpcMemClose(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtIpcMemClose(key));
    CHECK_FAIL(aclrtIpcMemClose(key), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFree(dev));
    int32_t me = 0;
    CHECK_OK(aclrtDeviceGetBareTgid(&me));
    CHECK(me > 0);
    CHECK_FAIL(aclrtDeviceGetBareTgid(NULL), ACL_ERROR_INVALID_PARAM);
}

static void growable_buffer(void)
{
    check_section("a growable buffer keeps its address while it grows");
    aclrtPhysicalMemProp prop = prop_of(0);
    size_t gran = 2 * MIB, cap = 64 * MIB, used = 0;
    void *va = NULL;
    aclrtDrvMemHandle chunks[32];
    int n = 0;
    CHECK_OK(aclrtReserveMemAddress(&va, cap, 0, NULL, 0));
    char *base = va;
    unsigned char *host = malloc(cap), *back = malloc(cap);
    fill_pattern(host, cap, 5);
    for (size_t want = 3 * MIB; want <= 40 * MIB; want += 9 * MIB) {
        while (used < want) {
            CHECK_OK(aclrtMallocPhysical(&chunks[n], gran, &prop, 0));
            CHECK_OK(aclrtMapMem(base + used, gran, 0, chunks[n], 0));
            n++;
            used += gran;
        }
        /* The whole buffer, old bytes and new, at the same address. */
        CHECK_OK(aclrtMemcpy(base, want, host, want, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK_OK(aclrtMemcpy(back, want, base, want, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(memcmp(back, host, want) == 0);
    }
    CHECK(va == (void *)base);
    for (int i = n - 1; i >= 0; i--) {
        CHECK_OK(aclrtUnmapMem(base + (size_t)i * gran));
        CHECK_OK(aclrtFreePhysical(chunks[i]));
    }
    CHECK_OK(aclrtReleaseMemAddress(va));
    free(host);
    free(back);
}

static void host_registration(void)
{
    check_section("host registration of malloc'd memory as copy source and destination");
    size_t len = 1 * MIB;
    unsigned char *buf = aligned_alloc(4096, len);
    CHECK(buf != NULL);
    void *devp = NULL, *dp2 = NULL, *dev = NULL;
    CHECK_FAIL(aclrtHostRegister(buf + 1, len, ACL_HOST_REGISTER_MAPPED, &devp), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtHostRegister(buf, 0, ACL_HOST_REGISTER_MAPPED, &devp), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtHostRegister(buf, len, ACL_HOST_REGISTER_IOMEMORY, &devp), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_OK(aclrtHostRegister(buf, len, ACL_HOST_REGISTER_MAPPED, &devp));
    CHECK(devp != NULL);
    CHECK_FAIL(aclrtHostRegister(buf, len, ACL_HOST_REGISTER_MAPPED, &devp), ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CHECK_OK(aclrtHostGetDevicePointer(buf + 100, &dp2, 0));
    CHECK((char *)dp2 == (char *)devp + 100);
    CHECK_FAIL(aclrtHostGetDevicePointer(buf, &dp2, 1), ACL_ERROR_INVALID_PARAM);

    CHECK_OK(aclrtMalloc(&dev, len, ACL_MEM_MALLOC_HUGE_FIRST));
    fill_pattern(buf, len, 21);
    CHECK_OK(aclrtMemcpy(dev, len, buf, len, ACL_MEMCPY_HOST_TO_DEVICE));
    memset(buf, 0, len);
    CHECK_OK(aclrtMemcpy(buf, len, dev, len, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(buf, len, 21));
    CHECK_OK(aclrtHostUnregister(buf));
    CHECK_FAIL(aclrtHostUnregister(buf), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK_FAIL(aclrtHostGetDevicePointer(buf, &dp2, 0), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);

    /* The V2 pattern: malloc -> RegisterV2(PINNED|MAPPED) -> GetDevicePointer -> Unregister. */
    CHECK_FAIL(aclrtHostRegisterV2(buf, len, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtHostRegisterV2(buf, len, ACL_HOST_REG_READONLY), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_OK(aclrtHostRegisterV2(buf, len, ACL_HOST_REG_PINNED | ACL_HOST_REG_MAPPED));
    CHECK_OK(aclrtHostGetDevicePointer(buf, &dp2, 0));
    CHECK_OK(aclrtHostUnregister(buf));
    void *pinned = NULL;
    CHECK_OK(aclrtMallocHost(&pinned, len));
    CHECK_FAIL(aclrtHostRegisterV2(pinned, len, ACL_HOST_REG_PINNED | ACL_HOST_REG_MAPPED), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFreeHost(pinned));
    CHECK_OK(aclrtFree(dev));
    free(buf);
}

static void peer_copies(void)
{
    check_section("peer access and copies between the two devices");
    int32_t can = -1;
    size_t len = 4 * MIB;
    void *d0 = NULL, *d1 = NULL;
    unsigned char *host = malloc(len), *back = malloc(len);
    CHECK_OK(aclrtDeviceCanAccessPeer(&can, 0, 1));
    CHECK(can == 1);
    CHECK_FAIL(aclrtDeviceCanAccessPeer(&can, 0, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtDeviceCanAccessPeer(&can, 0, 7), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtMalloc(&d1, len, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtMalloc(&d0, len, ACL_MEM_MALLOC_HUGE_FIRST));
    fill_pattern(host, len, 33);
    CHECK_OK(aclrtMemcpy(d0, len, host, len, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_FAIL(aclrtMemcpy(d1, len, d0, len, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtDeviceEnablePeerAccess(1, 1), ACL_ERROR_FEATURE_UNSUPPORTED);
    CHECK_FAIL(aclrtDeviceEnablePeerAccess(0, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtDeviceEnablePeerAccess(1, 0));
    CHECK_FAIL(aclrtDeviceEnablePeerAccess(1, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtMemcpy(d1, len, d0, len, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE));
    CHECK_FAIL(aclrtMemcpy(d0, len, d0, len, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(d1, len, d0, len, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    memset(back, 0, len);
    CHECK_OK(aclrtMemcpy(back, len, d1, len, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(has_pattern(back, len, 33));
    CHECK_OK(aclrtDeviceDisablePeerAccess(1));
    CHECK_FAIL(aclrtDeviceDisablePeerAccess(1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtMemcpy(d1, len, d0, len, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtFree(d0));
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtFree(d1));
    CHECK_OK(aclrtResetDevice(1));
    CHECK_OK(aclrtSetDevice(0));
    free(host);
    free(back);
}

int main(void)
{
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    side_by_side();
    bad_arguments();
    growable_buffer();
    host_registration();
    peer_copies();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("vmm");
}
