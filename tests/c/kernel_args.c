/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/kernel_args.c - the kernel-argument builder (aclrtKernelArgs*) and
 * aclrtLaunchKernelWithConfig, from the runtime surface sheet §1: the byte
 * layout a kernel sees (checked byte for byte by a kernel that echoes its
 * argument copy), placeholders pointing into the copy, the state machine
 * (append after a placeholder buffer or Finalize, update and re-finalize),
 * lists in the caller's memory, the launch config's checks, the sibling
 * launches of §1.6, and every call's bad inputs. Kernels: ACLRS_TEST_KERNELS
 * (tests/c/kernels/args_kernels.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

#define OUT_BYTES 512

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Launches `args` on echo_args and copies what the kernel saw into host. */
static int echo(aclrtFuncHandle f, aclrtStream s, aclrtArgsHandle args, void *dout, uint8_t *host)
{
    memset(host, 0, OUT_BYTES);
    if (!CHECK_OK(aclrtMemset(dout, OUT_BYTES, 0, OUT_BYTES))) {
        return 0;
    }
    if (!CHECK_OK(aclrtLaunchKernelWithConfig(f, 1, s, NULL, args, NULL))) {
        return 0;
    }
    return CHECK_OK(aclrtSynchronizeStream(s)) &&
           CHECK_OK(aclrtMemcpy(host, OUT_BYTES, dout, OUT_BYTES, ACL_MEMCPY_DEVICE_TO_HOST));
}

int main(void)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtStream s = NULL;
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle echo_f = NULL, deref_f = NULL;
    aclrtArgsHandle args = NULL, again = NULL;
    aclrtParamHandle p_out, p_len, p_val, ph_a, ph_b, stale;
    void *dout = NULL, *buf_a = NULL, *buf_b = NULL, *dummy = NULL;
    uint8_t host[OUT_BYTES];
    uint64_t len = 52, base;
    uint32_t value = 0xA1B2C3D4u;
    int32_t i32;
    size_t mem = 0, actual = 0;

    CHECK(lib != NULL);
    if (lib == NULL) {
        return check_summary("kernel_args");
    }
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin));
    CHECK_OK(aclrtBinaryGetFunction(bin, "echo_args", &echo_f));
    CHECK_OK(aclrtBinaryGetFunction(bin, "deref2", &deref_f));
    CHECK_OK(aclrtMalloc(&dout, OUT_BYTES, ACL_MEM_MALLOC_HUGE_FIRST));

    check_section("the layout a kernel sees: values, placeholder slots, placeholder data");
    CHECK_OK(aclrtKernelArgsInit(echo_f, &args));
    CHECK(args != NULL);
    CHECK_OK(aclrtKernelArgsAppend(args, &dout, sizeof dout, &p_out));
    CHECK_OK(aclrtKernelArgsAppend(args, &len, sizeof len, &p_len));
    CHECK_OK(aclrtKernelArgsAppend(args, &value, sizeof value, &p_val)); /* 4 bytes at 16 */
    CHECK_OK(aclrtKernelArgsAppendPlaceHolder(args, &ph_a));             /* slot at 24 */
    CHECK_OK(aclrtKernelArgsAppendPlaceHolder(args, &ph_b));             /* slot at 32 */
    CHECK_OK(aclrtKernelArgsGetPlaceHolderBuffer(args, ph_a, sizeof(int32_t), &buf_a)); /* data at 40 */
    CHECK_OK(aclrtKernelArgsGetPlaceHolderBuffer(args, ph_b, sizeof(int32_t), &buf_b)); /* data at 48 */
    CHECK((uint8_t *)buf_b - (uint8_t *)buf_a == 8);
    i32 = 16384;
    memcpy(buf_a, &i32, sizeof i32);
    i32 = 8;
    memcpy(buf_b, &i32, sizeof i32);
    /* Nothing may be appended once a placeholder buffer was taken. */
    CHECK_FAIL(aclrtKernelArgsAppend(args, &value, sizeof value, &stale), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtKernelArgsAppendPlaceHolder(args, &stale), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    /* Not finalized yet: no launch. */
    CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, NULL, args, NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtKernelArgsFinalize(args));
    CHECK_FAIL(aclrtKernelArgsGetPlaceHolderBuffer(args, ph_a, 4, &dummy), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    if (echo(echo_f, s, args, dout, host)) {
        base = rd64(host);
        CHECK(rd64(host + 8 + 0) == (uint64_t)(uintptr_t)dout);
        CHECK(rd64(host + 8 + 8) == 52);
        CHECK((uint32_t)rd32(host + 8 + 16) == 0xA1B2C3D4u);
        CHECK(rd64(host + 8 + 24) == base + 40);
        CHECK(rd64(host + 8 + 32) == base + 48);
        CHECK(rd32(host + 8 + 40) == 16384);
        CHECK(rd32(host + 8 + 48) == 8);
    }

    check_section("ParaUpdate changes a value in place and needs a new Finalize");
    value = 0x01020304u;
    CHECK_OK(aclrtKernelArgsParaUpdate(args, p_val, &value, sizeof value));
    CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, NULL, args, NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtKernelArgsParaUpdate(args, p_val, &value, 8), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_FAIL(aclrtKernelArgsParaUpdate(args, ph_a, &value, 8), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_OK(aclrtKernelArgsFinalize(args));
    if (echo(echo_f, s, args, dout, host)) {
        CHECK((uint32_t)rd32(host + 8 + 16) == 0x01020304u);
        CHECK(rd64(host + 8 + 24) == rd64(host) + 40);
    }
    /* The same finalized list launches again (the bytes are captured at launch). */
    if (echo(echo_f, s, args, dout, host)) {
        CHECK(rd32(host + 8 + 48) == 8);
    }

    check_section("placeholders point at their data in the kernel's copy");
    {
        aclrtParamHandle q0, q1, q2;
        void *da = NULL, *db = NULL;
        int32_t out2[2] = {0, 0};
        CHECK_OK(aclrtKernelArgsInit(deref_f, &again));
        CHECK(again == args); /* the thread's one list, reset */
        CHECK_FAIL(aclrtKernelArgsParaUpdate(again, p_val, &value, sizeof value), ACL_ERROR_RT_INVALID_HANDLE);
        CHECK_OK(aclrtMemset(dout, OUT_BYTES, 0, OUT_BYTES));
        CHECK_OK(aclrtKernelArgsAppend(again, &dout, sizeof dout, &q0));
        CHECK_OK(aclrtKernelArgsAppendPlaceHolder(again, &q1));
        CHECK_OK(aclrtKernelArgsAppendPlaceHolder(again, &q2));
        CHECK_FAIL(aclrtKernelArgsGetPlaceHolderBuffer(again, q0, 4, &da), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_OK(aclrtKernelArgsGetPlaceHolderBuffer(again, q1, 4, &da));
        CHECK_OK(aclrtKernelArgsGetPlaceHolderBuffer(again, q2, 4, &db));
        i32 = -77;
        memcpy(da, &i32, 4);
        i32 = 1234567;
        memcpy(db, &i32, 4);
        CHECK_OK(aclrtKernelArgsFinalize(again));
        CHECK_OK(aclrtLaunchKernelWithConfig(deref_f, 4, s, NULL, again, NULL));
        CHECK_OK(aclrtSynchronizeStream(s));
        CHECK_OK(aclrtMemcpy(out2, sizeof out2, dout, sizeof out2, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(out2[0] == -77 && out2[1] == 1234567);
    }

    check_section("a list in the caller's memory");
    {
        void *handle_mem, *user_mem;
        aclrtArgsHandle u;
        aclrtParamHandle a, b;
        uint64_t l8 = 16;
        CHECK_OK(aclrtKernelArgsGetHandleMemSize(echo_f, &mem));
        CHECK(mem >= 64);
        CHECK_OK(aclrtKernelArgsGetMemSize(echo_f, 16, &actual));
        CHECK(actual == 16 + 64);
        handle_mem = malloc(mem);
        user_mem = malloc(actual);
        u = handle_mem;
        CHECK_OK(aclrtKernelArgsInitByUserMem(echo_f, u, user_mem, actual));
        CHECK_OK(aclrtKernelArgsAppend(u, &dout, sizeof dout, &a));
        CHECK_OK(aclrtKernelArgsAppend(u, &l8, sizeof l8, &b));
        CHECK(memcmp(user_mem, &dout, sizeof dout) == 0); /* the bytes live in userHostMem */
        CHECK_OK(aclrtKernelArgsFinalize(u));
        if (echo(echo_f, s, u, dout, host)) {
            CHECK(rd64(host + 8) == (uint64_t)(uintptr_t)dout && rd64(host + 16) == 16);
        }
        /* The buffer is bounded by actualArgsSize. */
        {
            uint8_t big[80] = {0};
            aclrtParamHandle c;
            CHECK_OK(aclrtKernelArgsInitByUserMem(echo_f, u, user_mem, 24));
            CHECK_OK(aclrtKernelArgsAppend(u, big, 16, &c));
            CHECK_FAIL(aclrtKernelArgsAppend(u, big, 9, &c), ACL_ERROR_RT_PARAM_INVALID);
            CHECK_OK(aclrtKernelArgsAppend(u, big, 8, &c));
        }
        free(handle_mem);
        free(user_mem);
    }

    check_section("at most 128 parameters");
    {
        int n;
        aclrtParamHandle p;
        uint8_t one = 1;
        CHECK_OK(aclrtKernelArgsInit(echo_f, &args));
        for (n = 0; n < 128; n++) {
            if (aclrtKernelArgsAppend(args, &one, 1, &p) != ACL_SUCCESS) {
                break;
            }
        }
        CHECK(n == 128);
        CHECK_FAIL(aclrtKernelArgsAppend(args, &one, 1, &p), ACL_ERROR_RT_PARAM_INVALID);
    }

    check_section("the launch config");
    {
        aclrtLaunchKernelAttr attrs[2];
        aclrtLaunchKernelCfg cfg;
        CHECK_OK(aclrtKernelArgsInit(echo_f, &args));
        CHECK_OK(aclrtKernelArgsAppend(args, &dout, sizeof dout, &p_out));
        len = 8;
        CHECK_OK(aclrtKernelArgsAppend(args, &len, sizeof len, &p_len));
        CHECK_OK(aclrtKernelArgsFinalize(args));
        memset(attrs, 0, sizeof attrs);
        cfg.attrs = attrs;
        cfg.numAttrs = 0;
        CHECK_OK(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL));
        cfg.attrs = NULL;
        CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL), ACL_ERROR_RT_PARAM_INVALID);
        cfg.attrs = attrs;
        cfg.numAttrs = 1;
        attrs[0].id = ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE;
        attrs[0].value.schemMode = 2;
        CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL), ACL_ERROR_RT_PARAM_INVALID);
        attrs[0].value.schemMode = 1;
        CHECK_OK(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL));
        attrs[0].id = ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP;
        attrs[0].value.isDataDump = 3;
        CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL), ACL_ERROR_RT_PARAM_INVALID);
        attrs[0].id = (aclrtLaunchKernelAttrId)77; /* unknown ids are ignored */
        CHECK_OK(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL));
        cfg.numAttrs = 2;
        attrs[0].id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT;
        attrs[0].value.timeout = 5;
        attrs[1].id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US;
        attrs[1].value.timeoutUs.timeoutLow = 5000000u;
        attrs[1].value.timeoutUs.timeoutHigh = 0;
        CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL), ACL_ERROR_RT_PARAM_INVALID);
        cfg.numAttrs = 1;
        CHECK_OK(aclrtLaunchKernelWithConfig(echo_f, 1, s, &cfg, args, NULL));
        CHECK_OK(aclrtSynchronizeStream(s));
    }

    check_section("bad inputs");
    CHECK_FAIL(aclrtKernelArgsGetHandleMemSize(NULL, &mem), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsGetHandleMemSize(echo_f, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsGetHandleMemSize((aclrtFuncHandle)(uintptr_t)0x1234, &mem), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_FAIL(aclrtKernelArgsGetMemSize(NULL, 8, &actual), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsGetMemSize(echo_f, 8, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsInit(NULL, &args), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsInit(echo_f, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsInitByUserMem(echo_f, NULL, host, 8), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsInitByUserMem(echo_f, &mem, NULL, 8), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsInitByUserMem(echo_f, &mem, host, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsAppend(NULL, &value, 4, &p_val), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsAppend(args, NULL, 4, &p_val), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsAppend(args, &value, 0, &p_val), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsAppend(args, &value, 4, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsAppend(host, &value, 4, &p_val), ACL_ERROR_RT_INVALID_HANDLE); /* not a list */
    CHECK_FAIL(aclrtKernelArgsAppendPlaceHolder(NULL, &ph_a), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsAppendPlaceHolder(args, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsGetPlaceHolderBuffer(NULL, ph_a, 4, &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsGetPlaceHolderBuffer(args, NULL, 4, &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsGetPlaceHolderBuffer(args, ph_a, 0, &dummy), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsGetPlaceHolderBuffer(args, ph_a, 4, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsParaUpdate(NULL, p_len, &len, 8), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsParaUpdate(args, NULL, &len, 8), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsParaUpdate(args, p_len, NULL, 8), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsParaUpdate(args, p_len, &len, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtKernelArgsFinalize(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelWithConfig(NULL, 1, s, NULL, args, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, NULL, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 0, s, NULL, args, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelWithConfig(echo_f, 1, s, NULL, args, host), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtLaunchKernelWithConfig((aclrtFuncHandle)(uintptr_t)0x1234, 1, s, NULL, args, NULL),
               ACL_ERROR_RT_INVALID_HANDLE);

    check_section("sibling launches (§1.6)");
    {
        void *arr[2] = {&dout, &len};
        dim3 g = {1, 1, 1}, b = {32, 1, 1};
        CHECK_FAIL(aclrtLaunchKernelWithArgsArray(NULL, 1, s, NULL, arr), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtLaunchKernelWithArgsArray(echo_f, 0, s, NULL, arr), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtLaunchKernelWithArgsArray(echo_f, 1, s, NULL, arr), ACL_ERROR_RT_PARAM_INVALID);
        CHECK_FAIL(aclrtLaunchSIMTKernelWithArgsArray(NULL, g, b, 0, s, NULL, arr), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtLaunchSIMTKernelWithArgsArray(echo_f, g, b, 0, s, NULL, arr), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        CHECK_FAIL(aclrtLaunchSIMTKernelWithHostArgs(echo_f, g, b, 0, s, NULL, NULL, 8, NULL, 0), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtLaunchSIMTKernelWithHostArgs(echo_f, g, b, 0, s, NULL, host, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
        CHECK_FAIL(aclrtLaunchSIMTKernelWithHostArgs(echo_f, g, b, 0, s, NULL, host, 8, NULL, 0),
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    }

    CHECK_OK(aclrtFree(dout));
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    /* An unloaded binary's functions are gone. */
    CHECK_FAIL(aclrtKernelArgsInit(echo_f, &args), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("kernel_args");
}
