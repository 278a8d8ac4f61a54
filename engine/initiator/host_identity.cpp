// This machine's host NQN and host identifier (host_identity.hpp).
#include "engine/initiator/host_identity.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <cstdio>
#include <fstream>

namespace initiator {

namespace {

// libnvme's application ID for the host NQN (NVME_HOSTNQN_ID, c7f46181-12be-4932-8c83-106f9dddd86b).
constexpr std::array<uint8_t, 16> libnvme_hostnqn_app_id = {0xc7, 0xf4, 0x61, 0x81, 0x12, 0xbe, 0x49, 0x32,
                                                            0x8c, 0x83, 0x10, 0x6f, 0x9d, 0xdd, 0xd8, 0x6b};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// 32 hex digits (dashes skipped where a UUID has them) into 16 bytes.
std::optional<std::array<uint8_t, 16>> hex_bytes(std::string_view text, bool dashed) {
  std::array<uint8_t, 16> out{};
  size_t digit = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (dashed && (i == 8 || i == 13 || i == 18 || i == 23)) {
      if (text[i] != '-') return std::nullopt;
      continue;
    }
    const int v = hex_value(text[i]);
    if (v < 0 || digit >= 32) return std::nullopt;
    out[digit / 2] = static_cast<uint8_t>(out[digit / 2] << 4 | v);
    ++digit;
  }
  if (digit != 32) return std::nullopt;
  return out;
}

std::string uuid_text(const std::array<uint8_t, 16>& b) {
  char s[37];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
                b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

std::optional<std::string> first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  size_t start = 0;
  while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
  return line.substr(start);
}

}  // namespace

std::optional<std::array<uint8_t, 16>> parse_uuid(std::string_view text) {
  if (text.size() != 36) return std::nullopt;
  return hex_bytes(text, true);
}

std::optional<std::string> hostnqn_from_file(const std::string& path) {
  auto line = first_line(path);
  if (!line || line->rfind("nqn.", 0) != 0) return std::nullopt;
  return line;
}

// systemd's sd_id128_get_machine_app_specific(): HMAC-SHA256(key = machine ID, data = app ID),
// the first 16 bytes made an RFC 4122 version 4 UUID.
std::optional<std::string> hostnqn_from_machine_id(std::string_view machine_id) {
  while (!machine_id.empty() && std::isspace(static_cast<unsigned char>(machine_id.back()))) machine_id.remove_suffix(1);
  if (machine_id.size() != 32) return std::nullopt;
  const auto key = hex_bytes(machine_id, false);
  if (!key) return std::nullopt;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key->data(), static_cast<int>(key->size()), libnvme_hostnqn_app_id.data(),
            libnvme_hostnqn_app_id.size(), mac, &len) || len < 16)
    return std::nullopt;
  std::array<uint8_t, 16> id{};
  std::copy(mac, mac + 16, id.begin());
  id[6] = static_cast<uint8_t>((id[6] & 0x0f) | 0x40);
  id[8] = static_cast<uint8_t>((id[8] & 0x3f) | 0x80);
  return std::string(hostnqn_uuid_prefix) + uuid_text(id);
}

HostIdentity default_host_identity(const HostIdentityPaths& paths) {
  HostIdentity h;
  if (auto nqn = hostnqn_from_file(paths.hostnqn)) {
    h.hostnqn = *nqn;
    h.source = paths.hostnqn;
  } else if (auto id = first_line(paths.machine_id); id && (nqn = hostnqn_from_machine_id(*id))) {
    h.hostnqn = *nqn;
    h.source = paths.machine_id;
  } else {
    h.hostnqn = std::string(hostnqn_uuid_prefix) + "00000000-0000-0000-0000-000000000000";
    h.source = "none (no " + paths.hostnqn + " nor " + paths.machine_id + "): the all-zero UUID";
  }
  if (auto text = first_line(paths.hostid); text && parse_uuid(*text)) h.hostid = *parse_uuid(*text);
  else if (h.hostnqn.rfind(hostnqn_uuid_prefix, 0) == 0)
    if (auto uuid = parse_uuid(std::string_view(h.hostnqn).substr(hostnqn_uuid_prefix.size()))) h.hostid = *uuid;
  return h;
}

}  // namespace initiator
