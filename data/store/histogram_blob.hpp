#pragma once
// The stored form of a histogram's buckets: for each non-zero bucket, in index order, a varint
// of the gap from the previous non-zero bucket's index (+1 from -1 at the start) and a varint
// of its count. A latency histogram touches a few dozen of the layout's 1152 buckets, so an
// interval costs tens of bytes instead of 9 KiB.
#include <string>
#include <string_view>

#include "engine/stats/histogram_data.hpp"

namespace data {

std::string encode_buckets(const stats::HistogramData& h);
// Adds the decoded counts into h.counts (resized to the layout when empty). False on a
// malformed blob or an index beyond the layout (h is then unspecified).
bool add_decoded_buckets(std::string_view blob, stats::HistogramData& h);

}  // namespace data
