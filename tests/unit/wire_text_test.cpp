// Text a peer sent, as logs, events and screens show it (engine/core/wire_text.hpp): control
// characters and bytes outside valid UTF-8 become \xNN, the rest is left as it came.
#include <gtest/gtest.h>

#include <string>

#include "engine/core/target.hpp"
#include "engine/core/wire_text.hpp"

namespace {

using core::display_text;
using core::is_display_safe;

TEST(WireText, SafeTextIsLeftAlone) {
  for (const std::string s : {"", "nqn.2014-08.org.nvmexpress:uuid:0f", "h\xc3\xa9te \xe2\x82\xac \xf0\x9f\x92\xbe",
                              "back\\slash \"quoted\""}) {
    EXPECT_TRUE(is_display_safe(s)) << s;
    EXPECT_EQ(display_text(s), s);
  }
}

TEST(WireText, ControlsAndBytesOutsideUtf8AreEscaped) {
  const std::pair<std::string, std::string> cases[] = {
      {"a\nb", "a\\x0ab"},
      {"\x1b[31mred", "\\x1b[31mred"},
      {"x\xff", "x\\xff"},
      {"del\x7f", "del\\x7f"},
      {"csi\xc2\x9b", "csi\\xc2\\x9b"},             // C1 CSI, in UTF-8: a terminal escape too
      {"cut\xc3", "cut\\xc3"},                      // a sequence cut short
      {"over\xc0\xaf", "over\\xc0\\xaf"},           // an overlong '/'
      {"surrogate\xed\xa0\x80", "surrogate\\xed\\xa0\\x80"},
      {"big\xf4\x90\x80\x80", "big\\xf4\\x90\\x80\\x80"},  // above U+10FFFF
      {std::string("nul\0x", 5), "nul\\x00x"},
  };
  for (const auto& [in, shown] : cases) {
    EXPECT_FALSE(is_display_safe(in)) << shown;
    EXPECT_EQ(display_text(in), shown);
    EXPECT_TRUE(is_display_safe(display_text(in))) << shown;
    EXPECT_EQ(display_text(display_text(in)), display_text(in)) << "escaping twice changes nothing more";
  }
}

// The event log's JSON strings: the same rendering, quoted, and always valid JSON text.
TEST(WireText, JsonStringQuotesTheDisplayedText) {
  EXPECT_EQ(core::json_string("plain"), "\"plain\"");
  EXPECT_EQ(core::json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(core::json_string("x\xff\n"), "\"x\\\\xff\\\\x0a\"");
}

}  // namespace
