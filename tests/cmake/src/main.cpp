// SPDX-License-Identifier: Apache-2.0
// tests/cmake/src/main.cpp - the memory flow of CANN's samples, built by tests/cmake's CMake
// project against an installed libascendcl: init, set a device, allocate on the device and the
// host, copy there and back, compare, free, reset, finalize. Prints "cmake sample: OK".
#include <cstdio>
#include <cstring>

#include "acl/acl.h"

#define CHECK_ACL(call)                                                                  \
    do {                                                                                 \
        aclError ret_ = (call);                                                          \
        if (ret_ != ACL_SUCCESS) {                                                       \
            const char *msg_ = aclGetRecentErrMsg();                                     \
            std::printf("%s failed: %d (%s)\n", #call, static_cast<int>(ret_),          \
                        msg_ != nullptr ? msg_ : "no message");                          \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

int main()
{
    const size_t size = 1 << 20;
    const int32_t deviceId = 0;
    void *dev = nullptr;
    void *host = nullptr;
    void *back = nullptr;

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(deviceId));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMallocHost(&host, size));
    CHECK_ACL(aclrtMallocHost(&back, size));
    unsigned char *h = static_cast<unsigned char *>(host);
    for (size_t i = 0; i < size; i++) {
        h[i] = static_cast<unsigned char>(i * 7 + 3);
    }
    std::memset(back, 0, size);
    CHECK_ACL(aclrtMemcpyAsync(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_ACL(aclrtMemcpyAsync(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    const bool same = std::memcmp(host, back, size) == 0;
    CHECK_ACL(aclrtFreeHost(back));
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtFree(dev));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(deviceId));
    CHECK_ACL(aclFinalize());
    if (!same) {
        std::printf("cmake sample: the bytes copied back differ\n");
        return 1;
    }
    std::printf("cmake sample: OK\n");
    return 0;
}
