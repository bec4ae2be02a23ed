/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_base.h - base header of the aclrs implementation of CANN's ACL.
 *
 * As in CANN 1.17.0, this header only includes, in this order: the base types,
 * codes and helpers (acl/acl_base_rt.h), the model part (acl/acl_base_mdl.h,
 * empty), the runtime pass-through codes ACL_ERROR_RT_*
 * (error_codes/rt_error_codes.h) and the graph-engine codes ACL_ERROR_GE_*
 * (error_codes/ge_error_codes.h). Programs may include either this header or
 * acl/acl_base_rt.h.
 */
#ifndef ACLRS_ACL_ACL_BASE_H
#define ACLRS_ACL_ACL_BASE_H

#include "acl_base_rt.h"
#include "acl_base_mdl.h"
#include "error_codes/rt_error_codes.h"
#include "error_codes/ge_error_codes.h"

#endif /* ACLRS_ACL_ACL_BASE_H */
