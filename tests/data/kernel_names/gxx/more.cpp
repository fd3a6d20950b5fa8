#include <iostream>
#include <variant>
#include <optional>
#include <chrono>
#include <thread>
#include <set>
#include <list>
#include <deque>
#include <sstream>
#include <array>
namespace ns { namespace { struct Hidden { int x; }; }
template <class T> struct Box { T t; template <class F> auto map(F f) const { return f(t); } };
template <int... Is> struct seq {};
template <class... T> void many(seq<1,2,3>, T...) {}
void lambdas() {
  auto a = [](int) {}; auto b = [](int) {}; auto c = [](Hidden) {}; a(1); b(2); c({});
  Box<Hidden> bx; bx.map([](Hidden h) { return h.x; });
  Box<std::array<char*, 2>> ba; ba.map([](auto&& v) { return v.size(); });
  many(seq<1,2,3>{}, 1, 'c', Hidden{});
}
}
int main() {
  std::variant<int, std::string> v = 1; std::optional<double> o; (void)o;
  std::set<std::pair<int,long>> s; s.insert({1,2});
  std::list<int> l{1,2}; std::deque<char> d{'a'};
  std::ostringstream os; os << 1 << "x" << std::endl;
  std::thread t([]{}); t.join();
  auto now = std::chrono::steady_clock::now(); (void)now;
  ns::lambdas();
}
