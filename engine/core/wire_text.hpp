#pragma once
// Text a peer sent (NQNs from a Connect's data, anything off the wire) on its way to a log line,
// an event or a screen. A host may put any bytes in a 256-byte field: a newline forges a log
// line, an ANSI escape drives the operator's terminal, a byte that is not UTF-8 makes the
// control socket's JSON invalid. One rendering for all of them, used wherever such text is
// shown: TCP, RDMA and the core log through Target::log, the event log through json_string.
#include <cstddef>
#include <string>
#include <string_view>

namespace core {

// The length of the valid UTF-8 sequence (RFC 3629: shortest form, no surrogates, at most
// U+10FFFF) starting at s[i], or 0 when the byte there starts none.
size_t utf8_sequence_length(std::string_view s, size_t i);

// Valid UTF-8 holding no control character (C0, DEL or C1): safe to show as it is.
bool is_display_safe(std::string_view s);

// s with every control character and every byte outside valid UTF-8 written as \xNN; the
// rest (valid UTF-8 text, backslashes included) unchanged, so text that is already safe
// comes back as it was.
std::string display_text(std::string_view s);

}  // namespace core
