// The control socket's client (rpc_client.hpp, and the GUI's remote Client over it) against
// servers that answer wrongly: a bare number, another request's id, an error of the wrong
// types, a line without end. The servers here are fakes on a real Unix socket, a legitimate
// test double: the point is what the client does with answers no engine would send.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/control/client.hpp"
#include "engine/rpc/rpc_client.hpp"

namespace {

using json = nlohmann::json;

// Listens on a fresh socket; serves one connection: for each request line, writes
// reply(request) as it is (the newline included or not, as the test wants).
class FakeServer {
 public:
  explicit FakeServer(std::function<std::string(const json& request)> reply) : _reply(std::move(reply)) {
    char tmpl[] = "/tmp/nvmetune-fake-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    _dir = tmpl;
    _path = _dir + "/fake.sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", _path.c_str());
    _listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (_listen < 0 || bind(_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(_listen, 1) != 0)
      throw std::runtime_error("cannot listen on " + _path);
    _thread = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    shutdown(_listen, SHUT_RDWR);
    if (const int conn = _conn.load(); conn >= 0) shutdown(conn, SHUT_RDWR);
    _thread.join();
    close(_listen);
    std::filesystem::remove_all(_dir);
  }
  const std::string& path() const { return _path; }

 private:
  void serve() {
    _conn = accept(_listen, nullptr, nullptr);
    if (_conn < 0) return;
    answer_lines();
    close(_conn.exchange(-1));
  }

  void answer_lines() {
    std::string in;
    char buf[4096];
    for (;;) {
      const ssize_t n = recv(_conn, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      for (auto nl = in.find('\n'); nl != std::string::npos; nl = in.find('\n')) {
        const std::string out = _reply(json::parse(in.substr(0, nl)));
        in.erase(0, nl + 1);
        for (size_t sent = 0; sent < out.size();) {
          const ssize_t k = send(_conn, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
          if (k <= 0) return;
          sent += static_cast<size_t>(k);
        }
      }
    }
  }

  std::function<std::string(const json&)> _reply;
  std::string _dir, _path;
  int _listen = -1;
  std::atomic<int> _conn{-1};
  std::thread _thread;
};

json request(int id) { return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "engine.info"}}; }

std::string answer(const json& id, const json& result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}}.dump() + "\n";
}

// What RpcClient::call makes of one reply to request id 1: the error, empty on success.
std::string call_error(const std::string& reply, size_t max_line = control::RpcClient::default_max_line_bytes) {
  FakeServer server([&](const json&) { return reply; });
  control::RpcClient client(max_line);
  EXPECT_EQ(client.open(server.path()), "");
  std::string error;
  const auto response = client.call(request(1), error);
  EXPECT_EQ(response.has_value(), error.empty()) << error;
  return error;
}

TEST(RpcClient, AcceptsAResponseToItsRequest) {
  EXPECT_EQ(call_error(answer(1, {{"version", "x"}})), "");
  EXPECT_EQ(call_error(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no","data":[1]}})" "\n"), "");
  // The server could not read the request's id (a parse error, a refused connection).
  EXPECT_EQ(call_error(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"access denied"}})" "\n"), "");
}

TEST(RpcClient, RefusesWhatIsNotAResponseObject) {
  const std::pair<std::string, std::string> cases[] = {
      {"5\n", "expected a response object, got number"},
      {"[]\n", "expected a response object, got array"},
      {R"({"id":1,"result":1})" "\n", "not a JSON-RPC 2.0 response"},
      {R"({"jsonrpc":"2.0","result":1})" "\n", "without an id"},
      {R"({"jsonrpc":"2.0","id":1})" "\n", "exactly one of result and error"},
      {R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}})" "\n", "exactly one of result and error"},
      {R"({"jsonrpc":"2.0","id":1,"error":"bad"})" "\n", "\"error\" is not an object"},
      {R"({"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}})" "\n", "\"error.code\" is not an integer"},
      {R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}})" "\n", "\"error.message\" is not a string"},
      {R"({"jsonrpc":"2.0","id":null,"result":1})" "\n", "does not answer"},
      {"not json\n", "not JSON"},
  };
  for (const auto& [reply, fragment] : cases) {
    const std::string error = call_error(reply);
    EXPECT_NE(error.find(fragment), std::string::npos) << reply << " -> " << error;
  }
}

TEST(RpcClient, RefusesAnotherRequestsId) {
  const std::string error = call_error(answer(2, 1));
  EXPECT_NE(error.find("the response's id 2 does not answer the request's 1"), std::string::npos) << error;
}

// A line without end is refused at the cap instead of filling the memory.
TEST(RpcClient, CapsTheResponseLine) {
  constexpr size_t cap = 1 << 20;
  const std::string error = call_error(std::string(4 * cap, 'x'), cap);
  EXPECT_NE(error.find("longer than 1048576 bytes"), std::string::npos) << error;
  EXPECT_EQ(call_error(answer(1, std::string(cap / 2, 'y')), cap), "") << "a long line under the cap is read";
}

// The GUI's remote client: a bare number answered to engine.info ended in json's type_error
// out of Client::call (the GUI aborted). Now it is a transport error, and the client says it
// is no longer connected.
TEST(RemoteClient, AWrongAnswerIsATransportError) {
  FakeServer server([](const json&) { return std::string("5\n"); });
  std::string error;
  auto client = control::connect_remote_client(server.path(), error);
  ASSERT_TRUE(client) << error;
  control::RpcOutcome outcome;
  ASSERT_NO_THROW(outcome = client->call("engine.info", nullptr));
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, control::client_transport_error);
  EXPECT_NE(outcome.error->message.find("expected a response object"), std::string::npos) << outcome.error->message;
  EXPECT_FALSE(client->connected());
  EXPECT_FALSE(client->info());
}

TEST(RemoteClient, AnsweredRequestsMatchTheirIds) {
  FakeServer server([](const json& req) { return answer(req["id"], {{"method", req["method"]}}); });
  std::string error;
  auto client = control::connect_remote_client(server.path(), error);
  ASSERT_TRUE(client) << error;
  for (int i = 0; i < 3; ++i) {
    auto info = client->info();
    ASSERT_TRUE(info) << client->last_error();
    EXPECT_EQ((*info)["method"], "engine.info");
  }
}

}  // namespace
