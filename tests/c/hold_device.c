/* Two-process test helper. With argument "hold": take device 0, print "holding", and keep it
 * until standard input closes. Without: try to take device 0 and print the code and message,
 * e.g. "busy: 207004 <message>". */
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"

int main(int argc, char **argv)
{
    if (aclInit(NULL) != ACL_SUCCESS) {
        printf("aclInit failed\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "hold") == 0) {
        void *p = NULL;
        if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
            printf("hold: cannot take device 0\n");
            return 1;
        }
        printf("holding device 0\n");
        fflush(stdout);
        while (getchar() != EOF) {
        }
        aclrtFree(p);
        aclrtResetDevice(0);
        return aclFinalize() == ACL_SUCCESS ? 0 : 1;
    }
    aclError rc = aclrtSetDevice(0);
    const char *msg = aclGetRecentErrMsg();
    printf("busy: %d %s\n", (int)rc, msg ? msg : "(no message)");
    if (rc == ACL_SUCCESS) {
        aclrtResetDevice(0);
    }
    /* The failed SetDevice must leave no state: device 1 still works. */
    if (aclrtSetDevice(1) != ACL_SUCCESS) {
        printf("device 1 unusable after the refusal\n");
        return 1;
    }
    aclrtResetDevice(1);
    return aclFinalize() == ACL_SUCCESS ? 0 : 1;
}
