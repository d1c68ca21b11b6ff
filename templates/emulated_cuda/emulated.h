// The CUDA that harvest's twins use, emulated on the CPU (`<kernel>_twin.py --check --emulate`, harvest.twin.emulate):
// a block's threads are threads of this process, __syncthreads and a warp's shuffles meet at barriers (so a twin
// whose threads diverge around one hangs here, as it would misbehave on a GPU), __shared__ is a function's static
// (the blocks of a launch run one after another), and a cooperative launch forks a process per block, all at once,
// meeting at a grid barrier in shared memory. The twin's .cu and its launcher compile unchanged with g++ against it;
// the device math is the host's (the fast approximations computed exactly). No timing: a GPU gives that.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <type_traits>
#include <unistd.h>
#include <vector>
#include <vector_types.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
using std::isinf;
using std::isnan;
using std::isfinite;

// The built-in variables, as variables: a thread's own indices, the launch's sizes.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

namespace hv_emu {
// A barrier of `count` threads that gives up after a minute: on a GPU, threads that diverge around __syncthreads or
// a warp shuffle misbehave; here they would wait for ever, so the emulation says so in one line and exits
// (after HV_EMULATED_BARRIER_S seconds, 60 by default).
struct Barrier {
  std::mutex mutex;
  std::condition_variable arrived;
  int count = 0, waiting = 0;
  unsigned long generation = 0;
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    const unsigned long mine = generation;
    if (++waiting == count) {
      waiting = 0;
      ++generation;
      arrived.notify_all();
      return;
    }
    static const int patience = std::getenv("HV_EMULATED_BARRIER_S") ? std::atoi(std::getenv("HV_EMULATED_BARRIER_S")) : 60;
    if (!arrived.wait_for(lock, std::chrono::seconds(patience), [&] { return generation != mine; })) {
      // Threads waiting at other barriers give up at the same moment: the first says so, once, and ends the process.
      static std::atomic<bool> said{false};
      if (said.exchange(true)) {
        lock.unlock();
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }
      std::fprintf(stderr, "--emulate: threads of a block waited %d s at a __syncthreads or a warp shuffle that the "
                           "others never reached (the twin's threads diverge around it)\n", patience);
      std::_Exit(1);
    }
  }
};

struct Launch {
  dim3 grid, block;
  int threads = 0;
  Barrier block_barrier;
  Barrier warp_barriers[32];
  uint64_t slots[32][32];
  pthread_barrier_t* grid_barrier = nullptr;  // a cooperative launch's, in memory shared by the block processes
};
inline Launch* current = nullptr;
inline int cooperative_launches = 0;  // launches made cooperative (a split row's), for the tests to see
inline thread_local int linear = 0;

inline void warp_wait() { current->warp_barriers[linear / 32].wait(); }

template <typename T>
T exchange(T value, int source) {
  static_assert(sizeof(T) <= 8, "a shuffle of more than 8 bytes");
  const int warp = linear / 32, lane = linear % 32;
  std::memcpy(&current->slots[warp][lane], &value, sizeof(T));
  warp_wait();
  T out;
  std::memcpy(&out, &current->slots[warp][source], sizeof(T));
  warp_wait();
  return out;
}

inline void* shared_bytes(size_t bytes) {
  void* p = mmap(nullptr, std::max<size_t>(bytes, 1), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
  return p;
}

// Run every block of the launch: its threads (blockDim of them, each with its threadIdx) in this process, the
// blocks one after another; cooperative: a process per block, all at once.
inline void run(dim3 grid, dim3 block, bool cooperative, const std::function<void()>& body) {
  Launch launch;
  launch.grid = grid;
  launch.block = block;
  launch.threads = int(block.x * block.y * block.z);
  if (launch.threads % 32 != 0) throw std::runtime_error("a block of threads that is not whole warps");
  const long blocks = long(grid.x) * grid.y * grid.z;
  launch.block_barrier.count = launch.threads;
  for (int w = 0; w < launch.threads / 32; ++w) launch.warp_barriers[w].count = 32;
  current = &launch;
  blockDim = block;
  gridDim = grid;
  auto run_blocks = [&](long first, long last) {
    std::vector<std::thread> threads;
    for (int t = 0; t < launch.threads; ++t) {
      threads.emplace_back([&, t] {
        linear = t;
        threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
        for (long b = first; b < last; ++b) {
          blockIdx = uint3{unsigned(b % grid.x), unsigned((b / grid.x) % grid.y), unsigned(b / (long(grid.x) * grid.y))};
          body();
          launch.block_barrier.wait();  // the block is done before the next one starts
        }
      });
    }
    for (auto& thread : threads) thread.join();
  };
  if (!cooperative) {
    run_blocks(0, blocks);
  } else {
    ++cooperative_launches;
    auto* barrier = static_cast<pthread_barrier_t*>(shared_bytes(sizeof(pthread_barrier_t)));
    pthread_barrierattr_t attributes;
    pthread_barrierattr_init(&attributes);
    pthread_barrierattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(barrier, &attributes, unsigned(blocks));
    launch.grid_barrier = barrier;
    std::vector<pid_t> children;
    for (long b = 0; b < blocks; ++b) {
      const pid_t pid = fork();
      if (pid == 0) {
        run_blocks(b, b + 1);
        _exit(0);
      }
      children.push_back(pid);
    }
    bool failed = false;
    for (pid_t pid : children) {
      int status = 0;
      waitpid(pid, &status, 0);
      failed |= !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    if (failed) throw std::runtime_error("a block of the cooperative launch failed");
  }
  current = nullptr;
}

template <typename... Params, typename... Args>
void launch(dim3 grid, dim3 block, bool cooperative, void (*kernel)(Params...), Args... args) {
  run(grid, block, cooperative, [&] { kernel(static_cast<Params>(args)...); });
}
}  // namespace hv_emu

inline void __syncthreads() { hv_emu::current->block_barrier.wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { hv_emu::warp_wait(); }
template <typename T> T __shfl_sync(unsigned, T value, int lane) { return hv_emu::exchange(value, lane & 31); }
template <typename T> T __shfl_xor_sync(unsigned, T value, int mask) { return hv_emu::exchange(value, (hv_emu::linear % 32) ^ mask); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

namespace cooperative_groups {
struct grid_group {
  void sync() {
    __syncthreads();
    if (hv_emu::linear == 0) pthread_barrier_wait(hv_emu::current->grid_barrier);
    __syncthreads();
  }
};
inline grid_group this_grid() { return {}; }
}  // namespace cooperative_groups

// Device math the twins name, by their host counterparts (the fast approximations exactly: tolerances cover them).
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __saturatef(float x) { return fminf(fmaxf(x, 0.0f), 1.0f); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) { return unsigned((uint64_t(a) * b) >> 32); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }

template <typename T> T atomicAdd(T* address, T value) {
  if constexpr (std::is_integral_v<T>) {
    return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
  } else {
    T old = *address, wanted;
    do { wanted = old + value; } while (!__atomic_compare_exchange(address, &old, &wanted, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
  }
}
template <typename T> T atomicMax(T* address, T value) { T old = *address; while (old < value && !__atomic_compare_exchange(address, &old, &value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {} return old; }
template <typename T> T atomicMin(T* address, T value) { T old = *address; while (old > value && !__atomic_compare_exchange(address, &old, &value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {} return old; }
