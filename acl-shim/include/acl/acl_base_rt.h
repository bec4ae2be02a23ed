/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_base_rt.h - base types, codes and helpers of the aclrs implementation
 * of CANN's ACL.
 *
 * Names, signatures and numeric values follow CANN's public headers at
 * version 1.17.0 (include/external/acl/acl_base_rt.h), so that C and C++
 * programs written for CANN compile unchanged against libascendcl from aclrs.
 * As in CANN, acl/acl_base.h includes this header, the (empty) model part
 * acl/acl_base_mdl.h and the two error-code headers.
 *
 * Contents: ACL_FUNC_VISIBILITY and ACL_DEPRECATED(_MESSAGE), aclError, the
 * opaque handle types, the generic ACL error codes, aclDataType (with
 * aclDataTypeSize), aclFormat, aclFloat16 (with its conversions), the
 * aclDataBuffer API, aclMemType, aclLogLevel, aclSysParamOpt, aclDeviceInfo,
 * aclCannAttr (with aclGetCannAttributeList and aclGetCannAttribute),
 * aclrtGetSocName, aclAppLog (with ACL_APP_LOG), aclGetRecentErrMsg and
 * aclGetDeviceCapability.
 */
#ifndef ACLRS_ACL_ACL_BASE_RT_H
#define ACLRS_ACL_ACL_BASE_RT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Symbol visibility. Exported names are the plain C names; when the library
 * itself is built with FUNC_VISIBILITY defined, the declarations carry default
 * visibility. A build may also predefine ACL_FUNC_VISIBILITY itself.
 */
#ifndef ACL_FUNC_VISIBILITY
#if defined(FUNC_VISIBILITY)
#if defined(_WIN32)
#define ACL_FUNC_VISIBILITY __declspec(dllexport)
#else
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif
#else
#define ACL_FUNC_VISIBILITY
#endif
#endif

/* Marks deprecated declarations (GCC >= 6, Clang, MSVC; empty elsewhere). */
#ifndef ACL_DEPRECATED
#if defined(_MSC_VER)
#define ACL_DEPRECATED __declspec(deprecated)
#define ACL_DEPRECATED_MESSAGE(message) __declspec(deprecated(message))
#elif defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 6)
#define ACL_DEPRECATED __attribute__((deprecated))
#define ACL_DEPRECATED_MESSAGE(message) __attribute__((deprecated(message)))
#else
#define ACL_DEPRECATED
#define ACL_DEPRECATED_MESSAGE(message)
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status code returned by (almost) every ACL function; 0 is success. */
typedef int aclError;

/* An IEEE 754 binary16 value, as its bits. */
typedef uint16_t aclFloat16;

/* Describes one block of memory (address and size); see aclCreateDataBuffer. */
typedef struct aclDataBuffer aclDataBuffer;

/* Opaque handles. All are plain pointers at the ABI level. */
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;
typedef void *aclrtNotify;
typedef void *aclrtCntNotify;
typedef void *aclrtLabel;
typedef void *aclrtLabelList;
typedef void *aclrtMbuf;
typedef void *aclrtAllocatorDesc;
typedef void *aclrtAllocator;
typedef void *aclrtAllocatorBlock;
typedef void *aclrtAllocatorAddr;
typedef void *aclrtTaskGrp;
typedef void *aclmdlRITask;

/*
 * Generic ACL error codes.
 *
 * Ranges: 1xxxxx caller or environment mistakes, 2xxxxx resource shortage or
 * hardware mismatch, 3xxxxx business-state errors, 5xxxxx internal errors
 * (anything unrecognised is reported as ACL_ERROR_INTERNAL_ERROR).
 *
 * 100003-100032, 100038-100045 and 148046-148053 belong to CANN's model,
 * operator, dump and profiling modules. aclInit returns the two file codes for
 * its configuration file and aclsysGetVersionStr/Num return
 * ACL_ERROR_INVALID_FILE; the rest are named so that programs using them
 * compile, and aclrs never returns them.
 */
static const int ACL_SUCCESS = 0;
static const int ACL_ERROR_NONE = 0; /* deprecated spelling of ACL_SUCCESS */

static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_INVALID_FILE = 100003; /* aclInit: configPath cannot be read */
static const int ACL_ERROR_WRITE_FILE = 100004;
static const int ACL_ERROR_INVALID_FILE_SIZE = 100005;
static const int ACL_ERROR_PARSE_FILE = 100006; /* aclInit: configPath is not valid JSON */
static const int ACL_ERROR_FILE_MISSING_ATTR = 100007;
static const int ACL_ERROR_FILE_ATTR_INVALID = 100008;
static const int ACL_ERROR_INVALID_DUMP_CONFIG = 100009;
static const int ACL_ERROR_INVALID_PROFILING_CONFIG = 100010;
static const int ACL_ERROR_INVALID_MODEL_ID = 100011;
static const int ACL_ERROR_DESERIALIZE_MODEL = 100012;
static const int ACL_ERROR_PARSE_MODEL = 100013;
static const int ACL_ERROR_READ_MODEL_FAILURE = 100014;
static const int ACL_ERROR_MODEL_SIZE_INVALID = 100015;
static const int ACL_ERROR_MODEL_MISSING_ATTR = 100016;
static const int ACL_ERROR_MODEL_INPUT_NOT_MATCH = 100017;
static const int ACL_ERROR_MODEL_OUTPUT_NOT_MATCH = 100018;
static const int ACL_ERROR_MODEL_NOT_DYNAMIC = 100019;
static const int ACL_ERROR_OP_TYPE_NOT_MATCH = 100020;
static const int ACL_ERROR_OP_INPUT_NOT_MATCH = 100021;
static const int ACL_ERROR_OP_OUTPUT_NOT_MATCH = 100022;
static const int ACL_ERROR_OP_ATTR_NOT_MATCH = 100023;
static const int ACL_ERROR_OP_NOT_FOUND = 100024;
static const int ACL_ERROR_OP_LOAD_FAILED = 100025;
static const int ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026;
static const int ACL_ERROR_FORMAT_NOT_MATCH = 100027;
static const int ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED = 100028;
static const int ACL_ERROR_KERNEL_NOT_FOUND = 100029;
static const int ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED = 100030;
static const int ACL_ERROR_KERNEL_ALREADY_REGISTERED = 100031;
static const int ACL_ERROR_INVALID_QUEUE_ID = 100032;
static const int ACL_ERROR_REPEAT_SUBSCRIBE = 100033;
static const int ACL_ERROR_STREAM_NOT_SUBSCRIBE = 100034;  /* deprecated: 107015 */
static const int ACL_ERROR_THREAD_NOT_SUBSCRIBE = 100035;  /* deprecated: 107012 */
static const int ACL_ERROR_WAIT_CALLBACK_TIMEOUT = 100036; /* deprecated: 507012 */
static const int ACL_ERROR_REPEAT_FINALIZE = 100037;
static const int ACL_ERROR_NOT_STATIC_AIPP = 100038;
static const int ACL_ERROR_COMPILING_STUB_MODE = 100039;
static const int ACL_ERROR_GROUP_NOT_SET = 100040;
static const int ACL_ERROR_GROUP_NOT_CREATE = 100041;
static const int ACL_ERROR_PROF_ALREADY_RUN = 100042;
static const int ACL_ERROR_PROF_NOT_RUN = 100043;
static const int ACL_ERROR_DUMP_ALREADY_RUN = 100044;
static const int ACL_ERROR_DUMP_NOT_RUN = 100045;

static const int ACL_ERROR_PROF_REPEAT_SUBSCRIBE = 148046;
static const int ACL_ERROR_PROF_API_CONFLICT = 148047;
static const int ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG = 148048;
static const int ACL_ERROR_INVALID_OPP_PATH = 148049;
static const int ACL_ERROR_OP_UNSUPPORTED_DYNAMIC = 148050;
static const int ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED = 148051;
static const int ACL_ERROR_UNSUPPORTED_JPEG = 148052;
static const int ACL_ERROR_INVALID_BUNDLE_MODEL_ID = 148053;

static const int ACL_ERROR_BAD_ALLOC = 200000;
static const int ACL_ERROR_API_NOT_SUPPORT = 200001;
static const int ACL_ERROR_INVALID_DEVICE = 200002; /* deprecated: 107001 */
static const int ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003;
static const int ACL_ERROR_RESOURCE_NOT_MATCH = 200004;
static const int ACL_ERROR_INVALID_RESOURCE_HANDLE = 200005;
static const int ACL_ERROR_FEATURE_UNSUPPORTED = 200006;
static const int ACL_ERROR_PROF_MODULES_UNSUPPORTED = 200007;

static const int ACL_ERROR_STORAGE_OVER_LIMIT = 300000;

static const int ACL_ERROR_INTERNAL_ERROR = 500000;
static const int ACL_ERROR_FAILURE = 500001;
static const int ACL_ERROR_GE_FAILURE = 500002;
static const int ACL_ERROR_RT_FAILURE = 500003;
static const int ACL_ERROR_DRV_FAILURE = 500004;
static const int ACL_ERROR_PROFILING_FAILURE = 500005;

/* Where a buffer of the operator/model APIs lives. */
typedef enum aclMemType {
    ACL_MEMTYPE_DEVICE = 0,
    ACL_MEMTYPE_HOST = 1,
    ACL_MEMTYPE_HOST_COMPILE_INDEPENDENT = 2
} aclMemType;

/*
 * Returns the text recorded for the most recent failed ACL call(s) of this
 * thread and clears it, or NULL when there is none. The pointer stays valid
 * only until the next call. Declared with an empty parameter list as in CANN;
 * it takes no arguments.
 */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg();

/* Element types. Values 5, 14, 15, 18-26, 28, 31 and 32 are not defined. */
typedef enum {
    ACL_DT_UNDEFINED = -1,
    ACL_FLOAT = 0,
    ACL_FLOAT16 = 1,
    ACL_INT8 = 2,
    ACL_INT32 = 3,
    ACL_UINT8 = 4,
    ACL_INT16 = 6,
    ACL_UINT16 = 7,
    ACL_UINT32 = 8,
    ACL_INT64 = 9,
    ACL_UINT64 = 10,
    ACL_DOUBLE = 11,
    ACL_BOOL = 12,
    ACL_STRING = 13,
    ACL_COMPLEX64 = 16,
    ACL_COMPLEX128 = 17,
    ACL_BF16 = 27,
    ACL_INT4 = 29,
    ACL_UINT1 = 30,
    ACL_COMPLEX32 = 33,
    ACL_HIFLOAT8 = 34,
    ACL_FLOAT8_E5M2 = 35,
    ACL_FLOAT8_E4M3FN = 36,
    ACL_FLOAT8_E8M0 = 37,
    ACL_FLOAT6_E3M2 = 38,
    ACL_FLOAT6_E2M3 = 39,
    ACL_FLOAT4_E2M1 = 40,
    ACL_FLOAT4_E1M2 = 41
} aclDataType;

/* Tensor layouts. */
typedef enum {
    ACL_FORMAT_UNDEFINED = -1,
    ACL_FORMAT_NCHW = 0,
    ACL_FORMAT_NHWC = 1,
    ACL_FORMAT_ND = 2,
    ACL_FORMAT_NC1HWC0 = 3,
    ACL_FORMAT_FRACTAL_Z = 4,
    ACL_FORMAT_NC1HWC0_C04 = 12,
    ACL_FORMAT_HWCN = 16,
    ACL_FORMAT_NDHWC = 27,
    ACL_FORMAT_FRACTAL_NZ = 29,
    ACL_FORMAT_NCDHW = 30,
    ACL_FORMAT_NDC1HWC0 = 32,
    ACL_FRACTAL_Z_3D = 33,
    ACL_FORMAT_NC = 35,
    ACL_FORMAT_NCL = 47,
    ACL_FORMAT_FRACTAL_NZ_C0_16 = 50,
    ACL_FORMAT_FRACTAL_NZ_C0_32 = 51,
    ACL_FORMAT_FRACTAL_NZ_C0_2 = 52,
    ACL_FORMAT_FRACTAL_NZ_C0_4 = 53,
    ACL_FORMAT_FRACTAL_NZ_C0_8 = 54
} aclFormat;

/* Levels of the application log. */
typedef enum {
    ACL_DEBUG = 0,
    ACL_INFO = 1,
    ACL_WARNING = 2,
    ACL_ERROR = 3
} aclLogLevel;

/* Runtime parameters (aclrtSetSysParamOpt, aclrtCtxSetSysParamOpt). */
typedef enum {
    ACL_OPT_DETERMINISTIC = 0,
    ACL_OPT_ENABLE_DEBUG_KERNEL = 1,
    ACL_OPT_STRONG_CONSISTENCY = 2, /* deprecated: ACL_OPT_DETERMINISTIC = 2 */
    ACL_OPT_ENABLE_KERNEL_EARLY_START = 3
} aclSysParamOpt;

/* Device facts (aclGetDeviceCapability). */
typedef enum {
    ACL_DEVICE_INFO_UNDEFINED = -1,
    ACL_DEVICE_INFO_AI_CORE_NUM = 0,
    ACL_DEVICE_INFO_VECTOR_CORE_NUM = 1,
    ACL_DEVICE_INFO_L2_SIZE = 2
} aclDeviceInfo;

/* CANN software features (aclGetCannAttribute). */
typedef enum {
    ACL_CANN_ATTR_UNDEFINED = -1,
    ACL_CANN_ATTR_INF_NAN = 0,
    ACL_CANN_ATTR_BF16 = 1,
    ACL_CANN_ATTR_JIT_COMPILE = 2
} aclCannAttr;

/*
 * Bytes of one element of dataType: 0 for ACL_DT_UNDEFINED and ACL_STRING,
 * 1 for the sub-byte INT4 and UINT1, and (as CANN does) 8 for the FLOAT6 and
 * FLOAT4 types and for any value not in aclDataType.
 */
ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType);

/*
 * fp16 -> fp32, exact. As in CANN, exponent 31 is treated as finite:
 * 0x7C00 (+Inf) gives 65536.0f and 0x7E00 (NaN) gives 98304.0f.
 */
ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value);

/*
 * fp32 -> fp16, round to nearest, ties to even, saturating: values that round
 * past 65504 in magnitude, Inf and NaN give 0x7BFF (65504) with the sign kept;
 * values at or below half the smallest subnormal give +-0.
 */
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value);

/*
 * Creates a descriptor of (data, size); any combination is accepted, and
 * data = NULL with size = 0 is an empty buffer. The caller keeps owning the
 * memory: destroying or updating the descriptor never frees it. NULL only if
 * the descriptor cannot be allocated.
 */
ACL_FUNC_VISIBILITY aclDataBuffer *aclCreateDataBuffer(void *data, size_t size);

/* Destroys a descriptor from aclCreateDataBuffer. NULL: ACL_ERROR_INVALID_PARAM. */
ACL_FUNC_VISIBILITY aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer);

/* Replaces the descriptor's address and size. NULL: ACL_ERROR_INVALID_PARAM. */
ACL_FUNC_VISIBILITY aclError aclUpdateDataBuffer(aclDataBuffer *dataBuffer, void *data, size_t size);

/* The descriptor's address; NULL for a NULL descriptor. */
ACL_FUNC_VISIBILITY void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer);

/* The descriptor's size truncated to 32 bits; 0 for a NULL descriptor. */
ACL_DEPRECATED_MESSAGE("aclGetDataBufferSize is deprecated, use aclGetDataBufferSizeV2 instead")
ACL_FUNC_VISIBILITY uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer);

/* The descriptor's size; 0 for a NULL descriptor. */
ACL_FUNC_VISIBILITY size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer);

/*
 * The CANN attributes available: a static array (do not free it) and its
 * length. On every profile of the software NPU these are ACL_CANN_ATTR_INF_NAN
 * and ACL_CANN_ATTR_BF16; aclrs has no JIT operator compiler. NULL outputs:
 * ACL_ERROR_INVALID_PARAM.
 */
ACL_FUNC_VISIBILITY aclError aclGetCannAttributeList(const aclCannAttr **cannAttrList, size_t *num);

/*
 * *value = 1 when cannAttr is available, else 0. A value that is not an
 * aclCannAttr (ACL_CANN_ATTR_UNDEFINED included) or a NULL value:
 * ACL_ERROR_INVALID_PARAM.
 */
ACL_FUNC_VISIBILITY aclError aclGetCannAttribute(aclCannAttr cannAttr, int32_t *value);

/*
 * A device fact tiling reads: the AI Core and Vector Core counts (the
 * process's resource limits of the device, by default the SoC profile's
 * counts) and the L2 size in bytes. No device need be set. NULL value, a
 * deviceId out of range or an unknown deviceInfo: ACL_ERROR_INVALID_PARAM.
 */
ACL_FUNC_VISIBILITY aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t *value);

/*
 * Writes one line of the application's own log, at logLevel, through
 * libascendcl's log (ASCEND_GLOBAL_LOG_LEVEL, ASCEND_SLOG_PRINT_TO_STDOUT,
 * ASCEND_PROCESS_LOG_PATH): "[file:line] func: message", the message formatted
 * from fmt as printf does, at most 1023 bytes (a longer one is cut and ends
 * with "...[truncated]"). A NULL fmt writes nothing.
 */
ACL_FUNC_VISIBILITY void aclAppLog(aclLogLevel logLevel, const char *func, const char *file, uint32_t line,
                                   const char *fmt, ...);

/* aclAppLog with the calling function, file and line filled in. */
#define ACL_APP_LOG(level, fmt, ...) aclAppLog(level, __FUNCTION__, __FILE__, __LINE__, fmt, ##__VA_ARGS__)

/*
 * The SoC name of the devices (device 0's with several), for example
 * "Ascend910B1": the name of the software NPU's profile (ACLRS_SIM_SOC), also
 * before aclInit. The string is static; do not free it. NULL on failure.
 * Declared with an empty parameter list as in CANN; it takes no arguments.
 */
ACL_FUNC_VISIBILITY const char *aclrtGetSocName();

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_BASE_RT_H */
