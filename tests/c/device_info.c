/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/device_info.c - device information and capabilities (runtime
 * surface sheet §4.4-4.6): aclrtGetDeviceInfo for every aclrtDevAttr,
 * aclrtGetDeviceCapability, aclGetDeviceCapability, with the values of the
 * SoC profile given on the command line, and every call's bad inputs.
 * argv: cube vector aicpu l2_bytes npu_arch is_950 (the README's table).
 */
#include <stdint.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "check.h"

int main(int argc, char **argv)
{
    int64_t v = -1, cube, vec, aicpu, l2, arch, i;
    int is950;
    int32_t f = -1;
    size_t free_b = 0, total_b = 0;
    static const aclrtDevAttr simt[] = {
        ACL_DEV_ATTR_WARP_SIZE,       ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE, ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE,
        ACL_DEV_ATTR_MAX_GRID_DIM_X,  ACL_DEV_ATTR_MAX_GRID_DIM_Y,             ACL_DEV_ATTR_MAX_GRID_DIM_Z,
        ACL_DEV_ATTR_MAX_BLOCK_PER_GRID, ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK,   ACL_DEV_ATTR_MAX_BLOCK_DIM_X,
        ACL_DEV_ATTR_MAX_BLOCK_DIM_Y, ACL_DEV_ATTR_MAX_BLOCK_DIM_Z};
    static const aclrtDevAttr zero[] = {ACL_DEV_ATTR_SMP_ID,        ACL_DEV_ATTR_SUPER_POD_DEVICE_ID,
                                        ACL_DEV_ATTR_SUPER_POD_SERVER_ID, ACL_DEV_ATTR_SUPER_POD_ID,
                                        ACL_DEV_ATTR_MAINBOARD_ID,  ACL_DEV_ATTR_IS_VIRTUAL};

    CHECK(argc == 7);
    if (argc != 7) {
        return check_summary("device_info");
    }
    cube = atoll(argv[1]);
    vec = atoll(argv[2]);
    aicpu = atoll(argv[3]);
    l2 = atoll(argv[4]);
    arch = atoll(argv[5]);
    is950 = atoi(argv[6]);
    CHECK_OK(aclInit(NULL));

    check_section("aclrtGetDeviceInfo needs no device set");
    CHECK_OK(aclrtGetDeviceInfo(1, ACL_DEV_ATTR_AICORE_CORE_NUM, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_CUBE_CORE_NUM, &v));
    CHECK(v == cube);
    CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_VECTOR_CORE_NUM, &v));
    CHECK(v == vec);
    CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_AICPU_CORE_NUM, &v));
    CHECK(v == aicpu);
    CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_L2_CACHE_SIZE, &v));
    CHECK(v == l2);
    CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_NPU_ARCH, &v));
    CHECK(v == arch);
    CHECK_OK(aclrtGetDeviceInfo(1, ACL_DEV_ATTR_PHY_CHIP_ID, &v));
    CHECK(v == 1);
    for (i = 0; i < (int64_t)(sizeof zero / sizeof zero[0]); i++) {
        v = -1;
        CHECK_OK(aclrtGetDeviceInfo(0, zero[i], &v));
        CHECK(v == 0);
    }
    for (i = 0; i < (int64_t)(sizeof simt / sizeof simt[0]); i++) {
        v = -1;
        CHECK_OK(aclrtGetDeviceInfo(0, simt[i], &v));
        CHECK(is950 ? v > 0 : v == 0);
    }
    CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_LOCAL_MEM_PER_VECTOR_CORE, &v));
    CHECK(is950 ? v == 256 * 1024 : v == 0);
    if (is950) {
        CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_HD_CONNECT_TYPE, &v));
        CHECK(v == ACL_HOST_DEVICE_CONNECT_TYPE_PCIE);
        CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_DEVICE_FORM_FACTOR, &v));
        CHECK(v == ACL_DEVICE_FORM_FACTOR_PCIE_CARD);
        CHECK_FAIL(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_CUST_OP_PRIVILEGE, &v), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    } else {
        CHECK_FAIL(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_HD_CONNECT_TYPE, &v), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        CHECK_FAIL(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_DEVICE_FORM_FACTOR, &v), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_CUST_OP_PRIVILEGE, &v));
        CHECK(v == 0);
    }

    check_section("total memory is what aclrtGetMemInfo reports");
    CHECK_OK(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE, &v));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b));
    CHECK(v > 0 && (uint64_t)v >= (uint64_t)total_b);

    check_section("capabilities");
    CHECK_OK(aclrtGetDeviceCapability(0, ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV, &f));
    CHECK(f == ACL_DEV_FEATURE_NOT_SUPPORT);
    f = -1;
    CHECK_OK(aclrtGetDeviceCapability(1, ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV, &f));
    CHECK(f == ACL_DEV_FEATURE_NOT_SUPPORT);
    CHECK_OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_AI_CORE_NUM, &v));
    CHECK(v == cube);
    CHECK_OK(aclGetDeviceCapability(1, ACL_DEVICE_INFO_VECTOR_CORE_NUM, &v));
    CHECK(v == vec);
    CHECK_OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_L2_SIZE, &v));
    CHECK(v == l2);

    check_section("bad inputs");
    v = 12345;
    CHECK_FAIL(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_NPU_ARCH, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetDeviceInfo(2, ACL_DEV_ATTR_NPU_ARCH, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetDeviceInfo(0, (aclrtDevAttr)0, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetDeviceInfo(0, (aclrtDevAttr)999, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(v == 12345);
    CHECK_FAIL(aclrtGetDeviceCapability(0, ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetDeviceCapability(0, (aclrtDevFeatureType)22, &f), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetDeviceCapability(0, (aclrtDevFeatureType)-1, &f), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetDeviceCapability(5, ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV, &f), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclGetDeviceCapability(0, ACL_DEVICE_INFO_L2_SIZE, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclGetDeviceCapability(2, ACL_DEVICE_INFO_L2_SIZE, &v), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclGetDeviceCapability(0, ACL_DEVICE_INFO_UNDEFINED, &v), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclGetDeviceCapability(0, (aclDeviceInfo)3, &v), ACL_ERROR_INVALID_PARAM);

    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("device_info");
}
