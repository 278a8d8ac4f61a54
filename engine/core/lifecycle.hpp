#pragma once
// The one shape of every lifecycle's transition check (DESIGN.md: every lifecycle is an enum
// with one transition function that checks and traces it). A lifecycle lists, per state, the
// states it may go to as a bit mask, so a check is one load, a shift and a test: cheap enough
// for the data path (a command changes state four or five times).
//
// An illegal transition is a bug in the engine, never a host's doing (what a host sends is
// refused before it can move a state the wrong way). A debug build stops at it (assert); a
// production target must not die of it: it counts it (illegal_transitions()), traces it
// (USDT illegal_transition(object, lifecycle, from, to)) and keeps the state it had, which is
// what the code around the call then also finds.
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "engine/stats/usdt.hpp"

namespace lifecycle {

// Which lifecycle an illegal_transition trace is about (its second argument).
enum class Kind : uint8_t { tcp_queue, tcp_command, rdma_queue, rdma_command, controller };

template <typename State>
  requires std::is_enum_v<State>
constexpr uint32_t bit(State s) {
  return 1u << static_cast<unsigned>(s);
}

// next[from]: the states `from` may go to. N is the number of states (at most 32).
template <typename State, size_t N>
  requires std::is_enum_v<State>
struct Transitions {
  static_assert(N <= 32);
  std::array<uint32_t, N> next{};
  constexpr bool allows(State from, State to) const {
    const auto f = static_cast<size_t>(from);
    return f < N && (next[f] >> static_cast<unsigned>(to) & 1u) != 0;
  }
};

// Illegal transitions seen by this process (every lifecycle, every object): 0 in a sound engine.
inline std::atomic<uint64_t>& illegal_transitions() {
  static std::atomic<uint64_t> n{0};
  return n;
}

// The check every set_state makes: true if from -> to is allowed; otherwise counts and traces
// the attempt (and stops a debug build) and returns false: the caller keeps its state.
template <typename State, size_t N>
inline bool check(const Transitions<State, N>& t, Kind kind, const void* object, State from, State to) {
  if (t.allows(from, to)) [[likely]]
    return true;
  illegal_transitions().fetch_add(1, std::memory_order_relaxed);
  NVMT_USDT4(illegal_transition, object, static_cast<unsigned>(kind), static_cast<unsigned>(from),
             static_cast<unsigned>(to));
  assert(!"illegal lifecycle transition");
  return false;
}

}  // namespace lifecycle
