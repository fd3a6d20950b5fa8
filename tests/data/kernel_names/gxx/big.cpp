#include <map>
#include <functional>
#include <memory>
#include <regex>
#include <unordered_map>
#include <tuple>
#include <string>
#include <vector>
#include <algorithm>
namespace k {
enum Mode { A = 0, B = 3 };
enum class Big : long { X = -5 };
template <typename T, int N, bool F, Mode M, Big G, char C, unsigned U, long L, unsigned long UL, short S>
void lit(T) {}
template <typename... Ts> void pack(Ts&&...) {}
template <typename F> void call(F f) { f(1); }
struct Obj { void m() const volatile {} void n() & {} static int s; };
template <typename T> void fptr(void (*)(T, int), int (*const)(T), T (&)(float)) {}
int g(int) { return 0; }
void h(int, int) {}
int r(float) { return 0; }
template <typename T> struct Outer { template <typename U> struct Inner { void go(T, U) {} }; };
}
void run() {
  k::lit<float, -3, true, k::B, k::Big::X, 'a', 7u, -9L, 11UL, 2>(1.0f);
  k::pack(1, 2.0, std::string("x"));
  k::call([](int x) { return x; });
  k::call([](auto x) { return x; });
  k::Obj o; o.m(); o.n();
  k::fptr<int>(k::h, k::g, k::r);
  k::Outer<int>::Inner<double> in; in.go(1, 2.0);
  std::map<std::string, std::vector<int>> m; m["a"].push_back(1);
  std::unordered_map<int, std::function<void(int)>> um; um[1] = [](int) {};
  std::regex re("a+"); std::smatch sm; std::string s = "aa"; std::regex_search(s, sm, re);
  auto p = std::make_shared<std::tuple<int, float, std::string>>();
  std::vector<std::pair<int,int>> v; std::sort(v.begin(), v.end());
}
