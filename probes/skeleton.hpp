#pragma once
// Open, configure, load and attach a bpftool skeleton, turning each failure into one line for
// the operator (bpf_support.hpp). Every probe's loader goes through here.
#include <cerrno>
#include <string>

#include "probes/bpf_support.hpp"

namespace probes {

template <class Skel>
struct SkeletonOps {
  Skel* (*open)();
  int (*load)(Skel*);
  int (*attach)(Skel*);  // nullptr: the loader attaches itself (USDT needs a binary and a pid)
  void (*destroy)(Skel*);
};

#define NVMT_SKELETON_OPS(name) \
  ::probes::SkeletonOps<name##_bpf> { name##_bpf__open, name##_bpf__load, name##_bpf__attach, name##_bpf__destroy }

// configure(Skel&) runs between open and load: the place to set `const volatile` options.
// Returns nullptr and sets error ("NAME: what failed: why") on failure.
template <class Skel, class Configure>
SkeletonPtr<Skel> open_load_attach(const std::string& name, const SkeletonOps<Skel>& ops, Configure&& configure,
                                   std::string& error) {
  install_libbpf_log();
  SkeletonPtr<Skel> none(nullptr, ops.destroy);
  if (std::string missing = missing_for_tracing(); !missing.empty()) {
    error = name + ": " + missing;
    return none;
  }
  errno = 0;
  SkeletonPtr<Skel> skel(ops.open(), ops.destroy);
  if (!skel) {
    error = bpf_error(name + ": open", errno ? errno : EINVAL);
    return none;
  }
  configure(*skel);
  if (int err = ops.load(skel.get()); err != 0) {
    error = bpf_error(name + ": load", err);
    return none;
  }
  if (ops.attach != nullptr) {
    if (int err = ops.attach(skel.get()); err != 0) {
      error = bpf_error(name + ": attach", err);
      return none;
    }
  }
  return skel;
}

}  // namespace probes
