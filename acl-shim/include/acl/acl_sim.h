/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_sim.h - extensions for kernels that run on the aclrs software NPU.
 *
 * Not part of CANN. On the software NPU a kernel binary is a host shared
 * object and a kernel is an exported function with the signature
 *
 *     void NAME(uint32_t block_idx, uint32_t block_dim, void *args);
 *
 * called once per block (blocks may run concurrently). `args` points to a copy
 * of the launch's argument bytes; device pointers inside it can be
 * dereferenced directly.
 */
#ifndef ACLRS_ACL_ACL_SIM_H
#define ACLRS_ACL_ACL_SIM_H

#include <stdint.h>

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reports a fault from inside a kernel running on the software NPU. The kernel
 * should return right after calling it. The launch then fails with `code`, or
 * with ACL_ERROR_RT_AICORE_EXCEPTION (507015) when `code` is 0, and the error
 * surfaces at the next synchronisation of the stream, as on real hardware.
 * Only meaningful when called from a kernel body during a launch.
 */
ACL_FUNC_VISIBILITY void aclrsKernelFail(int32_t code);

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_SIM_H */
