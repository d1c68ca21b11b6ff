// The few pieces of torch and of the CUDA runtime that a twin's launcher uses, for harvest's CPU emulation
// (emulated.h). Each is hv_emu's own, named by a macro after CUDA's: a kernel with half or bfloat16 values has the
// CUDA headers' declarations of the same names already, and these stand in for them from here on.
#pragma once
#include <initializer_list>
#include "../../emulated.h"

namespace hv_emu {
constexpr int SMS = 16;  // a small GPU: a split row takes a few blocks, a cooperative launch forks few processes
enum { Success = 0, AttributeCooperativeLaunch = 1, AttributeMultiProcessorCount = 2, LaunchCooperative = 3 };
inline int get_device(int* device) { *device = 0; return Success; }
inline int device_attribute(int* value, int attribute, int) {
  *value = attribute == AttributeCooperativeLaunch ? 1 : attribute == AttributeMultiProcessorCount ? SMS : 0;
  return Success;
}
inline int blocks_per_sm(int* blocks, const void*, int, size_t) { *blocks = 1; return Success; }
struct LaunchAttributeValue { int cooperative; };
struct LaunchAttribute { int id; LaunchAttributeValue val; };
struct LaunchConfig { dim3 gridDim, blockDim; size_t dynamicSmemBytes; void* stream; LaunchAttribute* attrs; unsigned numAttrs; };
template <typename... Params, typename... Args>
int launch_ex(const LaunchConfig* config, void (*kernel)(Params...), Args&&... args) {
  bool cooperative = false;
  for (unsigned a = 0; a < config->numAttrs; ++a) cooperative |= config->attrs[a].id == LaunchCooperative && config->attrs[a].val.cooperative;
  launch(config->gridDim, config->blockDim, cooperative, kernel, args...);
  return Success;
}
}  // namespace hv_emu

#define cudaGetDevice hv_emu::get_device
#define cudaDeviceGetAttribute hv_emu::device_attribute
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor hv_emu::blocks_per_sm
#define cudaDevAttrCooperativeLaunch hv_emu::AttributeCooperativeLaunch
#define cudaDevAttrMultiProcessorCount hv_emu::AttributeMultiProcessorCount
#define cudaLaunchAttributeCooperative hv_emu::LaunchCooperative
#define cudaLaunchAttribute hv_emu::LaunchAttribute
#define cudaLaunchConfig_t hv_emu::LaunchConfig
#define cudaLaunchKernelEx hv_emu::launch_ex

#define C10_CUDA_CHECK(expression) (void)(expression)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() (void)0
#define TORCH_CHECK(condition, ...) do { if (!(condition)) throw std::runtime_error("TORCH_CHECK failed: " #condition); } while (0)

namespace c10 {
enum class ScalarType { Byte };
namespace cuda {
inline void* getCurrentCUDAStream() { return nullptr; }
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
