/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/error_verbose.c - error details (runtime surface sheet §7):
 * aclrtErrorInfo's exact layout (static asserts), aclrtGetErrorVerbose before
 * and after a kernel faults (ACL_RT_ERROR_AICORE with the software cause) and
 * after another task fails (ACL_RT_ERROR_OTHERS), the fields it leaves alone,
 * aclrtRepairError, a device reset clearing the record, and the calls' bad
 * inputs. Kernels: ACLRS_TEST_KERNELS (tests/c/kernels/args_kernels.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

_Static_assert(sizeof(aclrtMemUceInfo) == 128, "aclrtMemUceInfo");
_Static_assert(sizeof(aclrtMemUceInfoArray) == 2568, "aclrtMemUceInfoArray");
_Static_assert(offsetof(aclrtMemUceInfoArray, memUceInfoArray) == 8, "memUceInfoArray");
_Static_assert(sizeof(aclrtErrorInfoDetail) == 2568, "aclrtErrorInfoDetail");
_Static_assert(sizeof(aclrtErrorInfo) == 2576, "aclrtErrorInfo");
_Static_assert(_Alignof(aclrtErrorInfo) == 8, "aclrtErrorInfo align");
_Static_assert(offsetof(aclrtErrorInfo, tryRepair) == 0, "tryRepair");
_Static_assert(offsetof(aclrtErrorInfo, hasDetail) == 1, "hasDetail");
_Static_assert(offsetof(aclrtErrorInfo, reserved) == 2, "reserved");
_Static_assert(offsetof(aclrtErrorInfo, errorType) == 4, "errorType");
_Static_assert(offsetof(aclrtErrorInfo, detail) == 8, "detail");
_Static_assert(ACL_RT_ERROR_OTHERS == 0xFFFF && ACL_RT_ERROR_AICORE == 3, "aclrtErrorType");
_Static_assert(ACL_RT_AICORE_ERROR_SW == 1 && ACL_RT_AICORE_ERROR_HW_LOCAL == 2, "aclrtAicoreErrorType");

static void ignore_host(void *arg)
{
    (void)arg;
}

int main(void)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtErrorInfo info;
    aclrtStream s = NULL;
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle f = NULL;
    int32_t code = 0;

    CHECK(lib != NULL);
    if (lib == NULL) {
        return check_summary("error_verbose");
    }
    CHECK_OK(aclInit(NULL));

    check_section("a device not set has no error");
    memset(&info, 0xEE, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_NO_ERROR && info.hasDetail == 0 && info.tryRepair == 0);
    CHECK(info.reserved[0] == 0xEE && info.reserved[1] == 0xEE); /* never written */

    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin));
    CHECK_OK(aclrtBinaryGetFunction(bin, "fault_kernel", &f));
    memset(&info, 0, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_NO_ERROR);

    check_section("a kernel fault");
    CHECK_OK(aclrtLaunchKernel(f, 2, &code, sizeof code, s));
    CHECK_FAIL(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
    memset(&info, 0, sizeof info);
    info.detail.uceInfo.arraySize = 777; /* past the first 4 bytes: left alone */
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_ERROR_AICORE);
    CHECK(info.hasDetail == 1 && info.tryRepair == 0);
    CHECK(info.detail.aicoreErrType == ACL_RT_AICORE_ERROR_SW);
    CHECK((info.detail.uceInfo.arraySize >> 32) == 0 && info.detail.uceInfo.arraySize != 777); /* low 4 bytes are the aicore type */
    /* The other device has no record. */
    memset(&info, 0, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(1, &info));
    CHECK(info.errorType == ACL_RT_NO_ERROR);

    check_section("repair: only NO_ERROR and MEMORY; NO_ERROR clears");
    memset(&info, 0, sizeof info);
    info.errorType = ACL_RT_ERROR_AICORE;
    CHECK_FAIL(aclrtRepairError(0, &info), ACL_ERROR_RT_PARAM_INVALID);
    info.errorType = ACL_RT_ERROR_OTHERS;
    CHECK_FAIL(aclrtRepairError(0, &info), ACL_ERROR_RT_PARAM_INVALID);
    memset(&info, 0, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_ERROR_AICORE); /* a refused repair changes nothing */
    info.errorType = ACL_RT_NO_ERROR;
    CHECK_OK(aclrtRepairError(0, &info));
    memset(&info, 0, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_NO_ERROR && info.hasDetail == 0);

    check_section("a kernel's own code, then a clean run keeps the record");
    code = 507899;
    CHECK_OK(aclrtLaunchKernel(f, 1, &code, sizeof code, s));
    CHECK_FAIL(aclrtSynchronizeStream(s), 507899);
    CHECK_OK(aclrtLaunchHostFunc(s, ignore_host, NULL));
    CHECK_OK(aclrtSynchronizeStream(s));
    memset(&info, 0, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_ERROR_AICORE && info.detail.aicoreErrType == ACL_RT_AICORE_ERROR_SW);
    info.errorType = ACL_RT_ERROR_MEMORY;
    info.detail.uceInfo.arraySize = 0;
    CHECK_OK(aclrtRepairError(0, &info)); /* nothing to repair on the sim: cleared */
    memset(&info, 0, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_NO_ERROR);

    check_section("bad inputs");
    CHECK_FAIL(aclrtGetErrorVerbose(0, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetErrorVerbose(-1, &info), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtGetErrorVerbose(2, &info), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_FAIL(aclrtRepairError(0, NULL), ACL_ERROR_INVALID_PARAM);
    memset(&info, 0, sizeof info);
    CHECK_FAIL(aclrtRepairError(1, &info), 507033); /* device 1 is not set */
    CHECK_FAIL(aclrtRepairError(7, &info), ACL_ERROR_RT_INVALID_DEVICEID);

    check_section("a device reset clears the record");
    code = 0;
    CHECK_OK(aclrtLaunchKernel(f, 1, &code, sizeof code, s));
    CHECK_FAIL(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclrtSetDevice(0));
    memset(&info, 0, sizeof info);
    CHECK_OK(aclrtGetErrorVerbose(0, &info));
    CHECK(info.errorType == ACL_RT_NO_ERROR);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("error_verbose");
}
