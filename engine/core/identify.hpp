#pragma once
// Identify data structures the admin and discovery controllers return.
#include <cstdint>

namespace core {

class SubmissionQueue;
class Namespace;
class Subsystem;

inline constexpr uint32_t identify_size = 4096;

void fill_identify_controller(const SubmissionQueue& sq, uint8_t* out);
void fill_active_ns_list(const Subsystem& s, uint32_t after_nsid, uint8_t* out);
// Namespace Identification Descriptor list (CNS 03h): EUI-64, NGUID, UUID.
void fill_ns_descriptors(const Namespace& ns, uint8_t* out);

}  // namespace core
