/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base_types.c - acl/acl_base.h (fact sheet §5) and the version and SoC
 * queries (§4.1-4.3): every aclDataType and aclFormat value, aclDataTypeSize,
 * the fp16 conversions (all 65536 halves, every rounding boundary between two
 * neighbouring halves, saturation, subnormals), the aclDataBuffer API, the
 * SoC name before and after aclInit, the CANN attributes, aclrtGetVersion and the package versions
 * (aclrs's own runtime, and packages read from $ASCEND_HOME_PATH), each with
 * its bad inputs.
 *
 * Usage: base_types EXPECTED_SOC_NAME EXPECTED_RUNTIME_VERSION
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl/acl_base.h"
#include "acl/acl.h"
#include "check.h"

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* 2^e, exactly, without libm. */
static double pow2(int e)
{
    double v = 1.0;
    for (; e > 0; e--) {
        v *= 2.0;
    }
    for (; e < 0; e++) {
        v /= 2.0;
    }
    return v;
}

/* What CANN's fp16 -> fp32 gives: exponent 31 is an ordinary exponent. */
static float reference_half(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    int m = h & 0x3ff;
    double v = e == 0 ? m * pow2(-24) : (1.0 + m / 1024.0) * pow2(e - 15);
    return (float)((h & 0x8000) ? -v : v);
}

static void data_types(void)
{
    static const struct {
        aclDataType type;
        int value;
        size_t size;
    } table[] = {
        {ACL_DT_UNDEFINED, -1, 0}, {ACL_FLOAT, 0, 4},          {ACL_FLOAT16, 1, 2},
        {ACL_INT8, 2, 1},          {ACL_INT32, 3, 4},          {ACL_UINT8, 4, 1},
        {ACL_INT16, 6, 2},         {ACL_UINT16, 7, 2},         {ACL_UINT32, 8, 4},
        {ACL_INT64, 9, 8},         {ACL_UINT64, 10, 8},        {ACL_DOUBLE, 11, 8},
        {ACL_BOOL, 12, 1},         {ACL_STRING, 13, 0},        {ACL_COMPLEX64, 16, 8},
        {ACL_COMPLEX128, 17, 16},  {ACL_BF16, 27, 2},          {ACL_INT4, 29, 1},
        {ACL_UINT1, 30, 1},        {ACL_COMPLEX32, 33, 4},     {ACL_HIFLOAT8, 34, 1},
        {ACL_FLOAT8_E5M2, 35, 1},  {ACL_FLOAT8_E4M3FN, 36, 1}, {ACL_FLOAT8_E8M0, 37, 1},
        {ACL_FLOAT6_E3M2, 38, 8},  {ACL_FLOAT6_E2M3, 39, 8},   {ACL_FLOAT4_E2M1, 40, 8},
        {ACL_FLOAT4_E1M2, 41, 8},
    };
    static const int undefined[] = {5, 14, 15, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28, 31, 32, 42, 1000, -2};
    size_t i;
    int bad = 0;

    check_section("aclDataType values and aclDataTypeSize");
    for (i = 0; i < sizeof table / sizeof table[0]; i++) {
        if ((int)table[i].type != table[i].value || aclDataTypeSize(table[i].type) != table[i].size) {
            printf("  type %d: value %d, size %zu (expected %zu)\n", table[i].value, (int)table[i].type,
                   aclDataTypeSize(table[i].type), table[i].size);
            bad++;
        }
    }
    CHECK(bad == 0);
    for (i = 0; i < sizeof undefined / sizeof undefined[0]; i++) {
        CHECK(aclDataTypeSize((aclDataType)undefined[i]) == 8);
    }
    CHECK(sizeof(aclDataType) == 4);
    CHECK(sizeof(aclFloat16) == 2);
}

static void formats(void)
{
    static const struct {
        aclFormat format;
        int value;
    } table[] = {
        {ACL_FORMAT_UNDEFINED, -1},        {ACL_FORMAT_NCHW, 0},
        {ACL_FORMAT_NHWC, 1},              {ACL_FORMAT_ND, 2},
        {ACL_FORMAT_NC1HWC0, 3},           {ACL_FORMAT_FRACTAL_Z, 4},
        {ACL_FORMAT_NC1HWC0_C04, 12},      {ACL_FORMAT_HWCN, 16},
        {ACL_FORMAT_NDHWC, 27},            {ACL_FORMAT_FRACTAL_NZ, 29},
        {ACL_FORMAT_NCDHW, 30},            {ACL_FORMAT_NDC1HWC0, 32},
        {ACL_FRACTAL_Z_3D, 33},            {ACL_FORMAT_NC, 35},
        {ACL_FORMAT_NCL, 47},              {ACL_FORMAT_FRACTAL_NZ_C0_16, 50},
        {ACL_FORMAT_FRACTAL_NZ_C0_32, 51}, {ACL_FORMAT_FRACTAL_NZ_C0_2, 52},
        {ACL_FORMAT_FRACTAL_NZ_C0_4, 53},  {ACL_FORMAT_FRACTAL_NZ_C0_8, 54},
    };
    size_t i;
    int bad = 0;

    check_section("aclFormat values");
    for (i = 0; i < sizeof table / sizeof table[0]; i++) {
        bad += (int)table[i].format != table[i].value;
    }
    CHECK(bad == 0);
    CHECK(ACL_DEBUG == 0 && ACL_INFO == 1 && ACL_WARNING == 2 && ACL_ERROR == 3);
    CHECK(ACL_OPT_DETERMINISTIC == 0 && ACL_OPT_ENABLE_KERNEL_EARLY_START == 3);
    CHECK(ACL_DEVICE_INFO_UNDEFINED == -1 && ACL_DEVICE_INFO_L2_SIZE == 2);
    CHECK(ACL_CANN_ATTR_UNDEFINED == -1 && ACL_CANN_ATTR_JIT_COMPILE == 2);
}

static void error_codes(void)
{
    check_section("error constants of acl_base_rt.h, rt_error_codes.h and ge_error_codes.h");
    CHECK(ACL_ERROR_WRITE_FILE == 100004 && ACL_ERROR_INVALID_QUEUE_ID == 100032);
    CHECK(ACL_ERROR_NOT_STATIC_AIPP == 100038 && ACL_ERROR_DUMP_NOT_RUN == 100045);
    CHECK(ACL_ERROR_PROF_REPEAT_SUBSCRIBE == 148046 && ACL_ERROR_INVALID_BUNDLE_MODEL_ID == 148053);
    CHECK(ACL_ERROR_SNAPSHOT_LOCK_TIMEOUT == 507905 && ACL_ERROR_SNAPSHOT_RESTORE_FAILED == 507909);
    CHECK(ACL_ERROR_SNAPSHOT_CALLBACK_FAILED == 507912 && ACL_ERROR_SNAPSHOT_REGISTER_CALLBACK_FAILED == 507913);
    CHECK(ACL_ERROR_RT_GROUP_NOT_CREATE == 107014 && ACL_ERROR_RT_STREAM_TASK_EMPTY == 507003);
    CHECK(ACL_ERROR_GE_PARAM_INVALID == 145000U && ACL_ERROR_GE_DATATYPE_INVALID == 145022U);
    CHECK(ACL_ERROR_GE_MEMORY_ALLOCATION == 245000U && ACL_ERROR_GE_DATA_NOT_ALIGNED == 345104U);
    CHECK(ACL_ERROR_GE_INTERNAL_ERROR == 545000U && ACL_ERROR_GE_REDEPLOYING == 545602U);
}

static void half_to_float(void)
{
    uint32_t h;
    int bad = 0;

    check_section("aclFloat16ToFloat: all 65536 halves, exact");
    for (h = 0; h <= 0xFFFF; h++) {
        float got = aclFloat16ToFloat((aclFloat16)h);
        if (float_bits(got) != float_bits(reference_half((uint16_t)h))) {
            if (bad++ < 5) {
                printf("  %#06x -> %a, expected %a\n", (unsigned)h, (double)got,
                       (double)reference_half((uint16_t)h));
            }
        }
    }
    CHECK(bad == 0);
    CHECK(aclFloat16ToFloat(0x7C00) == 65536.0f);
    CHECK(aclFloat16ToFloat(0xFC00) == -65536.0f);
    CHECK(aclFloat16ToFloat(0x7E00) == 98304.0f);
    CHECK(aclFloat16ToFloat(0x7FFF) == 131008.0f);
    CHECK(aclFloat16ToFloat(0x0001) == (float)pow2(-24));
    CHECK(float_bits(aclFloat16ToFloat(0x8000)) == 0x80000000u);
    CHECK(aclFloat16ToFloat(0x3C00) == 1.0f && aclFloat16ToFloat(0x7BFF) == 65504.0f);
}

static void float_to_half(void)
{
    uint32_t h;
    int bad_trip = 0, bad_sat = 0, bad_tie = 0, bad_sign = 0;

    check_section("aclFloatToFloat16: round trips, every tie, saturation, subnormals");
    for (h = 0; h <= 0xFFFF; h++) {
        float f = aclFloat16ToFloat((aclFloat16)h);
        aclFloat16 back = aclFloatToFloat16(f);
        if (((h >> 10) & 0x1f) != 0x1f) {
            bad_trip += back != h;
        } else {
            bad_sat += back != ((h & 0x8000) | 0x7BFF);
        }
    }
    CHECK(bad_trip == 0);
    CHECK(bad_sat == 0);

    /* Between neighbours a < b: the midpoint goes to the even one, the floats
     * just below and above it go to a and b. Negatives mirror positives. */
    for (h = 0; h < 0x7BFF; h++) {
        float fa = aclFloat16ToFloat((aclFloat16)h);
        float fb = aclFloat16ToFloat((aclFloat16)(h + 1));
        float mid = (float)(((double)fa + (double)fb) / 2.0);
        uint32_t even = (h & 1) ? h + 1 : h;
        float below = bits_float(float_bits(mid) - 1);
        float above = bits_float(float_bits(mid) + 1);
        if (aclFloatToFloat16(mid) != even || aclFloatToFloat16(below) != h ||
            aclFloatToFloat16(above) != h + 1) {
            if (bad_tie++ < 5) {
                printf("  between %#06x and %#06x: mid -> %#06x, below -> %#06x, above -> %#06x\n", (unsigned)h,
                       (unsigned)h + 1, aclFloatToFloat16(mid), aclFloatToFloat16(below),
                       aclFloatToFloat16(above));
            }
        }
        bad_sign += aclFloatToFloat16(-mid) != (0x8000 | even) || aclFloatToFloat16(-above) != (0x8000 | (h + 1));
    }
    CHECK(bad_tie == 0);
    CHECK(bad_sign == 0);

    /* The fact sheet's examples. */
    CHECK(aclFloatToFloat16(1.625f) == 0x3E80);
    CHECK(aclFloatToFloat16((float)(1.0 + pow2(-11))) == 0x3C00);
    CHECK(aclFloatToFloat16((float)(1.0 + 3 * pow2(-11))) == 0x3C02);
    /* Saturation: past 65504, infinities, NaNs, keeping the sign. */
    CHECK(aclFloatToFloat16(65519.0f) == 0x7BFF);
    CHECK(aclFloatToFloat16(65520.0f) == 0x7BFF);
    CHECK(aclFloatToFloat16(65536.0f) == 0x7BFF);
    CHECK(aclFloatToFloat16(-1e30f) == 0xFBFF);
    CHECK(aclFloatToFloat16(bits_float(0x7F800000u)) == 0x7BFF);
    CHECK(aclFloatToFloat16(bits_float(0xFF800000u)) == 0xFBFF);
    CHECK(aclFloatToFloat16(bits_float(0x7FC00000u)) == 0x7BFF);
    CHECK(aclFloatToFloat16(bits_float(0xFFC00001u)) == 0xFBFF);
    CHECK(aclFloatToFloat16(bits_float(0x7F7FFFFFu)) == 0x7BFF);
    /* Below the smallest subnormal. */
    CHECK(aclFloatToFloat16((float)pow2(-25)) == 0x0000);
    CHECK(aclFloatToFloat16(bits_float(float_bits((float)pow2(-25)) + 1)) == 0x0001);
    CHECK(aclFloatToFloat16((float)pow2(-26)) == 0x0000);
    CHECK(aclFloatToFloat16(-(float)pow2(-26)) == 0x8000);
    CHECK(aclFloatToFloat16(bits_float(0x00000001u)) == 0x0000);
    CHECK(aclFloatToFloat16(bits_float(0x80000001u)) == 0x8000);
    CHECK(aclFloatToFloat16(-0.0f) == 0x8000);
    /* The largest subnormal rounding up into the smallest normal. */
    CHECK(aclFloatToFloat16((float)(pow2(-14) - pow2(-26))) == 0x0400);
}

static void data_buffers(void)
{
    char block[16];
    size_t big = (size_t)5 << 30;
    aclDataBuffer *empty;
    aclDataBuffer *buf;

    check_section("aclDataBuffer");
    empty = aclCreateDataBuffer(NULL, 0);
    CHECK(empty != NULL);
    CHECK(aclGetDataBufferAddr(empty) == NULL);
    CHECK(aclGetDataBufferSizeV2(empty) == 0);
    buf = aclCreateDataBuffer(NULL, 100); /* accepted, as in CANN */
    CHECK(buf != NULL && aclGetDataBufferSizeV2(buf) == 100);
    CHECK_OK(aclUpdateDataBuffer(buf, block, big));
    CHECK(aclGetDataBufferAddr(buf) == block);
    CHECK(aclGetDataBufferSizeV2(buf) == big);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CHECK(aclGetDataBufferSize(buf) == (uint32_t)big);
    CHECK(aclGetDataBufferSize(NULL) == 0);
#pragma GCC diagnostic pop
    CHECK_OK(aclUpdateDataBuffer(buf, block, sizeof block));
    CHECK(aclGetDataBufferSizeV2(buf) == sizeof block);

    check_section("aclDataBuffer: bad inputs");
    CHECK(aclGetDataBufferAddr(NULL) == NULL);
    CHECK(aclGetDataBufferSizeV2(NULL) == 0);
    CHECK_FAIL(aclUpdateDataBuffer(NULL, block, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclDestroyDataBuffer(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclGetDataBufferAddr(buf) == block && aclGetDataBufferSizeV2(buf) == sizeof block);
    CHECK_OK(aclDestroyDataBuffer(buf));
    CHECK_OK(aclDestroyDataBuffer(empty));
}

static void soc_name(const char *expected)
{
    const char *name;
    const char *again;
    const char *saved = getenv("ACLRS_SIM_SOC");
    char *copy = saved != NULL ? strdup(saved) : NULL;

    check_section("aclrtGetSocName before aclInit");
    name = aclrtGetSocName();
    CHECK(name != NULL && strcmp(name, expected) == 0);
    again = aclrtGetSocName();
    CHECK(again == name);

    check_section("aclrtGetSocName: invalid settings give NULL and a message");
    setenv("ACLRS_SIM_SOC", "Ascend310", 1);
    CHECK(aclrtGetSocName() == NULL);
    {
        const char *msg = aclGetRecentErrMsg();
        CHECK(msg != NULL && strstr(msg, "aclrtGetSocName") != NULL);
    }
    if (copy != NULL) {
        setenv("ACLRS_SIM_SOC", copy, 1);
        free(copy);
    } else {
        unsetenv("ACLRS_SIM_SOC");
    }
    CHECK(aclrtGetSocName() == name);
}

static void cann_attributes(void)
{
    const aclCannAttr *list = NULL;
    size_t num = 99;
    int32_t value = -1;

    check_section("aclGetCannAttributeList, aclGetCannAttribute");
    CHECK_OK(aclGetCannAttributeList(&list, &num));
    CHECK(list != NULL && num == 2);
    CHECK(list != NULL && num == 2 && list[0] == ACL_CANN_ATTR_INF_NAN && list[1] == ACL_CANN_ATTR_BF16);
    CHECK_OK(aclGetCannAttribute(ACL_CANN_ATTR_INF_NAN, &value));
    CHECK(value == 1);
    CHECK_OK(aclGetCannAttribute(ACL_CANN_ATTR_BF16, &value));
    CHECK(value == 1);
    CHECK_OK(aclGetCannAttribute(ACL_CANN_ATTR_JIT_COMPILE, &value));
    CHECK(value == 0);

    check_section("aclGetCannAttributeList, aclGetCannAttribute: bad inputs");
    value = -1;
    list = NULL;
    num = 99;
    CHECK_FAIL(aclGetCannAttributeList(NULL, &num), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclGetCannAttributeList(&list, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(list == NULL && num == 99);
    CHECK_FAIL(aclGetCannAttribute(ACL_CANN_ATTR_UNDEFINED, &value), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclGetCannAttribute((aclCannAttr)3, &value), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclGetCannAttribute(ACL_CANN_ATTR_BF16, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(value == -1);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return 0;
    }
    fputs(text, f);
    return fclose(f) == 0;
}

/* Removes what make_package made. */
static void remove_package(const char *root, const char *pkg)
{
    char path[512];
    snprintf(path, sizeof path, "%s/share/info/%s/version.info", root, pkg);
    unlink(path);
    snprintf(path, sizeof path, "%s/share/info/%s", root, pkg);
    rmdir(path);
}

/* Makes ROOT/share/info/PKG/version.info holding text. */
static int make_package(const char *root, const char *pkg, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/share", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/share/info", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/share/info/%s", root, pkg);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/share/info/%s/version.info", root, pkg);
    return write_file(path, text);
}

static void versions(const char *runtime_version)
{
    int32_t major = -1, minor = -1, patch = -1;
    char str[ACL_PKG_VERSION_MAX_SIZE];
    int32_t num = -7;
    unsigned vmaj = 0, vmin = 0, vpatch = 0;
    char root[] = "/tmp/aclrs-versions-XXXXXX";
    char long_version[300];
    aclCANNPackageVersion pv;

    check_section("aclrtGetVersion");
    CHECK_OK(aclrtGetVersion(&major, &minor, &patch));
    CHECK(major == ACL_MAJOR_VERSION && minor == ACL_MINOR_VERSION && patch == ACL_PATCH_VERSION);
    CHECK(major == 1 && minor == 17 && patch == 0);
    major = -1;
    CHECK_FAIL(aclrtGetVersion(NULL, &minor, &patch), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetVersion(&major, NULL, &patch), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclrtGetVersion(&major, &minor, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(major == -1);

    check_section("aclsysGetVersionStr/Num: the runtime is aclrs");
    CHECK_OK(aclsysGetVersionStr((char *)"runtime", str));
    CHECK(strcmp(str, runtime_version) == 0);
    CHECK(sscanf(runtime_version, "%u.%u.%u", &vmaj, &vmin, &vpatch) == 3);
    CHECK_OK(aclsysGetVersionNum((char *)"runtime", &num));
    CHECK(num == (int32_t)(vmaj * 10000000u + vmin * 100000u + vpatch * 1000u));
    CHECK_OK(aclsysGetCANNVersion(ACL_PKG_NAME_RUNTIME, &pv));
    CHECK(strcmp(pv.version, runtime_version) == 0 && strcmp(pv.patchVersion, "0") == 0);

    check_section("aclsysGetVersionStr/Num: bad inputs");
    strcpy(str, "untouched");
    num = -7;
    CHECK_FAIL(aclsysGetVersionStr(NULL, str), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclsysGetVersionStr((char *)"runtime", NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclsysGetVersionNum(NULL, &num), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclsysGetVersionNum((char *)"runtime", NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclsysGetCANNVersion(ACL_PKG_NAME_RUNTIME, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_FAIL(aclsysGetCANNVersion((aclCANNPackageName)99, &pv), ACL_ERROR_INVALID_PARAM);
    unsetenv("ASCEND_HOME_PATH");
    CHECK_FAIL(aclsysGetVersionStr((char *)"toolkit", str), ACL_ERROR_INVALID_FILE);
    CHECK_FAIL(aclsysGetVersionNum((char *)"toolkit", &num), ACL_ERROR_INVALID_FILE);
    CHECK(strcmp(str, "untouched") == 0 && num == -7);

    check_section("aclsysGetVersionStr/Num: packages under $ASCEND_HOME_PATH/share/info");
    if (!CHECK(mkdtemp(root) != NULL)) {
        return;
    }
    memset(long_version, '7', sizeof long_version);
    memcpy(long_version, "Version=", 8);
    long_version[sizeof long_version - 1] = '\0';
    CHECK(make_package(root, "toolkit", "Version=9.0.0-rc.1\n"));
    CHECK(make_package(root, "opp_kernel", "# comment\nVersion= 8.5.0-alpha.2 \nVersion=1.0.0\n"));
    CHECK(make_package(root, "oam-tools", "version_dir=x\nVersion=9.0.0-rc.1\n"));
    CHECK(make_package(root, "odd", "Version=9.0.0-final\n"));
    CHECK(make_package(root, "empty", "nothing here\n"));
    CHECK(make_package(root, "long", long_version));
    setenv("ASCEND_HOME_PATH", root, 1);
    CHECK_OK(aclsysGetVersionStr((char *)"toolkit", str));
    CHECK(strcmp(str, "9.0.0-rc.1") == 0);
    CHECK_OK(aclsysGetVersionNum((char *)"toolkit", &num));
    CHECK(num == 89999901);
    CHECK_OK(aclsysGetVersionStr((char *)"opp-kernel", str)); /* '-' tried as '_' too */
    CHECK(strcmp(str, "8.5.0-alpha.2") == 0);
    CHECK_OK(aclsysGetVersionNum((char *)"opp-kernel", &num));
    CHECK(num == 80499702);
    CHECK_OK(aclsysGetCANNVersion(ACL_PKG_NAME_TOOLKIT, &pv)); /* oam-tools */
    CHECK(strcmp(pv.version, "9.0.0-rc.1") == 0);
    CHECK(strcmp(pv.majorVersion, "9") == 0 && strcmp(pv.minorVersion, "0") == 0);
    CHECK(strcmp(pv.releaseVersion, "0") == 0 && strcmp(pv.patchVersion, "rc1") == 0);
    CHECK(sizeof(aclCANNPackageVersion) == 512);

    strcpy(str, "untouched");
    num = -7;
    CHECK_OK(aclsysGetVersionStr((char *)"odd", str));
    CHECK(strcmp(str, "9.0.0-final") == 0);
    CHECK_FAIL(aclsysGetVersionNum((char *)"odd", &num), ACL_ERROR_INTERNAL_ERROR);
    CHECK(num == -7);
    strcpy(str, "untouched");
    CHECK_FAIL(aclsysGetVersionStr((char *)"empty", str), ACL_ERROR_INVALID_FILE);
    CHECK_FAIL(aclsysGetVersionStr((char *)"missing", str), ACL_ERROR_INVALID_FILE);
    CHECK_FAIL(aclsysGetVersionStr((char *)"../share", str), ACL_ERROR_INVALID_FILE);
    CHECK_FAIL(aclsysGetVersionStr((char *)"long", str), ACL_ERROR_INTERNAL_ERROR);
    CHECK(strcmp(str, "untouched") == 0);
    CHECK_FAIL(aclsysGetCANNVersion(ACL_PKG_NAME_HCCL, &pv), ACL_ERROR_INVALID_FILE);
    unsetenv("ASCEND_HOME_PATH");
    {
        static const char *made[] = {"toolkit", "opp_kernel", "oam-tools", "odd", "empty", "long"};
        char path[512];
        size_t i;
        for (i = 0; i < sizeof made / sizeof made[0]; i++) {
            remove_package(root, made[i]);
        }
        snprintf(path, sizeof path, "%s/share/info", root);
        rmdir(path);
        snprintf(path, sizeof path, "%s/share", root);
        rmdir(path);
        CHECK(rmdir(root) == 0);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: base_types EXPECTED_SOC_NAME EXPECTED_RUNTIME_VERSION\n");
        return 2;
    }
    data_types();
    formats();
    error_codes();
    half_to_float();
    float_to_half();
    data_buffers();
    soc_name(argv[1]);
    cann_attributes();
    versions(argv[2]);

    check_section("after aclInit");
    if (CHECK_OK(aclInit(NULL))) {
        const char *name = aclrtGetSocName();
        int32_t major = 0, minor = 0, patch = 0;
        CHECK(name != NULL && strcmp(name, argv[1]) == 0);
        CHECK_OK(aclrtGetVersion(&major, &minor, &patch));
        CHECK(minor == 17);
        CHECK_OK(aclFinalize());
    }
    return check_summary("base_types");
}
