/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/res_limits.c - resource limits (runtime surface sheet §2): process
 * limits per device with the SoC profile's core counts as defaults, stream
 * limits, the thread's bound stream and the precedence stream > process >
 * hardware, resets, a worker thread seeing the process limit, a launch whose
 * block count exceeds the limit (advisory: every block runs), and every
 * call's bad inputs. argv[1], argv[2]: the profile's cube and vector core
 * counts. Kernels: ACLRS_TEST_KERNELS (tests/c/kernels/args_kernels.c).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "check.h"

static uint32_t worker_seen = 0;
static aclError worker_ret = -1;

static void *worker(void *arg)
{
    (void)arg;
    if (aclrtSetDevice(0) == ACL_SUCCESS) {
        worker_ret = aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, &worker_seen);
        (void)aclrtResetDevice(0);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    uint32_t cube, vec, v = 0;
    aclrtStream s = NULL, s2 = NULL;
    int64_t cap = 0;
    pthread_t t;

    CHECK(argc == 3 && lib != NULL);
    if (argc != 3 || lib == NULL) {
        return check_summary("res_limits");
    }
    cube = (uint32_t)atoi(argv[1]);
    vec = (uint32_t)atoi(argv[2]);
    CHECK_OK(aclInit(NULL));

    check_section("the device must be set first");
    CHECK_FAIL(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &v), 507033);
    CHECK_FAIL(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 1), 507033);
    CHECK_FAIL(aclrtResetDeviceResLimit(0), 507033);
    CHECK_FAIL(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtCreateStream(&s2));

    check_section("defaults are the profile's core counts");
    CHECK_OK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == vec);
    CHECK_OK(aclrtGetStreamResLimit(s, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == vec);

    check_section("process limits: the last set wins, tiling's core count follows");
    CHECK_OK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 4));
    CHECK_OK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 8));
    CHECK_OK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 8);
    CHECK_OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_AI_CORE_NUM, &cap));
    CHECK(cap == 8);
    CHECK_OK(aclrtGetStreamResLimit(s, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 8);
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 8);
    CHECK_OK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, 1));
    CHECK_OK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, 0)); /* 0 is accepted */
    CHECK_OK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, vec));
    CHECK_OK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, 1));
    CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(worker_ret == ACL_SUCCESS && worker_seen == 1); /* per process, per device */

    check_section("stream limits over process limits, bound to a thread");
    CHECK_OK(aclrtSetStreamResLimit(s, ACL_RT_DEV_RES_CUBE_CORE, cube)); /* may exceed the process limit */
    CHECK_OK(aclrtGetStreamResLimit(s, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtGetStreamResLimit(s, ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == 1); /* not set on the stream: the process value */
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 8); /* not bound yet */
    CHECK_OK(aclrtUseStreamResInCurrentThread(s));
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == 1);
    CHECK_OK(aclrtUnuseStreamResInCurrentThread(s2)); /* not the bound one: nothing happens */
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtUseStreamResInCurrentThread(s2)); /* the last bind wins; s2 has no limit */
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 8);
    CHECK_OK(aclrtUseStreamResInCurrentThread(s));
    CHECK_OK(aclrtUnuseStreamResInCurrentThread(s));
    CHECK_OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 8);
    CHECK_OK(aclrtSetStreamResLimit(NULL, ACL_RT_DEV_RES_VECTOR_CORE, 2)); /* the default stream */
    CHECK_OK(aclrtGetStreamResLimit(NULL, ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == 2);
    CHECK_OK(aclrtResetStreamResLimit(NULL));
    CHECK_OK(aclrtGetStreamResLimit(NULL, ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == 1);
    CHECK_OK(aclrtResetStreamResLimit(s));
    CHECK_OK(aclrtGetStreamResLimit(s, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 8);

    check_section("a launch past the limit runs every block (limits are advisory)");
    {
        aclrtBinHandle bin = NULL;
        aclrtFuncHandle f = NULL;
        int32_t *dout = NULL, host[64];
        uint32_t blocks = cube + 3, i, ok = 1;
        if (CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin)) && CHECK_OK(aclrtBinaryGetFunction(bin, "mark_blocks", &f)) &&
            CHECK_OK(aclrtMalloc((void **)&dout, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST))) {
            CHECK_OK(aclrtMemset(dout, sizeof host, 0, sizeof host));
            CHECK_OK(aclrtLaunchKernel(f, blocks, &dout, sizeof dout, s));
            CHECK_OK(aclrtSynchronizeStream(s));
            CHECK_OK(aclrtMemcpy(host, sizeof host, dout, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
            for (i = 0; i < 64; i++) {
                if (host[i] != (i < blocks ? (int32_t)blocks : 0)) {
                    ok = 0;
                }
            }
            CHECK(ok);
            CHECK_OK(aclrtFree(dout));
            CHECK_OK(aclrtBinaryUnLoad(bin));
        }
    }

    check_section("resets restore the defaults");
    CHECK_OK(aclrtResetDeviceResLimit(0));
    CHECK_OK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == vec);
    CHECK_OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_AI_CORE_NUM, &cap));
    CHECK(cap == (int64_t)cube);

    check_section("bad inputs change nothing");
    CHECK_OK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 5));
    CHECK_FAIL(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, cube + 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetDeviceResLimit(0, (aclrtDevResLimitType)2, 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetDeviceResLimit(-1, ACL_RT_DEV_RES_CUBE_CORE, 1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtSetDeviceResLimit(64, ACL_RT_DEV_RES_CUBE_CORE, 1), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_OK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == 5);
    CHECK_FAIL(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetDeviceResLimit(0, (aclrtDevResLimitType)7, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetDeviceResLimit(9, ACL_RT_DEV_RES_CUBE_CORE, &v), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtResetDeviceResLimit(-3), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtGetStreamResLimit(s, ACL_RT_DEV_RES_CUBE_CORE, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetStreamResLimit(s, (aclrtDevResLimitType)2, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetStreamResLimit(s, ACL_RT_DEV_RES_VECTOR_CORE, vec + 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtSetStreamResLimit(s, (aclrtDevResLimitType)2, 1), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetStreamResLimit((aclrtStream)(uintptr_t)0x77, ACL_RT_DEV_RES_CUBE_CORE, &v),
               ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtResetStreamResLimit((aclrtStream)(uintptr_t)0x77), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtUseStreamResInCurrentThread((aclrtStream)(uintptr_t)0x77), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetResInCurrentThread((aclrtDevResLimitType)2, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtGetStreamResLimit(s, ACL_RT_DEV_RES_VECTOR_CORE, &v));
    CHECK(v == vec);

    check_section("a device reset forgets the limits");
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtDestroyStream(s2));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_FAIL(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &v), 507033);
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("res_limits");
}
