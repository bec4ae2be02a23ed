/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/binary_data.c - kernel binaries beyond files (runtime surface sheet
 * §10): aclrtBinaryLoadFromData with the bytes of a kernel library (a host
 * shared object on the software NPU) and its load options,
 * aclrtCreateBinary/aclrtBinaryLoad/aclrtDestroyBinary, AI CPU binaries
 * (cpuKernelMode 2) with aclrtRegisterCpuFunc, the function queries, and
 * every call's bad inputs. Kernels: ACLRS_TEST_KERNELS
 * (tests/c/kernels/args_kernels.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n;

    if (f == NULL) {
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n);
        if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)n;
    }
    fclose(f);
    return buf;
}

/* Launches mark_blocks over `blocks` blocks and checks every block ran. */
static int runs(aclrtFuncHandle f, aclrtStream s, uint32_t blocks)
{
    int32_t *dout = NULL, host[16];
    uint32_t i;
    int ok = 1;

    if (!CHECK_OK(aclrtMalloc((void **)&dout, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST))) {
        return 0;
    }
    CHECK_OK(aclrtMemset(dout, sizeof host, 0, sizeof host));
    CHECK_OK(aclrtLaunchKernel(f, blocks, &dout, sizeof dout, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtMemcpy(host, sizeof host, dout, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    for (i = 0; i < 16; i++) {
        if (host[i] != (i < blocks ? (int32_t)blocks : 0)) {
            ok = 0;
        }
    }
    CHECK_OK(aclrtFree(dout));
    return CHECK(ok);
}

int main(void)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    unsigned char *bytes;
    size_t len = 0, n = 0;
    aclrtStream s = NULL;
    aclrtBinHandle b1 = NULL, b2 = NULL, b3 = NULL, cpu = NULL, got = NULL;
    aclrtFuncHandle f1 = NULL, f2 = NULL, f3 = NULL, fc = NULL, dummy = NULL;
    aclrtBinary desc;
    aclrtBinaryLoadOption opt[2];
    aclrtBinaryLoadOptions opts;
    char name[32];
    int64_t attr = -1;
    void *p = NULL;
    size_t sz = 0, off = 0;
    unsigned char junk[64];

    CHECK(lib != NULL);
    bytes = lib != NULL ? read_all(lib, &len) : NULL;
    CHECK(bytes != NULL && len > 4);
    if (bytes == NULL) {
        return check_summary("binary_data");
    }
    CHECK_OK(aclInit(NULL));

    check_section("loading from bytes needs no device; kernels run");
    CHECK_OK(aclrtBinaryLoadFromData(bytes, len, NULL, &b1));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtBinaryGetFunction(b1, "mark_blocks", &f1));
    runs(f1, s, 5);
    CHECK_FAIL(aclrtBinaryGetFunction(b1, "no_such_kernel", &dummy), 507027);

    check_section("options");
    memset(opt, 0, sizeof opt);
    opts.options = opt;
    opts.numOpt = 2;
    opt[0].type = ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD;
    opt[0].value.isLazyLoad = 1;
    opt[1].type = ACL_RT_BINARY_LOAD_OPT_MAGIC;
    opt[1].value.magic = ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE;
    CHECK_OK(aclrtBinaryLoadFromData(bytes, len, &opts, &b2));
    CHECK(b2 != b1);
    CHECK_OK(aclrtBinaryGetFunction(b2, "mark_blocks", &f2));
    /* Two loads of the same bytes are two binaries: unloading one keeps the other. */
    CHECK_OK(aclrtBinaryUnLoad(b1));
    CHECK_FAIL(aclrtLaunchKernel(f1, 1, &p, sizeof p, s), ACL_ERROR_RT_INVALID_HANDLE);
    runs(f2, s, 3);
    opt[1].value.magic = 0x12345678u;
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, len, &opts, &b3), ACL_ERROR_RT_PARAM_INVALID);
    opt[1].value.magic = ACL_RT_BINARY_MAGIC_ELF_AICORE;
    opt[0].value.isLazyLoad = 2;
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, len, &opts, &b3), ACL_ERROR_RT_PARAM_INVALID);
    opts.numOpt = 1;
    opt[0].type = ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE;
    opt[0].value.cpuKernelMode = 1; /* files only */
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, len, &opts, &b3), ACL_ERROR_RT_PARAM_INVALID);
    opt[0].type = (aclrtBinaryLoadOptionType)9;
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, len, &opts, &b3), ACL_ERROR_RT_PARAM_INVALID);
    opts.options = NULL;
    opts.numOpt = 0;
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, len, &opts, &b3), ACL_ERROR_RT_PARAM_INVALID);

    check_section("AI CPU binaries: kernels come from aclrtRegisterCpuFunc");
    opts.options = opt;
    opts.numOpt = 1;
    opt[0].type = ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE;
    opt[0].value.cpuKernelMode = 2;
    CHECK_OK(aclrtBinaryLoadFromData(bytes, len, &opts, &cpu));
    CHECK_OK(aclrtRegisterCpuFunc(cpu, "mark_blocks", "MarkBlocks", &fc));
    runs(fc, s, 2);
    CHECK_OK(aclrtGetFunctionName(fc, sizeof name, name));
    CHECK(strcmp(name, "MarkBlocks") == 0);
    CHECK_OK(aclrtGetFunctionAttribute(fc, ACL_FUNC_ATTR_KERNEL_TYPE, &attr));
    CHECK(attr == ACL_KERNEL_TYPE_AICPU);
    CHECK_FAIL(aclrtGetFunctionAttribute(fc, ACL_FUNC_ATTR_KERNEL_RATIO, &attr), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFunctionGetParamCount(fc, &n), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtRegisterCpuFunc(cpu, "no_such_entry", "X", &dummy), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtRegisterCpuFunc(b2, "mark_blocks", "X", &dummy), ACL_ERROR_RT_PARAM_INVALID); /* not AI CPU */

    check_section("aclrtCreateBinary + aclrtBinaryLoad");
    desc = aclrtCreateBinary(bytes, len);
    CHECK(desc != NULL);
    CHECK_OK(aclrtBinaryLoad(desc, &b3));
    CHECK_OK(aclrtDestroyBinary(desc)); /* the loaded binary stays */
    CHECK_OK(aclrtBinaryGetFunction(b3, "mark_blocks", &f3));
    runs(f3, s, 7);
    CHECK_FAIL(aclrtBinaryLoad(desc, &got), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtDestroyBinary(desc), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK(aclrtCreateBinary(NULL, 8) == NULL);
    desc = aclrtCreateBinary(bytes, 0);
    CHECK(desc != NULL);
    CHECK_FAIL(aclrtBinaryLoad(desc, &got), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtDestroyBinary(desc));

    check_section("function queries");
    CHECK_OK(aclrtFunctionGetBinary(f3, &got));
    CHECK(got == b3);
    CHECK_OK(aclrtGetFunctionName(f3, 12, name)); /* exactly strlen + 1 */
    CHECK(strcmp(name, "mark_blocks") == 0);
    CHECK_FAIL(aclrtGetFunctionName(f3, 11, name), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtGetFunctionAttribute(f3, ACL_FUNC_ATTR_KERNEL_TYPE, &attr));
    CHECK(attr == ACL_KERNEL_TYPE_AICORE);
    CHECK_OK(aclrtGetFunctionAttribute(f3, ACL_FUNC_ATTR_KERNEL_SCHED_MODE, &attr));
    CHECK(attr == 0);
    CHECK_FAIL(aclrtGetFunctionAttribute(f3, (aclrtFuncAttribute)4, &attr), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFunctionGetParamCount(f3, &n), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFunctionGetParamInfo(f3, 0, &off, &sz), ACL_ERROR_RT_PARAM_INVALID);
    sz = 99;
    CHECK_OK(aclrtFunctionGetAvailDynUbufPerBlock(f3, 0, &sz));
    CHECK(sz == 0);
    CHECK_FAIL(aclrtBinaryGetFunctionByEntry(b3, 1, &dummy), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetFuncBySymbol(&len, &dummy), 107044);
    CHECK_FAIL(aclrtBinaryGetDevAddress(b3, &p, &sz), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtBinaryGetGlobal(b3, "x", &p, &sz), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtGetFunctionAddr(f3, &p, &p), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtGetFunctionSize(f3, &sz, &sz), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);

    check_section("bad inputs");
    memset(junk, 0x5A, sizeof junk);
    CHECK_FAIL(aclrtBinaryLoadFromData(NULL, len, NULL, &got), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, len, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, 0, NULL, &got), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtBinaryLoadFromData(junk, sizeof junk, NULL, &got), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtBinaryLoadFromData(bytes, 64, NULL, &got), ACL_ERROR_RT_PARAM_INVALID); /* a cut ELF */
    CHECK_FAIL(aclrtDestroyBinary(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtBinaryLoad(NULL, &got), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtRegisterCpuFunc(NULL, "a", "b", &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtRegisterCpuFunc(cpu, NULL, "b", &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtRegisterCpuFunc(cpu, "a", NULL, &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtRegisterCpuFunc(cpu, "a", "b", NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFunctionGetBinary(NULL, &got), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtFunctionGetBinary(f3, NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtGetFunctionName(f3, 32, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetFunctionAttribute(NULL, ACL_FUNC_ATTR_KERNEL_TYPE, &attr), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetFunctionAttribute(f3, ACL_FUNC_ATTR_KERNEL_TYPE, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFunctionGetParamCount(NULL, &n), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFunctionGetParamCount(f3, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFunctionGetParamInfo(f3, 0, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFunctionGetAvailDynUbufPerBlock(f3, 1, &sz), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtFunctionGetAvailDynUbufPerBlock(NULL, 0, &sz), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetFuncBySymbol(NULL, &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtBinaryGetFunctionByEntry(NULL, 1, &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtBinaryGetDevAddress(b3, NULL, &sz), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtBinaryGetGlobal(b3, "x", NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtBinarySetExceptionCallback(b3, NULL, NULL), ACL_ERROR_INVALID_PARAM);

    check_section("unloading invalidates the functions");
    CHECK_OK(aclrtBinaryUnLoad(b3));
    CHECK_FAIL(aclrtGetFunctionName(f3, sizeof name, name), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtFunctionGetBinary(f3, &got), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_OK(aclrtBinaryUnLoad(b2));
    CHECK_OK(aclrtBinaryUnLoad(cpu));
    CHECK_FAIL(aclrtRegisterCpuFunc(cpu, "mark_blocks", "X", &dummy), ACL_ERROR_RT_PARAM_INVALID);

    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    free(bytes);
    return check_summary("binary_data");
}
