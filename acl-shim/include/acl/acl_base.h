/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_base.h - base types of the aclrs implementation of CANN's ACL.
 *
 * Names, signatures and numeric values follow CANN's public headers at
 * version 1.17.0 (acl_base.h / acl_base_rt.h), so that C and C++ programs
 * written for CANN compile unchanged against libascendcl from aclrs.
 *
 * Contents: aclError, ACL_FUNC_VISIBILITY, the opaque handle types that CANN
 * declares in its base header, the generic ACL error codes, aclMemType and
 * aclGetRecentErrMsg. The runtime pass-through codes (ACL_ERROR_RT_*) come from
 * acl/error_codes/rt_error_codes.h, included below.
 */
#ifndef ACLRS_ACL_ACL_BASE_H
#define ACLRS_ACL_ACL_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "error_codes/rt_error_codes.h"

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

#ifdef __cplusplus
extern "C" {
#endif

/* Status code returned by (almost) every ACL function; 0 is success. */
typedef int aclError;

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
 * CANN also reserves 100003-100032, 100038-100045 and 148046-148053 for its
 * model, operator, dump and profiling modules. Of those, only the two file
 * codes aclInit returns for its configuration file are named here; the rest
 * are never returned by the memory runtime.
 */
static const int ACL_SUCCESS = 0;
static const int ACL_ERROR_NONE = 0; /* deprecated spelling of ACL_SUCCESS */

static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_INVALID_FILE = 100003; /* aclInit: configPath cannot be read */
static const int ACL_ERROR_PARSE_FILE = 100006;   /* aclInit: configPath is not valid JSON */
static const int ACL_ERROR_REPEAT_SUBSCRIBE = 100033;
static const int ACL_ERROR_STREAM_NOT_SUBSCRIBE = 100034;  /* deprecated: 107015 */
static const int ACL_ERROR_THREAD_NOT_SUBSCRIBE = 100035;  /* deprecated: 107012 */
static const int ACL_ERROR_WAIT_CALLBACK_TIMEOUT = 100036; /* deprecated: 507012 */
static const int ACL_ERROR_REPEAT_FINALIZE = 100037;

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

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_BASE_H */
