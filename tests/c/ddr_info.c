/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/ddr_info.c - aclrtGetMemInfo on a device without HBM (ACLRS_SIM_MEMORY=ddr): the DDR
 * classes report the device memory, and HBM queries are answered with the DDR figures.
 */
#include <stdlib.h>

#include "acl/acl.h"
#include "check.h"

int main(void)
{
    size_t f[18], t[18];
    void *p = NULL;
    int a;

    printf("ddr_info: aclrtGetMemInfo on a DDR-only device\n");
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("ddr_info");
    }
    for (a = 0; a < 18; a++) {
        CHECK_OK(aclrtGetMemInfo((aclrtMemAttr)a, &f[a], &t[a]));
    }
    CHECK(t[ACL_DDR_MEM] == (size_t)1 << 30 && f[ACL_DDR_MEM] == t[ACL_DDR_MEM]);
    CHECK(t[ACL_HBM_MEM] == t[ACL_DDR_MEM] && f[ACL_HBM_MEM] == f[ACL_DDR_MEM]);
    CHECK(t[ACL_DDR_MEM_HUGE] == t[ACL_HBM_MEM_HUGE] && t[ACL_DDR_MEM_HUGE] > 0);
    CHECK(t[ACL_DDR_MEM_NORMAL] == t[ACL_HBM_MEM_NORMAL]);
    CHECK(t[ACL_DDR_MEM_P2P_HUGE] == t[ACL_HBM_MEM_HUGE]);
    if (CHECK_OK(aclrtMalloc(&p, 4 << 20, ACL_MEM_MALLOC_HUGE_ONLY))) {
        size_t fd = 0, td = 0, fh = 0, th = 0;
        CHECK_OK(aclrtGetMemInfo(ACL_DDR_MEM, &fd, &td));
        CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &fh, &th));
        CHECK(fd == f[ACL_DDR_MEM] - ((size_t)6 << 20)); /* 4 MiB + 32, in 2 MiB pages */
        CHECK(fh == fd);
        CHECK_OK(aclrtFree(p));
    }
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("ddr_info");
}
