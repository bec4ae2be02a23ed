/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_contracts.c - the contracts an adversarial run against the API found broken (issue 17),
 * each pinned by a check that fails when the contract does:
 *
 *   - ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE stages the source at the call: the caller may
 *     overwrite or free it as soon as the call returns (the copy is held behind a gate the
 *     program opens only after it has done so, so the order is certain);
 *   - a pool block freed with aclrtFree is idle and reusable by every stream, even with
 *     event-dependency and opportunistic reuse off;
 *   - aclrtBinaryGetFunction finds only the binary's own symbols, never libc's;
 *   - aclrtHostRegister refuses ranges that are not mapped read/write host memory, or that
 *     reach into a runtime window outside a live aclrtMallocHost allocation;
 *   - the stream and event limits give 207008 / 207007;
 *   - a pool block cannot be exported by IPC key;
 *   - pid counts above the documented maximum are refused before anything is read;
 *   - garbage binary, function and stream handles give 107017 as destroyed ones do; unknown
 *     policy words of aclrtMallocWithCfg fall back to the default pages; a bad error level
 *     gives 100000 with a message and leaves the last error alone.
 *
 * Needs ACLRS_TEST_KERNELS = the shared object built from tests/c/kernels/sim_kernels.c.
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acl/acl.h"
#include "check.h"

#define MIB ((size_t)1 << 20)
#define PAGE ((size_t)4096)
/* The pinned-host window of the VA layout starts at 7 TiB and spans 1 TiB. */
#define PINNED_WINDOW ((uintptr_t)7 << 40)

/* 1 when the device range holds fill_pattern(seed). */
static int dev_has_pattern(const void *dev, size_t len, unsigned seed)
{
    unsigned char *h = (unsigned char *)malloc(len);
    int ok;

    if (h == NULL) {
        return 0;
    }
    ok = aclrtMemcpy(h, len, dev, len, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS && has_pattern(h, len, seed);
    if (!ok) {
        printf("        first mismatch at %zu (byte %#x)\n", first_pattern_mismatch(h, len, seed), h[0]);
    }
    free(h);
    return ok;
}

/* Opens the gate word: the stream parked on aclrtValueWait(gate, 1) goes on. */
static int open_gate(void *gate)
{
    uint64_t one = 1;
    return CHECK_OK(aclrtMemcpy(gate, 8, &one, 8, ACL_MEMCPY_HOST_TO_DEVICE));
}

static void staged_copies(void)
{
    const size_t n = 3 * MIB + 123;
    void *dev = NULL, *gate = NULL, *pinned = NULL;
    aclrtStream s = NULL;
    int round;

    check_section("HOST_TO_BUF_TO_DEVICE stages the source at the call");
    if (!CHECK_OK(aclrtCreateStream(&s)) || !CHECK_OK(aclrtMalloc(&dev, n, ACL_MEM_MALLOC_HUGE_FIRST)) ||
        !CHECK_OK(aclrtMalloc(&gate, 64, ACL_MEM_MALLOC_NORMAL_ONLY))) {
        return;
    }
    /* Twice: the second round runs on staging memory the first one used. */
    for (round = 0; round < 2; round++) {
        CHECK_OK(aclrtMallocHost(&pinned, n));
        fill_pattern(pinned, n, 40u + (unsigned)round);
        CHECK_OK(aclrtMemset(gate, 64, 0, 64));
        CHECK_OK(aclrtValueWait(gate, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
        CHECK_OK(aclrtMemcpyAsync(dev, n, pinned, n, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, s));
        /* The copy cannot have run (its stream waits on the gate): change the source now. */
        memset(pinned, 0xEE, n);
        open_gate(gate);
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK(dev_has_pattern(dev, n, 40u + (unsigned)round));
        CHECK_OK(aclrtFreeHost(pinned));
    }

    check_section("HOST_TO_BUF_TO_DEVICE: the source may be freed at once");
    CHECK_OK(aclrtMallocHost(&pinned, n));
    fill_pattern(pinned, n, 42);
    CHECK_OK(aclrtMemset(gate, 64, 0, 64));
    CHECK_OK(aclrtValueWait(gate, 1, ACL_STREAM_WAIT_VALUE_EQ, s));
    CHECK_OK(aclrtMemcpyAsync(dev, n, pinned, n, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, s));
    CHECK_OK(aclrtFreeHost(pinned));
    open_gate(gate);
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(dev_has_pattern(dev, n, 42));

    check_section("HOST_TO_BUF_TO_DEVICE from pageable memory copies at once");
    {
        unsigned char *h = (unsigned char *)malloc(n);
        if (CHECK(h != NULL)) {
            fill_pattern(h, n, 43);
            CHECK_OK(aclrtMemcpyAsync(dev, n, h, n, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, s));
            memset(h, 0xEE, n);
            CHECK_OK(aclrtSynchronizeStream(s));
            CHECK(dev_has_pattern(dev, n, 43));
            free(h);
        }
    }
    CHECK_OK(aclrtFree(gate));
    CHECK_OK(aclrtFree(dev));
    CHECK_OK(aclrtDestroyStream(s));
}

static void pool_block_freed_by_aclrtFree(void)
{
    aclrtMemPool pool;
    aclrtStream s = NULL, s2 = NULL;
    void *p = NULL, *q = NULL, *r = NULL;
    uint32_t off = 0, on = 1;

    check_section("a pool block freed by aclrtFree is idle: any stream reuses it");
    pool = check_new_pool(64 * MIB);
    if (!CHECK(pool != NULL) || !CHECK_OK(aclrtCreateStream(&s)) || !CHECK_OK(aclrtCreateStream(&s2))) {
        return;
    }
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES, &off));
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC, &off));
    CHECK_OK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &on));
    CHECK_OK(aclrtMemPoolMallocAsync(&p, 2 * MIB, pool, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtFree(p));
    CHECK_OK(aclrtMemPoolMallocAsync(&q, 2 * MIB, pool, s));
    CHECK(q == p); /* the idle block, not fresh memory */
    CHECK_OK(aclrtMemPoolMallocAsync(&r, 2 * MIB, pool, s2));
    if (q != NULL) {
        CHECK_OK(aclrtMemsetAsync(q, 2 * MIB, 0x5A, 2 * MIB, s));
        CHECK_OK(aclrtMemPoolFreeAsync(q, s));
    }
    if (r != NULL) {
        CHECK_OK(aclrtFree(r));
        r = NULL;
        CHECK_OK(aclrtMemPoolMallocAsync(&r, 2 * MIB, pool, s2));
        CHECK_OK(aclrtMemPoolFreeAsync(r, s2));
    }
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtSynchronizeStream(s2));
    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtDestroyStream(s2));
}

static void binary_symbols(const char *lib)
{
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle f = NULL;
    static const char *const foreign[] = {"exit", "memset", "printf", "malloc", "aclrtMalloc"};
    size_t i;

    check_section("aclrtBinaryGetFunction finds only the binary's own kernels");
    if (!CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin))) {
        return;
    }
    CHECK_OK(aclrtBinaryGetFunction(bin, "add_custom", &f));
    CHECK(f != NULL);
    for (i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        f = NULL;
        printf("        %s\n", foreign[i]);
        CHECK_FAIL(aclrtBinaryGetFunction(bin, foreign[i], &f), ACL_ERROR_RT_KERNEL_LOOKUP);
        CHECK(f == NULL);
    }
    CHECK_OK(aclrtBinaryUnLoad(bin));
}

static void host_register_ranges(void)
{
    void *d = NULL, *pinned = NULL;
    unsigned char *ro, *holey, *rw;

    check_section("aclrtHostRegister: mapped read/write host memory outside the runtime windows");
    CHECK_FAIL(aclrtHostRegister((void *)0x1000, PAGE, ACL_HOST_REGISTER_MAPPED, &d), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtHostRegisterV2((void *)0x1000, PAGE, ACL_HOST_REG_MAPPED), ACL_ERROR_RT_PARAM_INVALID);
    /* Unallocated pinned-window memory, and a range straddling into the window. */
    CHECK_FAIL(aclrtHostRegister((void *)(PINNED_WINDOW + ((uintptr_t)512 << 30)), PAGE, ACL_HOST_REGISTER_MAPPED, &d),
               ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtHostRegister((void *)(PINNED_WINDOW - PAGE), 2 * PAGE, ACL_HOST_REGISTER_MAPPED, &d),
               ACL_ERROR_RT_PARAM_INVALID);
    /* Read-only memory, and a range with an unmapped page in it. */
    ro = (unsigned char *)mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    holey = (unsigned char *)mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    rw = (unsigned char *)mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!CHECK(ro != MAP_FAILED && holey != MAP_FAILED && rw != MAP_FAILED)) {
        return;
    }
    CHECK(munmap(holey + PAGE, PAGE) == 0);
    CHECK_FAIL(aclrtHostRegister(ro, 2 * PAGE, ACL_HOST_REGISTER_MAPPED, &d), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtHostRegister(holey, 3 * PAGE, ACL_HOST_REGISTER_MAPPED, &d), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtHostRegisterV2(holey, 3 * PAGE, ACL_HOST_REG_PINNED | ACL_HOST_REG_MAPPED),
               ACL_ERROR_RT_PARAM_INVALID);
    /* Nothing was registered by the refusals. */
    CHECK_FAIL(aclrtHostUnregister((void *)0x1000), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK_FAIL(aclrtHostUnregister(holey), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);
    /* What is allowed still is: mapped read/write memory, and a live pinned allocation. */
    if (CHECK_OK(aclrtHostRegister(rw, 4 * PAGE, ACL_HOST_REGISTER_MAPPED, &d))) {
        CHECK(d == rw);
        CHECK_OK(aclrtHostUnregister(rw));
    }
    if (CHECK_OK(aclrtMallocHost(&pinned, 2 * MIB))) {
        CHECK_FAIL(aclrtHostRegister(pinned, 4 * MIB, ACL_HOST_REGISTER_MAPPED, &d), ACL_ERROR_RT_PARAM_INVALID);
        if (CHECK_OK(aclrtHostRegister(pinned, 2 * MIB, ACL_HOST_REGISTER_MAPPED, &d))) {
            CHECK_OK(aclrtHostUnregister(pinned));
        }
        CHECK_OK(aclrtFreeHost(pinned));
    }
    munmap(ro, 2 * PAGE);
    munmap(holey, PAGE);
    munmap(holey + 2 * PAGE, PAGE);
    munmap(rw, 4 * PAGE);
}

static void limits(void)
{
    enum { MAX_STREAMS = 1984, MAX_EVENTS = 65536 };
    aclrtStream *streams = (aclrtStream *)calloc(MAX_STREAMS, sizeof *streams);
    aclrtEvent *events = (aclrtEvent *)calloc(MAX_EVENTS + 1, sizeof *events);
    aclError rc = ACL_SUCCESS;
    int n = 0, i;

    check_section("stream and event limits give their codes");
    if (!CHECK(streams != NULL && events != NULL)) {
        free(streams);
        free(events);
        return;
    }
    /* The default stream counts: 1983 more can be made, the next is refused. */
    while (n < MAX_STREAMS && (rc = aclrtCreateStream(&streams[n])) == ACL_SUCCESS) {
        n++;
    }
    printf("        %d streams created besides the default stream\n", n);
    CHECK(n == MAX_STREAMS - 1);
    CHECK(rc == ACL_ERROR_RT_NO_STREAM_RESOURCE);
    CHECK(aclGetRecentErrMsg() != NULL);
    for (i = 0; i < n; i++) {
        aclrtDestroyStream(streams[i]);
    }
    n = 0;
    while (n <= MAX_EVENTS && (rc = aclrtCreateEventWithFlag(&events[n], ACL_EVENT_SYNC)) == ACL_SUCCESS) {
        n++;
    }
    printf("        %d SYNC events created\n", n);
    CHECK(n == MAX_EVENTS);
    CHECK(rc == ACL_ERROR_RT_NO_EVENT_RESOURCE);
    CHECK(aclGetRecentErrMsg() != NULL);
    for (i = 0; i < n; i++) {
        aclrtDestroyEvent(events[i]);
    }
    /* Room again after the destroys. */
    if (CHECK_OK(aclrtCreateStream(&streams[0]))) {
        CHECK_OK(aclrtDestroyStream(streams[0]));
    }
    if (CHECK_OK(aclrtCreateEventWithFlag(&events[0], ACL_EVENT_SYNC))) {
        CHECK_OK(aclrtDestroyEvent(events[0]));
    }
    free(streams);
    free(events);
}

static void ipc_keys_and_counts(void)
{
    aclrtMemPool pool;
    aclrtStream s = NULL;
    void *blk = NULL, *dev = NULL;
    char key[65];
    int32_t pids[2];
    aclrtMemAccessDesc desc;

    check_section("a pool block cannot be exported by key");
    pool = check_new_pool(64 * MIB);
    if (!CHECK(pool != NULL) || !CHECK_OK(aclrtCreateStream(&s))) {
        return;
    }
    if (CHECK_OK(aclrtMemPoolMallocAsync(&blk, 2 * MIB, pool, s))) {
        CHECK_OK(aclrtSynchronizeStream(s));
        memset(key, 0, sizeof key);
        CHECK_FAIL(aclrtIpcMemGetExportKey(blk, 2 * MIB, key, sizeof key, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT),
                   ACL_ERROR_RT_PARAM_INVALID);
        CHECK(key[0] == '\0');
        CHECK_FAIL(aclrtIpcMemGetExportKey(blk, 2 * MIB, key, sizeof key,
                                           ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION),
                   ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtMemPoolFreeAsync(blk, s));
    }
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_OK(aclrtDestroyStream(s));

    check_section("pid and descriptor counts above the maximum are refused before reading");
    if (!CHECK_OK(aclrtMalloc(&dev, 4 * MIB, ACL_MEM_MALLOC_HUGE_FIRST)) ||
        !CHECK_OK(aclrtIpcMemGetExportKey(dev, 4 * MIB, key, sizeof key, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT))) {
        return;
    }
    pids[0] = (int32_t)getpid() + 1;
    pids[1] = (int32_t)getpid() + 2;
    CHECK_FAIL(aclrtIpcMemSetImportPid(key, pids, SIZE_MAX / 8), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemSetImportPid(key, pids, SIZE_MAX / 4), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtIpcMemSetImportPid(key, pids, 65536), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtMemSetPidToShareableHandle(1, pids, SIZE_MAX / 8), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtIpcMemSetImportPid(key, pids, 2));
    memset(&desc, 0, sizeof desc);
    CHECK_FAIL(aclrtMemSetAccess(dev, 4 * MIB, &desc, SIZE_MAX / 32), ACL_ERROR_INVALID_PARAM);
    CHECK_OK(aclrtIpcMemClose(key));
    CHECK_OK(aclrtFree(dev));
}

static void agreeing_codes(const char *lib)
{
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle f = NULL, dead_f = NULL;
    aclrtStream s = NULL;
    aclrtAllocatorDesc od = NULL;
    aclrtAllocator oa = NULL;
    aclrtAllocatorAllocFunc of = NULL;
    aclrtAllocatorFreeFunc ofr = NULL;
    aclrtAllocatorAllocAdviseFunc oad = NULL;
    aclrtAllocatorGetAddrFromBlockFunc oga = NULL;
    uint32_t zero = 0;
    void *p = NULL;
    aclrtPtrAttributes attr;

    check_section("garbage handles give 107017, as destroyed ones do");
    CHECK_FAIL(aclrtBinaryGetFunction((aclrtBinHandle)0x99, "add_custom", &f), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtBinaryUnLoad((aclrtBinHandle)0x99), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtLaunchKernel((aclrtFuncHandle)0x99, 1, &zero, sizeof zero, NULL), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtLaunchKernelV2((aclrtFuncHandle)0x99, 1, &zero, sizeof zero, NULL, NULL),
               ACL_ERROR_RT_INVALID_HANDLE);
    if (CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin)) && CHECK_OK(aclrtBinaryGetFunction(bin, "slow_inc", &dead_f))) {
        CHECK_OK(aclrtBinaryUnLoad(bin));
        CHECK_FAIL(aclrtBinaryUnLoad(bin), ACL_ERROR_RT_INVALID_HANDLE);
        CHECK_FAIL(aclrtBinaryGetFunction(bin, "slow_inc", &f), ACL_ERROR_RT_INVALID_HANDLE);
        CHECK_FAIL(aclrtLaunchKernel(dead_f, 1, &zero, sizeof zero, NULL), ACL_ERROR_RT_INVALID_HANDLE);
    }
    CHECK_FAIL(aclrtAllocatorGetByStream((aclrtStream)0x99, &od, &oa, &of, &ofr, &oad, &oga),
               ACL_ERROR_RT_INVALID_HANDLE);
    if (CHECK_OK(aclrtCreateStream(&s))) {
        /* A live stream without an allocator is a parameter problem, as before. */
        CHECK_FAIL(aclrtAllocatorGetByStream(s, &od, &oa, &of, &ofr, &oad, &oga), ACL_ERROR_INVALID_PARAM);
        CHECK_OK(aclrtDestroyStream(s));
        CHECK_FAIL(aclrtAllocatorGetByStream(s, &od, &oa, &of, &ofr, &oad, &oga), ACL_ERROR_RT_INVALID_HANDLE);
    }

    check_section("policy words outside the enum fall back to the default pages (D-11-01)");
    if (CHECK_OK(aclrtMallocWithCfg(&p, 4096, (aclrtMemMallocPolicy)0x42, NULL))) {
        CHECK_OK(aclrtPointerGetAttributes(p, &attr));
        CHECK(attr.pageSize == 4096);
        CHECK_OK(aclrtFree(p));
    }
    if (CHECK_OK(aclrtMallocForTaskScheduler(&p, 4 * MIB, (aclrtMemMallocPolicy)0x42, NULL))) {
        CHECK_OK(aclrtPointerGetAttributes(p, &attr));
        CHECK(attr.pageSize == 2 * MIB);
        CHECK_OK(aclrtFree(p));
    }
    CHECK_FAIL(aclrtMallocWithCfg(&p, 4096,
                                  (aclrtMemMallocPolicy)(ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH),
                                  NULL),
               ACL_ERROR_INVALID_PARAM);

    check_section("a bad error level: 100000 with a message, the last error kept");
    CHECK_FAIL(aclrtFree((void *)0x1234), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtPeekAtLastError((aclrtLastErrLevel)1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetLastError((aclrtLastErrLevel)7), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RET(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RET(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS);
}

int main(void)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");

    printf("api_contracts: contracts found broken by an adversarial run\n");
    if (!CHECK(lib != NULL) || !CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("api_contracts");
    }
    limits();
    staged_copies();
    pool_block_freed_by_aclrtFree();
    binary_symbols(lib);
    host_register_ranges();
    ipc_keys_and_counts();
    agreeing_codes(lib);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("api_contracts");
}
