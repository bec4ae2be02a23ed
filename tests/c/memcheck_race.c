/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/memcheck_race.c - ACLRS_SANITIZE=race: unordered use of stream-ordered pool blocks.
 *
 *   1. a block allocated on s1 and set on s2 with no event between: an unordered-use finding
 *      (task memset); the same after s2 waits on an event recorded on s1: none;
 *   2. a block used by a kernel on its own stream after aclrtMemPoolFreeAsync: an
 *      unordered-use finding (a memset of it is refused by the API);
 *   3. a kernel on s2 whose arguments hold a pointer into a block of s1: an unordered-use
 *      finding (task kernel; the argument scan is a heuristic).
 * Without ACLRS_SANITIZE (argv[1] == "off") nothing is reported. The test harness checks the
 * JSON lines of ACLRS_SANITIZE_LOG.
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
    uint64_t n;
    uint32_t value;
} FillArgs;

int main(int argc, char **argv)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    unsigned on = !(argc > 1 && strcmp(argv[1], "off") == 0);
    aclrtStream s1 = NULL, s2 = NULL;
    aclrtEvent ev = NULL;
    aclrtMemPool pool;
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle fill_f = NULL;
    void *p = NULL, *q = NULL, *k = NULL;
    uint64_t base;

    if (lib == NULL) {
        printf("ACLRS_TEST_KERNELS is not set\n");
        return 2;
    }
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s1));
    CHECK_OK(aclrtCreateStream(&s2));
    CHECK_OK(aclrtCreateEvent(&ev));
    pool = check_new_pool(0);
    if (!CHECK(pool != NULL) || !CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin)) ||
        !CHECK_OK(aclrtBinaryGetFunction(bin, "fill", &fill_f))) {
        return check_summary("memcheck_race");
    }
    base = aclrsSanitizerFindings();

    check_section("1. a block of s1 set on s2, unordered then ordered");
    CHECK_OK(aclrtMemPoolMallocAsync(&p, 4096, pool, s1));
    printf("block1 %p\n", p);
    CHECK_OK(aclrtMemsetAsync(p, 4096, 0, 4096, s2));
    CHECK(aclrsSanitizerFindings() == base + on);
    CHECK_OK(aclrtMemPoolMallocAsync(&q, 4096, pool, s1));
    CHECK_OK(aclrtRecordEvent(ev, s1));
    CHECK_OK(aclrtStreamWaitEvent(s2, ev));
    CHECK_OK(aclrtMemsetAsync(q, 4096, 0, 4096, s2));
    CHECK(aclrsSanitizerFindings() == base + on);
    CHECK_OK(aclrtSynchronizeStream(s2));

    check_section("2. a block used after its aclrtMemPoolFreeAsync");
    CHECK_OK(aclrtMemPoolFreeAsync(q, s1));
    printf("block2 %p\n", q);
    /* A copy or memset of it is refused by the API (107000); a kernel's pointer is not. */
    CHECK_FAIL(aclrtMemsetAsync(q, 4096, 1, 4096, s1), ACL_ERROR_RT_PARAM_INVALID);
    {
        FillArgs fa;
        fa.p = (volatile uint8_t *)q;
        fa.n = 4096;
        fa.value = 2;
        CHECK_OK(aclrtLaunchKernel(fill_f, 1, &fa, sizeof fa, s1));
    }
    CHECK(aclrsSanitizerFindings() == base + 2 * on);

    check_section("3. a kernel on s2 with a pointer to a block of s1");
    CHECK_OK(aclrtMemPoolMallocAsync(&k, 8192, pool, s1));
    printf("block3 %p\n", k);
    {
        FillArgs fa;
        fa.p = (volatile uint8_t *)k;
        fa.n = 8192;
        fa.value = 3;
        CHECK_OK(aclrtLaunchKernel(fill_f, 2, &fa, sizeof fa, s2));
    }
    CHECK(aclrsSanitizerFindings() == base + 3 * on);

    CHECK_OK(aclrtSynchronizeDevice());
    CHECK_OK(aclrtMemPoolFreeAsync(p, s1));
    CHECK_OK(aclrtMemPoolFreeAsync(k, s1));
    CHECK_OK(aclrtSynchronizeDevice());
    CHECK_OK(aclrtMemPoolDestroy(pool));
    CHECK_OK(aclrtDestroyEvent(ev));
    CHECK_OK(aclrtDestroyStream(s1));
    CHECK_OK(aclrtDestroyStream(s2));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("findings %llu\n", (unsigned long long)aclrsSanitizerFindings());
    return check_summary("memcheck_race");
}
