/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl.h - umbrella header of the aclrs implementation of CANN's ACL.
 *
 * Include this one header to get the base types and codes (acl_base.h), the
 * runtime API (acl_rt.h, which also brings in acl_rt_allocator.h and
 * acl_rt_memory_soma.h) and process initialisation below.
 */
#ifndef ACLRS_ACL_ACL_H
#define ACLRS_ACL_ACL_H

#include "acl_base.h"
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Initialises ACL for the process. configPath may be NULL or name a JSON
 * configuration file. A second call returns ACL_ERROR_REPEAT_INITIALIZE and may
 * be ignored; only the first configuration takes effect.
 */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);

/*
 * Releases the process's ACL resources; call it once before exit (not from a
 * destructor). A second call returns ACL_ERROR_REPEAT_FINALIZE. Declared with
 * an empty parameter list as in CANN; it takes no arguments.
 */
ACL_FUNC_VISIBILITY aclError aclFinalize();

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_H */
