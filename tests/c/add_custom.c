/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/add_custom.c - the first example of the seed "stream-ordered memory
 * allocation" made whole: a kernel library (an add_custom kernel built from C,
 * path in ACLRS_TEST_KERNELS), aclrtMalloc, aclrtMemcpyAsync of the argument
 * block, aclrtLaunchKernelV2, synchronise, check the result, free.
 */
#include <stdint.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "check.h"

#define N 4096

typedef struct {
    float *x;
    float *y;
    float *z;
    uint32_t n;
} ArgsInfo;

int main(void)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    static float hx[N], hy[N], hz[N];
    aclrtStream stream1 = NULL;
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle funcHandle = NULL;
    void *ptr0 = NULL;
    float *dx = NULL, *dy = NULL, *dz = NULL;
    ArgsInfo usrArgs;
    uint32_t blockDim = 32;
    int i, bad = 0;

    for (i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = 0.5f * (float)i;
    }
    CHECK(lib != NULL);
    if (lib == NULL) {
        return check_summary("add_custom");
    }
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&stream1));
    CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin));
    CHECK_OK(aclrtBinaryGetFunction(bin, "add_custom", &funcHandle));

    CHECK_OK(aclrtMalloc((void **)&dx, sizeof hx, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc((void **)&dy, sizeof hy, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc((void **)&dz, sizeof hz, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemcpy(dx, sizeof hx, hx, sizeof hx, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(dy, sizeof hy, hy, sizeof hy, ACL_MEMCPY_HOST_TO_DEVICE));

    /* The seed's flow: the argument block goes to device memory by an async
     * copy, and the launch gets its own copy of the same bytes. */
    CHECK_OK(aclrtMalloc(&ptr0, sizeof(ArgsInfo), ACL_MEM_MALLOC_HUGE_FIRST));
    usrArgs.x = dx;
    usrArgs.y = dy;
    usrArgs.z = dz;
    usrArgs.n = N;
    CHECK_OK(aclrtMemcpyAsync(ptr0, sizeof(ArgsInfo), (void *)&usrArgs, sizeof(ArgsInfo),
                              ACL_MEMCPY_HOST_TO_DEVICE, stream1));
    CHECK_OK(aclrtLaunchKernelV2(funcHandle, blockDim, (void *)&usrArgs, sizeof(ArgsInfo), NULL, stream1));
    CHECK_OK(aclrtSynchronizeStream(stream1));
    CHECK_OK(aclrtFree(ptr0));

    CHECK_OK(aclrtMemcpy(hz, sizeof hz, dz, sizeof hz, ACL_MEMCPY_DEVICE_TO_HOST));
    for (i = 0; i < N; i++) {
        if (hz[i] != hx[i] + hy[i]) {
            bad++;
        }
    }
    CHECK(bad == 0);
    CHECK_OK(aclrtSynchronizeStream(stream1));

    CHECK_OK(aclrtFree(dx));
    CHECK_OK(aclrtFree(dy));
    CHECK_OK(aclrtFree(dz));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK_OK(aclrtDestroyStream(stream1));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("add_custom");
}
