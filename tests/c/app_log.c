/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app_log.c - aclAppLog and ACL_APP_LOG (fact sheet §5.7): the message is
 * formatted as printf does, with arguments in registers and on the stack
 * (more integers and doubles than either register file holds), cut at 1023
 * bytes with "...[truncated]", and written at its level through libascendcl's
 * log; aclrsAppLogWrite writes text as it is. The test (tests/c_programs.rs)
 * runs this with the log on stdout at DEBUG and reads the lines back.
 */
#include <stdint.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_sim.h"
#include "check.h"

int main(void)
{
    char long_text[3000];

    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';

    /* Before aclInit, at each level. */
    aclAppLog(ACL_DEBUG, "main", "/some/dir/app.c", 10, "debug %d", 1);
    aclAppLog(ACL_INFO, "main", "app.c", 11, "info %s", "two");
    aclAppLog(ACL_WARNING, "main", "app.c", 12, "warning %u", 3u);
    aclAppLog(ACL_ERROR, "main", "app.c", 13, "error %c", '4');
    aclAppLog((aclLogLevel)9, "main", "app.c", 14, "odd level");
    /* Twelve integers and ten doubles: past the six integer and eight vector argument
     * registers of x86_64, and the eight of each on aarch64. */
    aclAppLog(ACL_INFO, "many", "app.c", 20, "ints %d %d %d %d %d %d %d %d %d %d %ld %lld doubles %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f end",
              1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11L, 12LL, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5);
    aclAppLog(ACL_INFO, "mixed", "app.c", 21, "%s=%g %x %%", "pi", 3.25, 255u);
    aclAppLog(ACL_INFO, "long", "app.c", 22, "%s", long_text);
    aclAppLog(ACL_INFO, "nullfmt", "app.c", 23, NULL);
    /* CANN's macro uses GNU C (__FUNCTION__, ", ##__VA_ARGS__"), as ours does. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
    ACL_APP_LOG(ACL_WARNING, "macro %d %s", 42, "args");
#pragma GCC diagnostic pop
    aclrsAppLogWrite(ACL_INFO, "raw", "raw.c", 30, "100% as is %d");
    aclrsAppLogWrite(ACL_INFO, "raw", "raw.c", 31, NULL);

    /* After aclInit too. */
    if (!CHECK_OK(aclInit(NULL))) {
        return check_summary("app_log");
    }
    aclAppLog(ACL_ERROR, "after", "app.c", 40, "after init %d", 5);
    CHECK_OK(aclFinalize());
    return check_summary("app_log");
}
