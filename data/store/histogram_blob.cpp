// LEB128 varints over the non-zero buckets (see histogram_blob.hpp for the format).
#include "data/store/histogram_blob.hpp"

#include <cstdint>

#include "engine/stats/histogram_layout.hpp"

namespace data {

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace

std::string encode_buckets(const stats::HistogramData& h) {
  std::string out;
  uint64_t next = 0;  // the index a gap of 0 points at
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] == 0) continue;
    put_varint(out, i - next);
    put_varint(out, h.counts[i]);
    next = i + 1;
  }
  return out;
}

bool add_decoded_buckets(std::string_view blob, stats::HistogramData& h) {
  namespace hl = stats::histogram_layout;
  if (h.counts.empty()) h.counts.assign(hl::buckets, 0);
  uint64_t next = 0;
  while (!blob.empty()) {
    uint64_t gap = 0, count = 0;
    if (!get_varint(blob, gap) || !get_varint(blob, count)) return false;
    const uint64_t i = next + gap;
    if (i >= hl::buckets) return false;
    h.counts[i] += count;
    next = i + 1;
  }
  return true;
}

}  // namespace data
