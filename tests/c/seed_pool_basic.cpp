// tests/c/seed_pool_basic.cpp - the seed's second program (stream-ordered allocation of a
// kernel's argument block), made whole: the "......" parts are filled in (device, stream,
// kernel loading, checking the result). Everything else is the seed's text.
#include <cstdio>
#include <cstdlib>
#include "acl/acl_rt.h"
#include "acl/acl.h"
int main() {
    typedef struct {
        float *input_x;
        float *input_y;
        float *output_z;
    } ArgsInfo;
    void *ptr0 = nullptr;
    aclError error;
    // (filled in) device, kernel library and the function handle.
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    aclrtBinHandle binHandle = nullptr;
    aclrtFuncHandle funcHandle;
    if (aclrtBinaryLoadFromFile(getenv("ACLRS_TEST_KERNELS"), nullptr, &binHandle) != ACL_SUCCESS) return 1;
    if (aclrtBinaryGetFunction(binHandle, "add_custom", &funcHandle) != ACL_SUCCESS) return 1;
    aclrtStream stream1;
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
        14UL << 30, // maxSize = 14GB
        {0} // reserved
    };
    // 创建内存池
    aclrtMemPool testReusePool;
    auto ret = aclrtMemPoolCreate(&testReusePool, &testProp);
    if (ret != ACL_SUCCESS) {
        fprintf(stderr, "Failed to create memory pool\n");
        return -1;
    }
    // 异步申请内存，testReusePool为用户创建的内存池
    aclrtMemPoolMallocAsync(&ptr0, sizeof(ArgsInfo), testReusePool, stream1);
    // (filled in) inputs and output in device memory.
    float x[2] = {1.5f, 2.0f}, y[2] = {10.0f, 20.0f}, z[2] = {0, 0};
    void *dx = nullptr, *dy = nullptr, *dz = nullptr;
    aclrtMemPoolMallocAsync(&dx, sizeof x, testReusePool, stream1);
    aclrtMemPoolMallocAsync(&dy, sizeof y, testReusePool, stream1);
    aclrtMemPoolMallocAsync(&dz, sizeof z, testReusePool, stream1);
    aclrtMemcpy(dx, sizeof x, x, sizeof x, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(dy, sizeof y, y, sizeof y, ACL_MEMCPY_HOST_TO_DEVICE);
    // 配置任务下发
    ArgsInfo usrArgs;
    usrArgs.input_x = (float *)dx;
    usrArgs.input_y = (float *)dy;
    usrArgs.output_z = (float *)dz;
    // 拷贝信息到device侧申请内存
    error = aclrtMemcpyAsync(ptr0, sizeof(ArgsInfo), (void *)&usrArgs, sizeof(ArgsInfo), ACL_MEMCPY_HOST_TO_DEVICE, stream1);
    if (error != ACL_SUCCESS) return 1;
    // 下发任务
    uint32_t blockDim = 32;
    aclrtLaunchKernelV2(funcHandle, blockDim, (void *)&usrArgs, sizeof(ArgsInfo), nullptr, stream1);
    // (filled in) read the result back in stream order, before the frees.
    void *hz = nullptr;
    aclrtMallocHost(&hz, sizeof z);
    aclrtMemcpyAsync(hz, sizeof z, dz, sizeof z, ACL_MEMCPY_DEVICE_TO_HOST, stream1);
    // 异步释放内存，无需进行流同步
    aclrtMemPoolFreeAsync(ptr0, stream1);
    aclrtMemPoolFreeAsync(dx, stream1);
    aclrtMemPoolFreeAsync(dy, stream1);
    aclrtMemPoolFreeAsync(dz, stream1);
    // 流同步
    aclrtSynchronizeStream(stream1);
    const float *r = (const float *)hz;
    int ok = r[0] == 11.5f && r[1] == 22.0f;
    printf("seed_pool_basic: z = {%g, %g}: %s\n", r[0], r[1], ok ? "OK" : "WRONG");
    aclrtFreeHost(hz);
    aclrtMemPoolDestroy(testReusePool);
    aclrtDestroyStream(stream1);
    aclrtBinaryUnLoad(binHandle);
    aclrtResetDevice(0);
    aclFinalize();
    return ok ? 0 : 1;
}
