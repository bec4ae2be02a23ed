/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/memcheck_sanitize.c - ACLRS_SANITIZE=memcheck,leak findings, and the same program
 * with the sanitizer off.
 *
 * With ACLRS_SANITIZE set (the test harness reads the findings' JSON lines from
 * ACLRS_SANITIZE_LOG and checks their fields):
 *   1. a kernel writing 1 byte past a 256-byte buffer: the synchronisation succeeds and
 *      reports an out-of-bounds finding (the redzone changed);
 *   2. a kernel writing 8 KiB from a 256-byte buffer reaches the guard page: 507015, an
 *      out-of-bounds finding at once;
 *   3. a kernel writing a freed buffer: 507015, a use-after-free finding;
 *   4. a 64 MiB overrun: 507015 (a finding either way);
 *   4b. a pool block (aclrtMemPoolMallocAsync, 256 bytes): a kernel writing 1 byte past it is
 *      reported at the synchronisation (its redzone), one writing 8 KiB from it reaches its guard
 *      page (507015, reported at once);
 *   5. at aclrtResetDevice, one leak finding each for: a buffer still allocated, a 2 MiB
 *      buffer with an IPC key still exported (the buffer, and the key), a pool block never
 *      freed, a physical handle never freed and a shareable handle still exported from it;
 *   6. pinned host memory still allocated at aclFinalize: a leak finding.
 * Without it (argv[1] == "off"): 1, 3 and 4b go unnoticed, 2 stays inside the slab page, and the
 * 64 MiB overrun still fails its launch with 507015; no finding.
 *
 * Needs ACLRS_TEST_KERNELS = the shared object built from tests/c/kernels/memcheck_kernels.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_sim.h"
#include "check.h"

typedef struct {
    volatile uint8_t *p;
    uint64_t off;
    uint64_t len;
    uint32_t value;
} PokeArgs;

static aclrtFuncHandle poke_f;
static aclrtStream s;

static aclError poke(void *p, uint64_t off, uint64_t len)
{
    PokeArgs pa;
    aclError r;
    pa.p = (volatile uint8_t *)p;
    pa.off = off;
    pa.len = len;
    pa.value = 0x77;
    r = aclrtLaunchKernel(poke_f, 1, &pa, sizeof pa, s);
    if (r != ACL_SUCCESS) {
        return r;
    }
    r = aclrtSynchronizeStream(s);
    if (r != ACL_SUCCESS) {
        const char *m = aclGetRecentErrMsg();
        printf("  (synchronize: %d: %s)\n", (int)r, m != NULL ? m : "");
    }
    return r;
}

int main(int argc, char **argv)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    int on = !(argc > 1 && strcmp(argv[1], "off") == 0);
    aclrtBinHandle bin = NULL;
    void *a = NULL, *b = NULL, *c = NULL, *leak = NULL, *host = NULL, *ipc = NULL, *blk = NULL, *pb = NULL;
    aclrtMemPool pool = NULL;
    aclrtDrvMemHandle ph = NULL;
    aclrtPhysicalMemProp prop;
    uint64_t base, shareable = 0;
    char key[65];

    if (lib == NULL) {
        printf("ACLRS_TEST_KERNELS is not set\n");
        return 2;
    }
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s));
    if (!CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin)) || !CHECK_OK(aclrtBinaryGetFunction(bin, "poke", &poke_f))) {
        return check_summary("memcheck_sanitize");
    }
    base = aclrsSanitizerFindings();
    printf("sanitizer %s\n", on ? "on" : "off");

    check_section("1. one byte past a 256-byte buffer");
    CHECK_OK(aclrtMalloc(&a, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("buffer1 %p\n", a);
    CHECK_OK(poke(a, 256, 1));
    CHECK(aclrsSanitizerFindings() == base + (on ? 1u : 0u));
    CHECK_OK(aclrtFree(a));
    /* Reported once, not again at the free. */
    CHECK(aclrsSanitizerFindings() == base + (on ? 1u : 0u));

    check_section("2. 8 KiB from a 256-byte buffer");
    CHECK_OK(aclrtMalloc(&b, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("buffer2 %p\n", b);
    CHECK_RET(poke(b, 0, 8192), on ? ACL_ERROR_RT_AICORE_EXCEPTION : ACL_SUCCESS);
    CHECK(aclrsSanitizerFindings() == base + (on ? 2u : 0u));
    CHECK_OK(aclrtFree(b));

    check_section("3. a kernel writes a freed buffer");
    CHECK_OK(aclrtMalloc(&c, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("buffer3 %p\n", c);
    CHECK_OK(aclrtFree(c));
    CHECK_RET(poke(c, 16, 4), on ? ACL_ERROR_RT_AICORE_EXCEPTION : ACL_SUCCESS);
    CHECK(aclrsSanitizerFindings() == base + (on ? 3u : 0u));
    if (on) {
        /* The quarantine keeps it out of reach of the API too. */
        CHECK_FAIL(aclrtFree(c), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtMemset(c, 256, 0, 256), ACL_ERROR_RT_PARAM_INVALID);
    }

    check_section("4. a 64 MiB overrun fails the launch either way");
    CHECK_OK(aclrtMalloc(&a, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_RET(poke(a, 0, 64ull << 20), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(aclrsSanitizerFindings() == base + (on ? 4u : 0u));
    CHECK_OK(aclrtFree(a));

    check_section("4b. a pool block's redzone and guard page");
    pool = check_new_pool(64u << 20);
    if (CHECK(pool != NULL) && CHECK_OK(aclrtMemPoolMallocAsync(&pb, 256, pool, s))) {
        printf("poolblock %p\n", pb);
        CHECK_OK(poke(pb, 256, 1));
        CHECK(aclrsSanitizerFindings() == base + (on ? 5u : 0u));
        CHECK_RET(poke(pb, 0, 8192), on ? ACL_ERROR_RT_AICORE_EXCEPTION : ACL_SUCCESS);
        CHECK(aclrsSanitizerFindings() == base + (on ? 6u : 0u));
        CHECK_OK(aclrtMemPoolFreeAsync(pb, s));
        CHECK_OK(aclrtSynchronizeStream(s));
        /* Reported once: not again at its free. */
        CHECK(aclrsSanitizerFindings() == base + (on ? 6u : 0u));
    }
    CHECK_OK(aclrtMemPoolDestroy(pool));

    check_section("5. leaks at aclrtResetDevice");
    CHECK_OK(aclrtMalloc(&leak, 1000, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("buffer5 %p\n", leak);
    /* An exported buffer: the buffer and its key are both still live. */
    CHECK_OK(aclrtMalloc(&ipc, 2u << 20, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("ipc5 %p\n", ipc);
    memset(key, 0, sizeof key);
    CHECK_OK(aclrtIpcMemGetExportKey(ipc, 2u << 20, key, sizeof key, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT));
    printf("key5 %s\n", key);
    /* A pool block never freed. */
    pool = check_new_pool(64u << 20);
    if (CHECK(pool != NULL) && CHECK_OK(aclrtMemPoolMallocAsync(&blk, 3000, pool, s))) {
        CHECK_OK(aclrtSynchronizeStream(s));
    }
    printf("block5 %p\n", blk);
    /* A physical handle never freed, exported as a shareable handle. */
    memset(&prop, 0, sizeof prop);
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CHECK_OK(aclrtMallocPhysical(&ph, 2u << 20, &prop, 0));
    CHECK_OK(aclrtMemExportToShareableHandle(ph, ACL_MEM_HANDLE_TYPE_NONE, 0, &shareable));
    printf("shareable5 %016llx\n", (unsigned long long)shareable);
    CHECK_OK(aclrtMallocHost(&host, 4096));
    printf("host6 %p\n", host);
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK(aclrsSanitizerFindings() == base + (on ? 6u : 0u));
    CHECK_OK(aclrtResetDevice(0));
    CHECK(aclrsSanitizerFindings() == base + (on ? 12u : 0u));
    CHECK_OK(aclFinalize());
    /* 6. the pinned buffer still allocated at aclFinalize. */
    CHECK(aclrsSanitizerFindings() == base + (on ? 13u : 0u));
    printf("findings %llu\n", (unsigned long long)aclrsSanitizerFindings());
    return check_summary("memcheck_sanitize");
}
