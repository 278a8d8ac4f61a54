#pragma once
// Private to data/profile/: how nvmetune's settings and SPDK's RPCs correspond, shared by the
// importer of save_config (import_spdk.cpp) and the exporter for load_config (export_spdk.cpp),
// so a round trip reads what was written.
#include <cstdint>
#include <string_view>

#include "engine/config/config.hpp"

namespace data::spdk {

// SPDK serves discovery as a subsystem of its own; nvmetune serves it without one.
inline constexpr std::string_view discovery_nqn = "nqn.2014-08.org.nvmexpress.discovery";

// A namespace backend and the bdev SPDK serves it from.
struct BdevKind {
  std::string_view backend;      // control::NamespaceConfig::backend.kind
  std::string_view method;       // the "bdev" call that creates it
  std::string_view name_prefix;  // how an export names it: Malloc0n1
};
inline constexpr BdevKind bdev_kinds[] = {
    {"ram", "bdev_malloc_create", "Malloc"}, {"null", "bdev_null_create", "Null"}, {"file", "bdev_aio_create", "AIO"}};

// A bdev call that creates a block device (one with no equivalent is listed by its name); any
// other call of the "bdev" subsystem (bdev_set_options, bdev_raid_set_options, ...) sets
// library options.
inline bool creates_bdev(std::string_view method) {
  if (method.ends_with("_set_options") || method.ends_with("_set_opts")) return false;
  return method.ends_with("_create") || method.ends_with("_attach_controller") || method.starts_with("bdev_lvol_create") ||
         method.ends_with("_construct");
}

// nvmf_create_transport's parameters that are our TCP settings, one for one.
struct TransportField {
  std::string_view key;
  uint32_t control::TcpConfig::*field;
  std::string_view setting;  // its name in a profile's "tcp"
};
inline constexpr TransportField transport_fields[] = {
    {"max_queue_depth", &control::TcpConfig::queue_depth, "queue_depth"},
    {"max_io_qpairs_per_ctrlr", &control::TcpConfig::max_io_queues, "max_io_queues"},
    {"in_capsule_data_size", &control::TcpConfig::in_capsule_data_size, "in_capsule_data_size"},
    {"max_io_size", &control::TcpConfig::mdts_bytes, "mdts_bytes"},
};
// SPDK's sock_priority 0 leaves SO_PRIORITY unset, as our so_priority -1 does.
inline constexpr std::string_view sock_priority_key = "sock_priority";

}  // namespace data::spdk
