// tests/c/seed_pool_full.cpp - the seed's complete example of stream-ordered allocation with
// aclrtLaunchKernelV2, as printed, with only these changes, each marked "aclrs:":
//   - <gtest/gtest.h> is not included (the example uses nothing from it);
//   - the kernel library is loaded from ACLRS_TEST_KERNELS (the example's binHandle is NULL);
//   - the example's typos are fixed (a missing semicolon, `aclError` before a call, an
//     undeclared `error`), and the inputs are given values so that the result can be checked.
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <stdlib.h>
#include "acl/acl_rt.h"
#include "acl/acl.h"
int main() {
    uint32_t devid = 0;
    aclInit(NULL);
    aclrtSetDevice(devid);
    // 创建Context和Stream
    aclrtContext context;
    aclrtStream stream1;
    aclrtCreateContext(&context, 0);
    aclrtCreateStream(&stream1);
    // 设置内存池属性
    aclrtMemLocation testLoc = {
        0, // id
        ACL_MEM_LOCATION_TYPE_DEVICE // type
    };
    aclrtMemPoolProps testProp = {
        ACL_MEM_ALLOCATION_TYPE_PINNED, // allocType
        ACL_MEM_HANDLE_TYPE_NONE, // handleType
        testLoc, // location
        14UL << 30, // maxSize = 14GB， 内存池大小为14G
        {0} // reserved
    };
    // 创建内存池
    aclrtMemPool testReusePool;
    auto ret = aclrtMemPoolCreate(&testReusePool, &testProp);
    if (ret != ACL_SUCCESS) {
        fprintf(stderr, "Failed to create memory pool\n");
        return -1;
    }
    const size_t GB_TO_B = 1024ULL * 1024 * 1024;
    (void)GB_TO_B;
    // 定义算子信息结构体
    typedef struct {
        void *input_x;
        void *input_y;
        void *output_z;
    } ArgsInfo;
    aclrtBinHandle binHandle = nullptr;
    aclrtFuncHandle funcHandle;
    aclrtBinaryLoadFromFile(getenv("ACLRS_TEST_KERNELS"), nullptr, &binHandle);  // aclrs: load the library
    aclrtBinaryGetFunction(binHandle, "add_custom", &funcHandle);                 // aclrs: no `aclError`
    void *ptr0 = nullptr;
    void *ptr1 = nullptr;
    void *ptr2 = nullptr;
    void *ptr3 = nullptr;
    // 异步申请内存
    aclrtMemPoolMallocAsync(&ptr1, sizeof(uint64_t), testReusePool, stream1);
    aclrtMemPoolMallocAsync(&ptr2, sizeof(uint64_t), testReusePool, stream1);
    aclrtMemPoolMallocAsync(&ptr3, sizeof(uint64_t), testReusePool, stream1);
    aclrtMemPoolMallocAsync(&ptr0, sizeof(ArgsInfo), testReusePool, stream1);
    float in[2] = {3.0f, 4.0f};                                                   // aclrs: inputs
    aclrtMemcpy(ptr1, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(ptr2, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE);
    // 配置任务下发
    ArgsInfo usrArgs;
    usrArgs.input_x = ptr1;                                                       // aclrs: `;`
    usrArgs.input_y = ptr2;
    usrArgs.output_z = ptr3;
    aclError error;                                                               // aclrs: declared
    error = aclrtMemcpyAsync(ptr0, sizeof(ArgsInfo), (void *)&usrArgs, sizeof(ArgsInfo), ACL_MEMCPY_HOST_TO_DEVICE, stream1);
    // 下发任务
    uint32_t blockDim = 32;
    aclrtLaunchKernelV2(funcHandle, blockDim, (void *)&usrArgs, sizeof(ArgsInfo), nullptr, stream1);
    float out[2] = {0, 0};                                                        // aclrs: check
    aclrtSynchronizeStream(stream1);
    aclrtMemcpy(out, sizeof out, ptr3, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST);
    // 异步释放内存，此前无需进行流同步
    aclrtMemPoolFreeAsync(ptr0, stream1);
    aclrtMemPoolFreeAsync(ptr1, stream1);
    aclrtMemPoolFreeAsync(ptr2, stream1);
    aclrtMemPoolFreeAsync(ptr3, stream1);
    // 流同步
    aclrtSynchronizeStream(stream1);
    // 销毁内存池、Stream和Context
    aclrtMemPoolDestroy(testReusePool);
    aclrtDestroyStream(stream1);
    aclrtDestroyContext(context);
    aclrtResetDevice(devid);
    aclFinalize();
    int ok = error == ACL_SUCCESS && out[0] == 6.0f && out[1] == 8.0f;           // aclrs: check
    printf("seed_pool_full: z = {%g, %g}: %s\n", out[0], out[1], ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
}
