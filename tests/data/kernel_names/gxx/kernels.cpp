#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>
namespace c10 { struct BFloat16 { uint16_t x; }; struct Half { uint16_t x; }; struct Float8_e4m3fn { uint8_t x; }; }
namespace at { struct TensorIteratorBase {}; namespace native {
enum class Fp8KVCacheDataType { kAuto = 0, kFp8E4M3 = 1 };
template <typename T> struct MulFunctor { T operator()(T a, T b) const { return a; } };
template <typename A, typename B, typename C, typename F> struct BinaryFunctor { F f; };
template <int vec, typename func_t, typename array_t>
__attribute__((noinline)) void vectorized_elementwise_kernel(int n, func_t f, array_t data) { asm volatile(""); }
template <typename T> struct FillFunctor { T v; };
namespace {
template <typename T> struct CompareEqFunctor {};
template <typename T> void silu(T) {}
void silu_kernel(TensorIteratorBase& iter) {
  [&]() { [&]() { vectorized_elementwise_kernel<4>(1, [](c10::BFloat16 a) { return a; }, std::array<char*, 2>{}); }(); }();
}
}
void direct_copy_kernel_cuda(TensorIteratorBase& iter) {
  auto l = [&]() { auto m = [&]() { vectorized_elementwise_kernel<8>(1, [](long x) { return x; }, std::array<char*, 2>{}); }; m(); };
  l();
  silu_kernel(iter);
}
template <typename scalar_t, typename idx_t, int dims, bool flag>
__attribute__((noinline)) void indexSelectLargeIndex(scalar_t* out, const scalar_t* in, const idx_t* idx, long n) { asm volatile(""); }
}}
namespace vllm {
template <typename scalar_t, typename cache_t, at::native::Fp8KVCacheDataType kv_dt>
__attribute__((noinline)) void reshape_and_cache_flash_kernel(const scalar_t* k, const scalar_t* v, cache_t* kc, cache_t* vc, const int64_t* slots, long a, long b) { asm volatile(""); }
struct RankData {}; struct RankSignals {}; struct Signal {};
template <typename T, int ngpus>
__attribute__((noinline)) void cross_device_reduce_1stage(RankData* d, RankSignals s, Signal* self, T* result, int rank, int size) { asm volatile(""); }
}
namespace ck_tile {
template <int... Is> struct sequence {};
template <typename... Ts> struct tuple {};
template <typename P> struct Rmsnorm2dFwd { struct Kargs {}; };
template <int MinBlocks, typename Kernel, typename... Args>
__attribute__((noinline)) void kentry(Args... args) { asm volatile(""); }
}
namespace aiter {
template <typename T, typename Q, int a, int b, bool x, bool y>
__attribute__((noinline)) void add_rmsnorm_quant_kernel(Q* out, T* in, float* scale, const T* w, double eps, int n, bool f) { asm volatile(""); }
}
struct S { int v; S(int x) : v(x) {} ~S() {} template <typename T> T get() const { return T(); } };
template <typename T> struct Wrap { void run() & {} void run2() && {} static void apply(void (*fn)(int), T*) {} };
template <typename T, unsigned long N> void arr(const std::array<T, N>&) {}
void use() {
  at::TensorIteratorBase it;
  at::native::direct_copy_kernel_cuda(it);
  at::native::vectorized_elementwise_kernel<4>(1, at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, at::native::MulFunctor<float>>{}, std::array<char*, 3>{});
  at::native::vectorized_elementwise_kernel<4>(1, at::native::FillFunctor<long>{}, std::array<char*, 1>{});
  at::native::indexSelectLargeIndex<c10::BFloat16, long, 2, true>(nullptr, nullptr, nullptr, 3);
  at::native::indexSelectLargeIndex<short, unsigned char, -2, false>(nullptr, nullptr, nullptr, 3);
  vllm::reshape_and_cache_flash_kernel<c10::BFloat16, unsigned char, at::native::Fp8KVCacheDataType::kFp8E4M3>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 2);
  vllm::cross_device_reduce_1stage<c10::Half, 8>(nullptr, {}, nullptr, nullptr, 0, 0);
  ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<ck_tile::sequence<1, 3072>>>(ck_tile::Rmsnorm2dFwd<int>::Kargs{});
  ck_tile::kentry<2, ck_tile::tuple<>>();
  aiter::add_rmsnorm_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn, 256, 16, false, true>(nullptr, nullptr, nullptr, nullptr, 1e-6, 1, true);
  S s(1); s.get<float>(); s.get<c10::Half*>();
  Wrap<int> w; w.run(); std::move(w).run2(); Wrap<int>::apply(nullptr, nullptr);
  arr(std::array<c10::BFloat16, 4>{});
  std::vector<std::string> v; v.push_back("x");
  volatile int vi = 0; const volatile int* cvp = &vi; (void)cvp;
}
