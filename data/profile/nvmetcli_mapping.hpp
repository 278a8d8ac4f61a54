#pragma once
// Private to data/profile/: the kernel target's configfs names that nvmetcli saves and restores,
// shared by import_nvmetcli.cpp and export_nvmetcli.cpp so a round trip reads what was written.
#include <string_view>

namespace data::nvmetcli {

inline constexpr std::string_view trtype_tcp = "tcp";
inline constexpr std::string_view adrfam_ipv4 = "ipv4";
inline constexpr std::string_view default_trsvcid = "4420";
inline constexpr std::string_view inline_data_size_key = "inline_data_size";  // port param: our tcp.in_capsule_data_size
// treq values that ask for no secure channel.
inline constexpr std::string_view treq_not_specified = "not specified";
inline constexpr std::string_view treq_not_required = "not required";

}  // namespace data::nvmetcli
