// The few pieces of torch a twin's launcher uses, for the CPU emulation (tests/emulated_cuda/emulated.h).
#pragma once
#include <initializer_list>
#include "../../emulated.h"

typedef void* cudaStream_t;
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaDevAttrCooperativeLaunch = 1, cudaDevAttrMultiProcessorCount = 2, cudaLaunchAttributeCooperative = 3 };
constexpr int HV_EMULATED_SMS = 16;  // a small GPU: a split row takes a few blocks, a cooperative launch forks few processes

inline cudaError_t cudaGetDevice(int* device) { *device = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* value, int attribute, int) {
  *value = attribute == cudaDevAttrCooperativeLaunch ? 1 : attribute == cudaDevAttrMultiProcessorCount ? HV_EMULATED_SMS : 0;
  return cudaSuccess;
}
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void*, int, size_t) { *blocks = 1; return cudaSuccess; }
struct cudaLaunchAttributeValue { int cooperative; };
struct cudaLaunchAttribute { int id; cudaLaunchAttributeValue val; };
struct cudaLaunchConfig_t { dim3 gridDim, blockDim; size_t dynamicSmemBytes; cudaStream_t stream; cudaLaunchAttribute* attrs; unsigned numAttrs; };
template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...), Args&&... args) {
  bool cooperative = false;
  for (unsigned a = 0; a < config->numAttrs; ++a) cooperative |= config->attrs[a].id == cudaLaunchAttributeCooperative && config->attrs[a].val.cooperative;
  hv_emu::launch(config->gridDim, config->blockDim, cooperative, kernel, args...);
  return cudaSuccess;
}

#define C10_CUDA_CHECK(expression) (void)(expression)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() (void)0
#define TORCH_CHECK(condition, ...) do { if (!(condition)) throw std::runtime_error("TORCH_CHECK failed: " #condition); } while (0)

namespace c10 {
enum class ScalarType { Byte };
namespace cuda {
inline cudaStream_t getCurrentCUDAStream() { return nullptr; }
inline int current_device() { return 0; }
}  // namespace cuda
}  // namespace c10

namespace torch {
constexpr c10::ScalarType kUInt8 = c10::ScalarType::Byte;
enum DeviceType { kCUDA };
struct TensorOptions {
  TensorOptions dtype(c10::ScalarType) const { return *this; }
  TensorOptions device(DeviceType, int) const { return *this; }
};
struct Tensor {
  void* pointer = nullptr;
  void* data_ptr() const { return pointer; }
  template <typename T> T* data_ptr() const { return static_cast<T*>(pointer); }
};
inline Tensor empty(std::initializer_list<int64_t> sizes, TensorOptions) {  // bytes (the twins' workspaces), shared with forked blocks
  int64_t bytes = 1;
  for (int64_t size : sizes) bytes *= size;
  return Tensor{hv_emu::shared_bytes(size_t(bytes))};
}
}  // namespace torch
