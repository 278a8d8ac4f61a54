// The control socket: JSON-RPC 2.0 dispatch (every error code), the Unix socket server (file
// mode, peer uid, framing, batches, concurrent clients), and the engine's methods against a
// real Engine on port 0 (bad params change nothing, partial sets merge).
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config/config_json.hpp"
#include "engine/control/engine.hpp"
#include "engine/rpc/json_codec.hpp"
#include "engine/rpc/rpc_methods.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "engine/stats/histogram_layout.hpp"
#include "support/engine_config.hpp"

namespace {

using json = nlohmann::json;
using control::RpcOutcome;
namespace code = control::rpc_code;

constexpr uid_t nobody = 65534;

// ---------------------------------------------------------------- helpers

// A private directory readable by everyone (so the socket file's own mode is what a foreign
// uid meets), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/nvmetune-rpc-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    _path = tmpl;
    chmod(_path.c_str(), 0755);
  }
  ~TempDir() { std::filesystem::remove_all(_path); }
  std::string file(const std::string& name) const { return _path + "/" + name; }

 private:
  std::string _path;
};

int connect_to(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  timeval tv{30, 0};  // a hung server fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// A line-oriented client of the control socket.
class Client {
 public:
  explicit Client(const std::string& path) : _fd(connect_to(path)) {}
  ~Client() {
    if (_fd >= 0) close(_fd);
  }
  bool connected() const { return _fd >= 0; }

  void send_raw(const std::string& text) {
    for (size_t sent = 0; sent < text.size();) {
      const ssize_t n = send(_fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      ASSERT_GT(n, 0) << std::strerror(errno);
      sent += static_cast<size_t>(n);
    }
  }
  void shutdown_write() { shutdown(_fd, SHUT_WR); }

  // The next line; "" at EOF or on a timeout.
  std::string read_line() {
    for (;;) {
      if (auto nl = _buffer.find('\n'); nl != std::string::npos) {
        std::string line = _buffer.substr(0, nl);
        _buffer.erase(0, nl + 1);
        return line;
      }
      char buf[65536];
      const ssize_t n = recv(_fd, buf, sizeof buf, 0);
      if (n <= 0) return {};
      _buffer.append(buf, static_cast<size_t>(n));
    }
  }
  bool at_eof() {
    char c;
    return _buffer.empty() && recv(_fd, &c, 1, 0) == 0;
  }

  json call_raw(const std::string& line) {
    send_raw(line + "\n");
    const std::string response = read_line();
    return response.empty() ? json() : json::parse(response);
  }
  // The whole response of one request.
  json call(const std::string& method, const json& params = nullptr) {
    json req = {{"jsonrpc", "2.0"}, {"id", ++_id}, {"method", method}};
    if (!params.is_null()) req["params"] = params;
    json resp = call_raw(req.dump());
    EXPECT_EQ(resp.value("id", json()), _id) << resp.dump();
    return resp;
  }
  // The result of a request that must succeed.
  json result(const std::string& method, const json& params = nullptr) {
    json resp = call(method, params);
    EXPECT_TRUE(resp.contains("result")) << method << " " << params.dump() << " -> " << resp.dump();
    return resp.value("result", json());
  }

 private:
  int _fd;
  int _id = 0;
  std::string _buffer;
};

int error_code(const json& resp) { return resp.contains("error") ? resp["error"].value("code", 0) : 0; }

// path -> message of an invalid_params error's data.
std::map<std::string, std::string> error_paths(const json& resp) {
  std::map<std::string, std::string> m;
  for (const auto& e : resp["error"].value("data", json::array())) m[e.value("path", "")] = e.value("message", "");
  return m;
}

std::string dump_paths(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [p, msg] : m) s += p + ": " + msg + "\n";
  return s;
}

// A table of test methods.
control::RpcMethodTable test_methods() {
  control::RpcMethodTable t;
  t["echo"] = [](const json& params) { return RpcOutcome::ok(params); };
  t["fail"] = [](const json&) {
    return control::invalid_params({{"params.a", "bad a"}, {"params.b", "bad b"}});
  };
  t["refuse"] = [](const json&) { return control::engine_refused("no way", {{"params.x", "cannot"}}); };
  t["throw"] = [](const json&) -> RpcOutcome { throw std::runtime_error("boom"); };
  t["slow"] = [](const json& params) {
    std::this_thread::sleep_for(std::chrono::milliseconds(params.value("ms", 10)));
    return RpcOutcome::ok(params);
  };
  t["throw_int"] = [](const json&) -> RpcOutcome { throw 42; };
  // Bytes a peer sent, quoted back as they came: not UTF-8, an ANSI escape, a newline.
  t["raw_bytes"] = [](const json&) { return RpcOutcome::ok(std::string("nqn.\xff\x1b[31mred\nforged")); };
  t["bytes"] = [](const json& params) { return RpcOutcome::ok(std::string(params.value("n", 0), 'b')); };
  return t;
}

json handle(const std::string& line) {
  auto out = control::rpc_handle_line(test_methods(), line);
  return out ? json::parse(*out) : json();
}

// ---------------------------------------------------------------- dispatch

TEST(RpcDispatch, ResultEchoesTheId) {
  for (const json& id : {json(1), json("abc"), json(nullptr), json(-7)}) {
    json r = handle(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "echo"}, {"params", {{"x", 1}}}}.dump());
    EXPECT_EQ(r["jsonrpc"], "2.0");
    EXPECT_EQ(r["id"], id);
    EXPECT_EQ(r["result"], (json{{"x", 1}}));
    EXPECT_FALSE(r.contains("error"));
  }
}

TEST(RpcDispatch, ParseError) {
  for (const char* line : {"{", "not json", R"({"jsonrpc": "2.0", "method": "echo", "id": 1)", "[1,"}) {
    json r = handle(line);
    EXPECT_EQ(error_code(r), code::parse_error) << line;
    EXPECT_TRUE(r["id"].is_null());
    EXPECT_NE(r["error"]["message"].get<std::string>().find("parse error"), std::string::npos);
  }
}

TEST(RpcDispatch, InvalidRequest) {
  const std::pair<const char*, const char*> cases[] = {
      {"1", "expected a request object"},
      {R"("text")", "expected a request object"},
      {R"({"id": 1, "method": "echo"})", "\"jsonrpc\" must be \"2.0\""},
      {R"({"jsonrpc": "1.0", "id": 1, "method": "echo"})", "\"jsonrpc\" must be \"2.0\""},
      {R"({"jsonrpc": "2.0", "id": 1})", "missing \"method\""},
      {R"({"jsonrpc": "2.0", "id": 1, "method": 5})", "\"method\" must be a string"},
      {R"({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": "x"})", "\"params\" must be an object or an array"},
      {R"({"jsonrpc": "2.0", "id": {"a": 1}, "method": "echo"})", "\"id\" must be"},
      {"[]", "empty batch"},
  };
  for (const auto& [line, fragment] : cases) {
    json r = handle(line);
    EXPECT_EQ(error_code(r), code::invalid_request) << line << " -> " << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r.dump();
  }
  // A valid id is kept even when the rest is invalid.
  EXPECT_EQ(handle(R"({"jsonrpc": "1.0", "id": 9, "method": "echo"})")["id"], 9);
}

TEST(RpcDispatch, MethodNotFoundNamesTheMethod) {
  json r = handle(R"({"jsonrpc": "2.0", "id": 1, "method": "threading.st"})");
  EXPECT_EQ(error_code(r), code::method_not_found);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("\"threading.st\""), std::string::npos) << r.dump();
  EXPECT_EQ(r["error"]["data"]["method"], "threading.st");
  EXPECT_NE(std::find(r["error"]["data"]["available"].begin(), r["error"]["data"]["available"].end(), "echo"),
            r["error"]["data"]["available"].end());
}

TEST(RpcDispatch, InvalidParamsCarriesEveryPath) {
  json r = handle(R"({"jsonrpc": "2.0", "id": 1, "method": "fail"})");
  EXPECT_EQ(error_code(r), code::invalid_params);
  auto m = error_paths(r);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m["params.a"], "bad a");
  EXPECT_EQ(m["params.b"], "bad b");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("params.a: bad a (and 1 more)"), std::string::npos);
}

TEST(RpcDispatch, EngineRefusedAndInternalError) {
  json r = handle(R"({"jsonrpc": "2.0", "id": 1, "method": "refuse"})");
  EXPECT_EQ(error_code(r), code::engine_refused);
  EXPECT_EQ(error_paths(r)["params.x"], "cannot");
  r = handle(R"({"jsonrpc": "2.0", "id": 2, "method": "throw"})");
  EXPECT_EQ(error_code(r), code::internal_error);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("throw: boom"), std::string::npos);
}

// A method that throws what is not a std::exception, and a result holding bytes that are not
// UTF-8 (json::dump throws type_error 316 on them), each get an answer that is valid JSON.
TEST(RpcDispatch, NoExceptionLeavesALine) {
  std::optional<std::string> out;
  ASSERT_NO_THROW(out = control::rpc_handle_line(test_methods(), R"({"jsonrpc": "2.0", "id": 1, "method": "throw_int"})"));
  ASSERT_TRUE(out);
  json r = json::parse(*out);
  EXPECT_EQ(error_code(r), code::internal_error) << r.dump();
  EXPECT_EQ(r["id"], 1);
  ASSERT_NO_THROW(out = control::rpc_handle_line(test_methods(), R"({"jsonrpc": "2.0", "id": 2, "method": "raw_bytes"})"));
  ASSERT_TRUE(out);
  EXPECT_EQ(out->find('\n'), std::string::npos) << "a response is one line";
  r = json::parse(*out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << "not JSON: " << *out;
  EXPECT_EQ(r["id"], 2);
}

// 200,000 levels of nesting (a 400 KB line, under the 1 MiB line limit) are refused before
// parsing: as params, copying them for the method (and echoing them) overflowed the stack.
TEST(RpcDispatch, DeepNestingIsAParseError) {
  constexpr size_t levels = 200'000;
  const std::string deep = std::string(levels, '[') + std::string(levels, ']');
  const std::string lines[] = {deep, R"({"jsonrpc":"2.0","id":1,"method":"echo","params":)" + deep + "}",
                               R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":)" + std::string(levels, '{') + "}"};
  for (const auto& line : lines) {
    json r = handle(line);
    EXPECT_EQ(error_code(r), code::parse_error) << r.dump().substr(0, 200);
    EXPECT_NE(r["error"]["message"].get<std::string>().find("nested deeper than"), std::string::npos) << r.dump().substr(0, 200);
  }
  // Brackets inside strings are text, and nesting within the limit is served.
  const std::string text = std::string(100, '[') + "\\\"]";  // [[...[\"] in JSON: an escaped quote
  json ok = handle(R"({"jsonrpc":"2.0","id":2,"method":"echo","params":[[[[")" + text + R"("]]]]})");
  EXPECT_EQ(ok["result"][0][0][0][0], std::string(100, '[') + "\"]") << ok.dump();
}

// A batch has at most max_batch requests (a longer one runs none), and a line's responses at
// most max_response_bytes: past it a request is answered response_too_large, the rest not run.
TEST(RpcDispatch, BatchCountAndResponseBytesAreCapped) {
  std::atomic<int> runs{0};
  auto methods = test_methods();
  methods["bytes"] = [&runs, inner = methods["bytes"]](const json& p) { ++runs; return inner(p); };
  control::RpcLimits limits;
  limits.max_batch = 4;
  limits.max_response_bytes = 1000;
  const auto request = [](int id, int n) { return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "bytes"}, {"params", {{"n", n}}}}; };

  json five = json::array();
  for (int i = 1; i <= 5; ++i) five.push_back(request(i, 1));
  auto out = control::rpc_handle_line(methods, five.dump(), limits);
  ASSERT_TRUE(out);
  json r = json::parse(*out);
  EXPECT_EQ(error_code(r), code::invalid_request) << r.dump();
  EXPECT_NE(r["error"]["message"].get<std::string>().find("at most 4"), std::string::npos) << r.dump();
  EXPECT_EQ(runs.load(), 0) << "a refused batch runs nothing";

  json four = json::array({request(1, 400), request(2, 400), request(3, 400), request(4, 1)});
  out = control::rpc_handle_line(methods, four.dump(), limits);
  ASSERT_TRUE(out);
  constexpr size_t short_error = 300;  // what each request past the limit costs instead
  EXPECT_LE(out->size(), limits.max_response_bytes + 2 * short_error);
  r = json::parse(*out);
  ASSERT_EQ(r.size(), 4u) << r.dump();
  EXPECT_EQ(r[0]["result"].get<std::string>().size(), 400u);
  EXPECT_EQ(r[1]["result"].get<std::string>().size(), 400u);
  for (int i : {2, 3}) {
    EXPECT_EQ(error_code(r[i]), code::response_too_large) << r[i].dump();
    EXPECT_EQ(r[i]["id"], i + 1);
  }
  EXPECT_EQ(runs.load(), 3) << "the request after the one that reached the limit is not run";

  out = control::rpc_handle_line(methods, request(9, 5000).dump(), limits);
  ASSERT_TRUE(out);
  r = json::parse(*out);
  EXPECT_EQ(error_code(r), code::response_too_large) << r.dump();
  EXPECT_EQ(r["id"], 9);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("limit of 1000 bytes"), std::string::npos) << r.dump();
}

TEST(RpcDispatch, NotificationsGetNoResponse) {
  EXPECT_FALSE(control::rpc_handle_line(test_methods(), R"({"jsonrpc": "2.0", "method": "echo"})"));
  EXPECT_FALSE(control::rpc_handle_line(test_methods(), R"({"jsonrpc": "2.0", "method": "nope"})"));
  EXPECT_FALSE(control::rpc_handle_line(test_methods(),
                                        R"([{"jsonrpc": "2.0", "method": "echo"}, {"jsonrpc": "2.0", "method": "fail"}])"));
}

TEST(RpcDispatch, BatchAnswersEachRequestInOrder) {
  json r = handle(R"([
    {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": [1]},
    {"jsonrpc": "2.0", "method": "echo"},
    {"jsonrpc": "2.0", "id": 2, "method": "nope"},
    7,
    {"jsonrpc": "2.0", "id": 3, "method": "fail"}
  ])");
  ASSERT_TRUE(r.is_array()) << r.dump();
  ASSERT_EQ(r.size(), 4u) << r.dump();
  EXPECT_EQ(r[0]["id"], 1);
  EXPECT_EQ(r[0]["result"], json::array({1}));
  EXPECT_EQ(error_code(r[1]), code::method_not_found);
  EXPECT_EQ(error_code(r[2]), code::invalid_request);
  EXPECT_TRUE(r[2]["id"].is_null());
  EXPECT_EQ(error_code(r[3]), code::invalid_params);
}

// ---------------------------------------------------------------- JSON encodings

stats::HistogramData sample_histogram() {
  stats::HistogramData h;
  h.counts.assign(stats::histogram_layout::buckets, 0);
  for (uint64_t ns : {500u, 1200u, 1300u, 40'000u, 2'000'000u}) {
    ++h.counts[stats::histogram_layout::bucket_of(ns)];
    ++h.count;
    h.sum_ns += ns;
  }
  h.min_ns = 500;
  h.max_ns = 2'000'000;
  return h;
}

TEST(JsonCodec, HistogramPercentilesAndBucketsRoundTrip) {
  const auto h = sample_histogram();
  json j = control::histogram_json(h);
  EXPECT_EQ(j["count"], 5);
  EXPECT_EQ(j["min_ns"], 500);
  EXPECT_EQ(j["max_ns"], 2'000'000);
  EXPECT_EQ(j["mean_ns"], (500 + 1200 + 1300 + 40'000 + 2'000'000) / 5);
  EXPECT_EQ(j["p50_ns"], std::llround(h.percentile(50)));
  EXPECT_EQ(j["p99_9_ns"], std::llround(h.percentile(99.9)));
  EXPECT_FALSE(j.contains("buckets"));

  j = control::histogram_json(h, true);
  ASSERT_EQ(j["buckets"].size(), 5u) << j.dump();  // five values, five sub-buckets
  for (const auto& b : j["buckets"]) EXPECT_LT(b[0].get<uint64_t>(), b[1].get<uint64_t>());
  const auto back = control::histogram_from_json(j);
  EXPECT_EQ(back.counts, h.counts);
  EXPECT_EQ(back.count, h.count);
  EXPECT_EQ(back.sum_ns, h.sum_ns);
  EXPECT_DOUBLE_EQ(back.percentile(90), h.percentile(90));
  EXPECT_TRUE(control::histogram_from_json(control::histogram_json(h)).counts.empty());
}

TEST(JsonCodec, SnapshotEventAndThread) {
  stats::Snapshot s;
  s.seq = 3;
  s.interval_ns = 500'000'000;
  s.mode = "poll";
  s.total.commands = 1000;
  s.total.read_bytes = 1u << 20;
  s.total.queue_wait = sample_histogram();
  stats::QueueRow q;
  q.queue_id = 7;
  q.qid = 1;
  q.subnqn = "nqn.x:y";
  q.worker = 0;
  s.queues.push_back(q);
  stats::WorkerRow w;
  w.index = 0;
  w.cpus_allowed = {0, 1};
  w.cpu_ns = 250'000'000;
  s.workers.push_back(w);
  json j = control::snapshot_json(s);
  EXPECT_EQ(j["iops"], 2000);
  EXPECT_DOUBLE_EQ(j["read_mib_s"].get<double>(), 2.0);
  EXPECT_EQ(j["total"]["queue_wait"]["count"], 5);
  EXPECT_EQ(j["queues"][0]["queue_id"], 7);
  EXPECT_EQ(j["queues"][0]["subnqn"], "nqn.x:y");
  EXPECT_EQ(j["workers"][0]["cpus_allowed"], "0-1");
  EXPECT_DOUBLE_EQ(j["workers"][0]["busy_pct"].get<double>(), 50.0);
  EXPECT_TRUE(control::snapshot_json(s, true)["total"]["queue_wait"].contains("buckets"));

  json e = control::event_json({4, 123, "threading", R"({"mode": "poll"})"});
  EXPECT_EQ(e["detail"]["mode"], "poll");
  EXPECT_EQ(control::event_json({5, 124, "note", "not json"})["detail"], "not json");

  json t = control::thread_json({static_cast<int>(gettid()), "me", "test", {}});
  EXPECT_EQ(t["cpus"], "all");
  EXPECT_TRUE(t["cpus_allowed"].is_string()) << t.dump();
}

// ---------------------------------------------------------------- the socket

class RpcSocket : public testing::Test {
 protected:
  void SetUp() override {
    control::RpcServerOptions o;
    o.path = dir.file("ctl.sock");
    o.log = [this](std::string_view line) {
      std::lock_guard lk(log_mutex);
      log += std::string(line) + "\n";
    };
    options = o;
  }
  void start(control::RpcMethodTable methods = test_methods()) {
    server = std::make_unique<control::RpcServer>(std::move(methods), options);
    ASSERT_EQ(server->start(), "");
  }
  std::string log_text() {
    std::lock_guard lk(log_mutex);
    return log;
  }

  TempDir dir;
  control::RpcServerOptions options;
  std::unique_ptr<control::RpcServer> server;
  std::mutex log_mutex;
  std::string log;
};

TEST_F(RpcSocket, FileModeIs0600AndStopRemovesIt) {
  start();
  struct stat st {};
  ASSERT_EQ(stat(options.path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  server->stop();
  EXPECT_NE(stat(options.path.c_str(), &st), 0);
}

TEST_F(RpcSocket, FileModeIsConfigurable) {
  options.mode = 0660;
  const mode_t before = umask(0);
  umask(before);
  start();
  struct stat st {};
  ASSERT_EQ(stat(options.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(umask(before), before) << "start() must restore the umask";
}

TEST_F(RpcSocket, CreatesAMissingParentDirectoryPrivately) {
  options.path = dir.file("sub/ctl.sock");
  start();
  struct stat st {};
  ASSERT_EQ(stat(dir.file("sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  Client c(options.path);
  EXPECT_EQ(c.result("echo", {{"a", 1}}), (json{{"a", 1}}));
}

TEST_F(RpcSocket, RequestsAndEveryErrorCodeOverTheSocket) {
  start();
  Client c(options.path);
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(c.result("echo", {{"a", 1}}), (json{{"a", 1}}));
  EXPECT_EQ(error_code(c.call_raw("{oops")), code::parse_error);
  EXPECT_EQ(error_code(c.call_raw(R"({"jsonrpc": "2.0", "id": 1})")), code::invalid_request);
  EXPECT_EQ(error_code(c.call("nope")), code::method_not_found);
  EXPECT_EQ(error_code(c.call("fail")), code::invalid_params);
  EXPECT_EQ(error_code(c.call("refuse")), code::engine_refused);
  EXPECT_EQ(error_code(c.call("throw")), code::internal_error);
  EXPECT_EQ(c.result("echo", json::array({2})), json::array({2}));  // the connection survives errors
}

TEST_F(RpcSocket, PipelinedLinesBatchesAndBlankLines) {
  start();
  Client c(options.path);
  c.send_raw(
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[1]}\n"
      "\n  \r\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\"}\n"
      "[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\"},{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}]\r\n"
      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"echo\",\"params\":[4]}\n");
  json first = json::parse(c.read_line());
  EXPECT_EQ(first["id"], 1);
  json batch = json::parse(c.read_line());
  ASSERT_TRUE(batch.is_array());
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0]["id"], 2);
  EXPECT_EQ(error_code(batch[1]), code::method_not_found);
  EXPECT_EQ(json::parse(c.read_line())["id"], 4);
}

TEST_F(RpcSocket, LastUnterminatedLineIsServedAfterShutdown) {
  start();
  Client c(options.path);
  c.send_raw(R"({"jsonrpc":"2.0","id":"z","method":"echo","params":{"k":true}})");
  c.shutdown_write();
  json r = json::parse(c.read_line());
  EXPECT_EQ(r["id"], "z");
  EXPECT_TRUE(c.at_eof());
}

TEST_F(RpcSocket, OversizedLineIsRefusedAndDisconnected) {
  options.max_line_bytes = 1024;
  start();
  Client c(options.path);
  c.send_raw(std::string(4096, ' ') + "x");
  json r = json::parse(c.read_line());
  EXPECT_EQ(error_code(r), code::invalid_request);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("longer than 1024 bytes"), std::string::npos);
  EXPECT_TRUE(c.at_eof());
}

TEST_F(RpcSocket, ConcurrentClients) {
  start();
  constexpr int clients = 8, requests = 50;
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      Client c(options.path);
      for (int i = 0; i < requests; ++i) {
        json params = {{"client", t}, {"i", i}, {"ms", i % 10 == 0 ? 1 : 0}};
        json r = c.call(i % 2 ? "echo" : "slow", params);
        if (r.value("result", json()) == params) ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), clients * requests);
}

// Over the socket, a throwing method and a result that is not UTF-8 are answered, and the
// connection (and the server) go on: before, either ended the process (terminate, exit 134).
TEST_F(RpcSocket, ExceptionsAndBadBytesLeaveTheServerServing) {
  start();
  Client c(options.path);
  EXPECT_EQ(error_code(c.call("throw_int")), code::internal_error);
  const json r = c.call("raw_bytes");
  EXPECT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(c.result("echo", {{"after", true}}), (json{{"after", true}}));
  Client other(options.path);
  EXPECT_EQ(other.result("echo", {{"b", 2}}), (json{{"b", 2}}));
}

TEST_F(RpcSocket, DeepNestingOverTheSocketThenTheNextRequest) {
  start();
  Client c(options.path);
  constexpr size_t levels = 200'000;
  const json r = c.call_raw(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":)" + std::string(levels, '[') +
                            std::string(levels, ']') + "}");
  EXPECT_EQ(error_code(r), code::parse_error) << r.dump().substr(0, 200);
  EXPECT_EQ(c.result("echo", {{"a", 1}}), (json{{"a", 1}}));
}

// A slow method on one connection does not hold up a quick one on another (the server served
// every connection from one thread: the quick call waited out the slow one). Methods not named
// concurrent still run one at a time, as threading.set's get-merge-set needs.
TEST_F(RpcSocket, ASlowCallDoesNotHoldUpOtherConnections) {
  constexpr auto slow = std::chrono::milliseconds(3000);
  constexpr auto bound = std::chrono::milliseconds(1000);  // generous beside the slow call's 3 s
  std::atomic<int> running{0}, most{0};
  auto methods = test_methods();
  methods["exclusive"] = [&](const json&) {
    const int now = ++running;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    --running;
    return RpcOutcome::ok(true);
  };
  options.concurrent = {"echo"};
  start(methods);
  Client a(options.path), b(options.path);
  std::thread slow_call([&] { EXPECT_TRUE(a.call("slow", {{"ms", slow.count()}}).contains("result")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the slow call is running
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(b.result("echo", {{"quick", 1}}), (json{{"quick", 1}}));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(waited, bound) << "the quick call waited "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms";
  slow_call.join();

  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i)
    callers.emplace_back([&] {
      Client c(options.path);
      EXPECT_EQ(c.result("exclusive"), json(true));
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(most.load(), 1) << "methods not named concurrent ran beside each other";
}

TEST_F(RpcSocket, TooManyClientsAreRefused) {
  options.max_clients = 2;
  start();
  Client a(options.path), b(options.path);
  EXPECT_EQ(a.result("echo", {{"a", 1}}), (json{{"a", 1}}));
  EXPECT_EQ(b.result("echo", {{"b", 1}}), (json{{"b", 1}}));
  Client c(options.path);
  json r = json::parse(c.read_line());
  EXPECT_EQ(error_code(r), code::too_many_clients);
  EXPECT_TRUE(c.at_eof());
}

TEST_F(RpcSocket, StaleSocketIsReplacedLiveOneIsNot) {
  start();
  control::RpcServer second(test_methods(), options);
  const std::string err = second.start();
  EXPECT_NE(err.find("in use by another running server"), std::string::npos) << err;
  Client still(options.path);
  EXPECT_TRUE(still.result("echo", json::array()).is_array());  // the first one still serves

  // A socket file nobody listens on (a crashed server) is replaced.
  server.reset();
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, options.path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);  // the file stays, nobody listens
  start();
  Client c(options.path);
  EXPECT_TRUE(c.result("echo", json::array()).is_array());

  // Something that is not a socket is never removed.
  server.reset();
  options.path = dir.file("plain");
  { std::FILE* f = std::fopen(options.path.c_str(), "w"); std::fclose(f); }
  control::RpcServer third(test_methods(), options);
  EXPECT_NE(third.start().find("is not a socket"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(options.path));
}

// Forks a child that becomes uid/gid nobody and connects to path. The child's exit status:
// 0 connected and got an access_denied line then EOF; 10+errno connect failed; 2 no error line;
// 3 no EOF after it; 4 could not drop privileges.
int connect_as_nobody(const std::string& path) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(nobody, nobody, nobody) != 0 || setresuid(nobody, nobody, nobody) != 0)
      _exit(4);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(10 + errno);
    const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}\n";
    [[maybe_unused]] auto sent = send(fd, req, sizeof req - 1, MSG_NOSIGNAL);
    char buf[4096] = {};
    size_t got = 0;
    for (ssize_t n; got < sizeof buf - 1 && (n = recv(fd, buf + got, sizeof buf - 1 - got, 0)) > 0;) got += static_cast<size_t>(n);
    // recv returned 0 (EOF) or the buffer filled: an error line and nothing else is expected.
    if (!std::strstr(buf, "\"code\":-32001") || std::strstr(buf, "\"result\"")) _exit(2);
    if (buf[got - 1] != '\n') _exit(3);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(RpcSocket, OtherUsersAreRefusedByFileModeAndByPeerCredentials) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become uid " << nobody;
  start();
  // The file mode: connect() itself fails.
  EXPECT_EQ(connect_as_nobody(options.path), 10 + EACCES);

  // SO_PEERCRED: with the file opened up, the server still refuses uid nobody, with an error
  // line, a disconnect and a log line naming the uid.
  ASSERT_EQ(chmod(options.path.c_str(), 0666), 0);
  EXPECT_EQ(connect_as_nobody(options.path), 0);
  EXPECT_NE(log_text().find("refused a connection from uid 65534"), std::string::npos) << log_text();

  // The owner is still served.
  Client c(options.path);
  EXPECT_EQ(c.result("echo", {{"ok", true}}), (json{{"ok", true}}));
}

// ---------------------------------------------------------------- the engine's methods

constexpr const char* nqn = "nqn.2026-12.io.nvmetune:rpc-test";

control::Config engine_config() {
  auto c = test_support::one_namespace_config(nqn, {.kind = "ram", .size_bytes = 8u << 20});
  c.threading.threads = 1;
  // Not Config's defaults, so rdma.get shows what the engine started with (no RDMA listener:
  // the section is carried all the same).
  c.rdma.use_srq = true;
  c.rdma.srq_size = 256;
  c.rdma.data_pool_bytes = 64u << 20;
  c.rdma.comp_vector = 1;
  return c;
}

class RpcEngine : public testing::Test {
 protected:
  void SetUp() override {
    engine = std::make_unique<engine::Engine>(engine_config());
    auto errors = engine->start();
    ASSERT_TRUE(errors.empty()) << errors.front().path << ": " << errors.front().message;
    control::RpcServerOptions o;
    o.path = dir.file("engine.sock");
    server = std::make_unique<control::RpcServer>(control::make_engine_methods(*engine, {"test-version", o.path}), o);
    ASSERT_EQ(server->start(), "");
    client = std::make_unique<Client>(o.path);
    ASSERT_TRUE(client->connected());
  }
  void TearDown() override {
    client.reset();
    server.reset();
    if (engine) engine->stop();
  }

  TempDir dir;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<control::RpcServer> server;
  std::unique_ptr<Client> client;
};

TEST_F(RpcEngine, InfoNamesVersionAndListeners) {
  json info = client->result("engine.info");
  EXPECT_EQ(info["version"], "test-version");
  EXPECT_EQ(info["pid"], getpid());
  EXPECT_TRUE(info["running"].get<bool>());
  ASSERT_EQ(info["listeners"].size(), 1u);
  EXPECT_NE(info["listeners"][0]["trsvcid"], "0");
  EXPECT_TRUE(info["uptime_s"].is_number_unsigned());
  EXPECT_EQ(error_code(client->call("engine.info", {{"verbose", true}})), code::invalid_params);
}

TEST_F(RpcEngine, ThreadingGetMatchesTheEngine) {
  EXPECT_EQ(client->result("threading.get"), control::to_json(engine->threading()));
  EXPECT_EQ(client->result("threading.get")["threads"], 1);
}

TEST_F(RpcEngine, BadThreadingSetReportsEveryFieldAndChangesNothing) {
  const json before = client->result("threading.get");
  const unsigned offline = sys::online_cpus().back() + 1;
  json r = client->call("threading.set", {{"mode", "warp"},
                                          {"threads", 5000},
                                          {"cpumask", std::to_string(offline)},
                                          {"strict", "yes"},
                                          {"idle_poll_us", -1},
                                          {"priority", "rt"},
                                          {"warp_factor", 9}});
  EXPECT_EQ(error_code(r), code::invalid_params) << r.dump();
  auto m = error_paths(r);
  const std::vector<std::string> expected = {"params.mode",   "params.threads",  "params.cpumask",    "params.strict",
                                             "params.idle_poll_us", "params.priority", "params.warp_factor"};
  for (const auto& path : expected) EXPECT_TRUE(m.count(path)) << path << " missing:\n" << dump_paths(m);
  EXPECT_EQ(m.size(), expected.size()) << dump_paths(m);
  EXPECT_NE(m["params.mode"].find("\"warp\""), std::string::npos);
  EXPECT_NE(m["params.cpumask"].find("CPU " + std::to_string(offline) + " is not online"), std::string::npos)
      << m["params.cpumask"];
  EXPECT_EQ(client->result("threading.get"), before);

  // Wrong shapes are invalid params too, and change nothing.
  for (const json& params : {json(nullptr), json::array({1}), json{{"cpumask", ""}}}) {
    EXPECT_EQ(error_code(client->call("threading.set", params)), code::invalid_params) << params.dump();
    EXPECT_EQ(client->result("threading.get"), before);
  }
}

TEST_F(RpcEngine, PartialThreadingSetMerges) {
  const json before = client->result("threading.get");
  json after = client->result("threading.set", {{"idle_poll_us", 250}});
  json expected = before;
  expected["idle_poll_us"] = 250;
  EXPECT_EQ(after, expected);
  EXPECT_EQ(client->result("threading.get"), expected);
  EXPECT_EQ(engine->threading().idle_poll_us, 250u);
  // Setting the same value again is a no-op that still answers the state.
  EXPECT_EQ(client->result("threading.set", json::object()), expected);
}

TEST_F(RpcEngine, BadBudgetsSetChangesNothing) {
  const json before = client->result("budgets.get");
  json r = client->call("budgets.set", {{"recv_pdus", 0}, {"send_pdus", "8"}, {"ops_per_pass", 32},
                                        {"bytes_per_pass", "1GB"}, {"reap_batch", 5000}});
  EXPECT_EQ(error_code(r), code::invalid_params);
  auto m = error_paths(r);
  EXPECT_EQ(m.size(), 4u) << dump_paths(m);
  for (const char* path : {"params.recv_pdus", "params.send_pdus", "params.bytes_per_pass", "params.reap_batch"})
    EXPECT_TRUE(m.count(path)) << path << "\n" << dump_paths(m);
  EXPECT_EQ(client->result("budgets.get"), before);  // ops_per_pass was valid, yet unchanged
  EXPECT_EQ(before["ops_per_pass"], 64);
}

TEST_F(RpcEngine, PartialBudgetsSetMergesAndBecomesAnEvent) {
  const uint64_t last = client->result("events.get")["last_seq"];
  json after = client->result("budgets.set", {{"recv_pdus", 16}, {"bytes_per_pass", "256K"}});
  EXPECT_EQ(after["recv_pdus"], 16);
  EXPECT_EQ(after["bytes_per_pass"], 256 * 1024);
  EXPECT_EQ(after["send_pdus"], 64);
  EXPECT_EQ(client->result("budgets.get"), after);
  EXPECT_EQ(engine->budgets().recv_pdus, 16u);

  json events = client->result("events.get", {{"after", last}})["events"];
  bool seen = false;
  for (const auto& e : events) {
    EXPECT_GT(e["seq"].get<uint64_t>(), last);
    EXPECT_GT(e["time_ns"].get<int64_t>(), 0);
    seen = seen || e["kind"] == "budgets";
  }
  EXPECT_TRUE(seen) << "no \"budgets\" event after budgets.set: " << events.dump();
}

TEST_F(RpcEngine, EventsGetParams) {
  json r = client->result("events.get", {{"after", 0}, {"max", 1}});
  EXPECT_LE(r["events"].size(), 1u);
  auto m = error_paths(client->call("events.get", {{"max", 0}, {"after", -1}, {"limit", 3}}));
  EXPECT_EQ(m.size(), 3u) << dump_paths(m);
  EXPECT_TRUE(m.count("params.max"));
  EXPECT_TRUE(m.count("params.after"));
  EXPECT_TRUE(m.count("params.limit"));
}

// An event whose detail is not JSON and not UTF-8 (as a Connect's raw host NQN once made it):
// events.get answers with valid JSON, escaped, and the next request is served. Before, the
// dump threw type_error 316 out of the control thread: terminate.
TEST_F(RpcEngine, EventsGetSurvivesBytesThatAreNotUtf8) {
  const std::string raw = "{\"hostnqn\":\"nqn.\xff\x1b[31mred\nconnect: forged\"}";
  const uint64_t seq = engine->record_event("connect", raw).seq;
  const json r = client->result("events.get", {{"after", seq - 1}});
  ASSERT_EQ(r["events"].size(), 1u) << r.dump();
  const std::string shown = r["events"][0]["detail"].dump();
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_NE(shown.find("\\\\x1b"), std::string::npos) << "the escape is shown as \\x1b: " << shown;
  EXPECT_EQ(client->result("engine.info")["version"], "test-version");
}

TEST_F(RpcEngine, SubsystemsListAddAndNamespaces) {
  json list = client->result("subsystems.list");
  ASSERT_EQ(list["subsystems"].size(), 1u);
  EXPECT_EQ(list["subsystems"][0]["nqn"], nqn);
  EXPECT_EQ(list["subsystems"][0]["namespaces"][0]["nsid"], 1);
  EXPECT_EQ(list["listeners"].size(), 1u);

  // Every bad field of a new subsystem at once.
  json r = client->call("subsystems.add", {{"nqn", "bad"}, {"hosts", {"nqn.h:1", "x"}},
                                           {"namespaces", {{{"nsid", 0}, {"backend", "tape"}}}}});
  auto m = error_paths(r);
  EXPECT_EQ(error_code(r), code::invalid_params);
  for (const char* path : {"params.nqn", "params.hosts[1]", "params.namespaces[0].nsid", "params.namespaces[0].backend"})
    EXPECT_TRUE(m.count(path)) << path << "\n" << dump_paths(m);
  EXPECT_EQ(error_paths(client->call("subsystems.add", {{"nqn", nqn}})).count("params.nqn"), 1u);
  EXPECT_EQ(client->result("subsystems.list")["subsystems"].size(), 1u);

  const std::string other = "nqn.2026-12.io.nvmetune:rpc-other";
  json added = client->result("subsystems.add", {{"nqn", other}, {"allow_any_host", true},
                                                 {"namespaces", {{{"nsid", 1}, {"backend", "null"}, {"size", "1MiB"}}}}});
  EXPECT_EQ(added["nqn"], other);
  EXPECT_EQ(client->result("subsystems.list")["subsystems"].size(), 2u);

  // namespaces.add: params are the subsystem and the namespace's own keys.
  r = client->call("namespaces.add", {{"nsid", 2}, {"backend", "ram"}, {"size", 1000}, {"colour", 1}});
  m = error_paths(r);
  EXPECT_EQ(error_code(r), code::invalid_params);
  for (const char* path : {"params.subnqn", "params.size", "params.colour"})
    EXPECT_TRUE(m.count(path)) << path << "\n" << dump_paths(m);
  EXPECT_TRUE(error_paths(client->call("namespaces.add", {{"subnqn", "nqn.x:none"}, {"nsid", 2}, {"backend", "null"},
                                                          {"size", "1MiB"}}))
                  .count("params.subnqn"));
  json ns = client->result("namespaces.add", {{"subnqn", nqn}, {"nsid", 2}, {"backend", "null"}, {"size", "1MiB"}});
  EXPECT_EQ(ns["namespace"]["nsid"], 2);
  list = client->result("subsystems.list");
  EXPECT_EQ(list["subsystems"][0]["namespaces"].size(), 2u) << "subsystems.list must show the added namespace";
  r = client->call("namespaces.add", {{"subnqn", nqn}, {"nsid", 2}, {"backend", "null"}, {"size", "1MiB"}});
  EXPECT_EQ(error_paths(r).count("params.nsid"), 1u) << r.dump();

  // The engine refuses what validation cannot know: a file that is not there.
  r = client->call("namespaces.add", {{"subnqn", nqn}, {"nsid", 3}, {"backend", "file"}, {"path", dir.file("absent.img")}});
  EXPECT_EQ(error_code(r), code::engine_refused) << r.dump();

  EXPECT_EQ(client->result("namespaces.remove", {{"subnqn", nqn}, {"nsid", 2}})["removed"], true);
  EXPECT_EQ(client->result("subsystems.list")["subsystems"][0]["namespaces"].size(), 1u)
      << "subsystems.list must drop the removed namespace";
  EXPECT_EQ(error_code(client->call("namespaces.remove", {{"subnqn", nqn}, {"nsid", 2}})), code::engine_refused);
  m = error_paths(client->call("namespaces.remove", {{"subnqn", 5}}));
  EXPECT_TRUE(m.count("params.subnqn") && m.count("params.nsid")) << dump_paths(m);
}

TEST_F(RpcEngine, StatsGetHasPercentilesAndOptionalBuckets) {
  json s = client->result("stats.get");
  for (const char* key : {"seq", "time_ns", "interval_ns", "mode", "iops", "total", "queues", "workers"})
    EXPECT_TRUE(s.contains(key)) << key;
  for (const char* hist : {"queue_wait", "read_latency", "write_latency", "other_latency", "backend_latency"}) {
    const json& h = s["total"][hist];
    for (const char* key : {"count", "min_ns", "max_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns"})
      EXPECT_TRUE(h.contains(key)) << hist << "." << key;
    EXPECT_FALSE(h.contains("buckets"));
  }
  json with = client->result("stats.get", {{"histograms", true}});
  EXPECT_TRUE(with["total"]["queue_wait"]["buckets"].is_array());
  EXPECT_EQ(error_paths(client->call("stats.get", {{"histograms", "yes"}})).count("params.histograms"), 1u);
}

TEST_F(RpcEngine, ThreadsGetListsEngineThreads) {
  json t = client->result("threads.get")["threads"];
  ASSERT_FALSE(t.empty());
  for (const auto& th : t) {
    EXPECT_GT(th["tid"].get<int>(), 0);
    EXPECT_FALSE(th["name"].get<std::string>().empty());
    EXPECT_FALSE(th["role"].get<std::string>().empty());
    EXPECT_TRUE(th["cpus"].is_string());
    EXPECT_TRUE(th["cpus_allowed"].is_string()) << th.dump();
  }
}

TEST_F(RpcEngine, RdmaGetAnswersTheSettingsTheEngineStartedWith) {
  const json rdma = client->result("rdma.get");
  EXPECT_EQ(rdma["use_srq"], true) << rdma.dump();
  EXPECT_EQ(rdma["srq_size"], 256);
  EXPECT_EQ(rdma["data_pool_bytes"], 64u << 20);
  EXPECT_EQ(rdma["comp_vector"], 1);
  EXPECT_EQ(rdma, control::to_json(engine_config().rdma));  // the config's own encoding, every key
  EXPECT_EQ(client->result("rdma.get", json::object()), rdma);
  // Read only, like tcp.get: a setting passed as a param is refused, not applied.
  auto m = error_paths(client->call("rdma.get", {{"use_srq", false}}));
  EXPECT_EQ(m.size(), 1u) << dump_paths(m);
  EXPECT_TRUE(m.count("params.use_srq")) << dump_paths(m);
  EXPECT_EQ(client->result("rdma.get"), rdma);
}

TEST_F(RpcEngine, UnknownMethodAndBatchAgainstTheEngine) {
  EXPECT_EQ(error_code(client->call("threading.st")), code::method_not_found);
  json batch = client->call_raw(json::parse(R"([{"jsonrpc":"2.0","id":1,"method":"budgets.get"},
                                    {"jsonrpc":"2.0","id":2,"method":"budgets.set","params":{"recv_pdus":0}},
                                    {"jsonrpc":"2.0","id":3,"method":"threading.get"}])").dump());
  ASSERT_EQ(batch.size(), 3u) << batch.dump();
  EXPECT_EQ(batch[0]["result"]["recv_pdus"], 32);
  EXPECT_EQ(error_code(batch[1]), code::invalid_params);
  EXPECT_EQ(batch[2]["result"]["threads"], 1);
}

}  // namespace
