/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_base_mdl.h - base declarations of the model API.
 *
 * An empty placeholder, as in CANN 1.17.0's runtime repository: the model
 * runtime (aclmdl*) is a separate package that aclrs does not implement.
 * acl/acl_base.h includes it.
 */
#ifndef ACLRS_ACL_ACL_BASE_MDL_H
#define ACLRS_ACL_ACL_BASE_MDL_H

#endif /* ACLRS_ACL_ACL_BASE_MDL_H */
