#pragma once
// The kernel's CPU bitmap text, as in rps_cpus, xps_cpus and smp_affinity: hex words of 32 CPUs,
// most significant first, separated by commas ("00000000,0000000f" = CPUs 0-3).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sys {

// "00000000,0000000f\n" → {0,1,2,3}; nullopt when the text is not a hex bitmap.
std::optional<std::vector<unsigned>> parse_cpu_mask(std::string_view text);
// cpus as a bitmap of `words` 32-bit words (at least as many as the highest CPU needs), in the
// kernel's format without a newline; {} with words 1 = "00000000".
std::string format_cpu_mask(const std::vector<unsigned>& cpus, size_t words = 1);
// cpus in the shape of a bitmap the kernel printed (same words; the first word as wide as
// there, e.g. "0" on a 2-CPU machine), so a new value reads like the old one.
std::string format_cpu_mask_like(const std::vector<unsigned>& cpus, std::string_view like);

}  // namespace sys
