// TcpQueue lifecycle, command slots, and the io_work loop.
#include "engine/tcp/queue.hpp"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/core/target.hpp"
#include "engine/stats/usdt.hpp"
#include "engine/tcp/command.hpp"

namespace tcp {
namespace {

// The boot slot takes the Connect capsule: its 1024-byte data, in the capsule, within the
// admin in-capsule size.
inline constexpr uint32_t boot_buf_size = admin_icd_size;
inline constexpr uint16_t boot_ttag = 0xffff;
// Before Connect: ICResp, the Connect's response (or C2HData + response), a C2HTermReq.
inline constexpr size_t boot_tx_items = 4;

}  // namespace

TcpQueue::Slab::Slab(size_t bytes) : len(bytes) {
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  base = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

TcpQueue::Slab::~Slab() {
  if (base) munmap(base, len);
}

TcpQueue::TcpQueue(int fd, std::string peer, core::Target& target, exec::Executor& executor,
                   const QueueLimits& limits, const LiveBudgets& budgets, IoMechanism mechanism)
    : _fd(fd), _peer(std::move(peer)), _target(target), _executor(&executor), _limits(limits),
      _live_budgets(budgets), _budgets(budgets.load()), _ioctx(limits.queue_depth), _sq(target, *this, _stats),
      _boot(new Command), _boot_buf(new uint8_t[boot_buf_size]), _rxbuf(new uint8_t[rx_buffer_size]) {
  _rx_base = _rxbuf.get();
  _boot->index = boot_ttag;
  _boot->req.sq = &_sq;
  _boot->req.buf = _boot_buf.get();
  _boot->req.buf_cap = boot_buf_size;
  _tx.resize(boot_tx_items);
  _resp_staged.reserve(boot_tx_items);
  want_ring_for(executor);
  _stamps = limits.arrival_stamps && enable_arrival_stamps(_fd);
  if (mechanism == IoMechanism::io_uring) {
    std::string error;
    _usock = std::make_unique<UringSocket>(_fd, _ioctx, error);
    if (!_usock->armed()) {
      // The mechanism was probed when it was chosen, so this is a resource limit (locked
      // memory, ring size): serve the host through epoll rather than refuse it, and say so.
      _usock.reset();
      _target.log(core::EventLevel::warning,
                  "io_uring receive unavailable for " + _peer + " (" + error + "); this queue uses epoll");
    }
  }
}

TcpQueue::~TcpQueue() {
  // Lent reads still queued for a peer that is gone hold their namespaces: let them go.
  for (uint32_t i = 0; i < _ncmds; ++i) _sq.release_data(_cmds[i].req);
  _usock.reset();  // cancels by fd: before the close
  if (_fd >= 0) ::close(_fd);
}

uint32_t TcpQueue::in_capsule_size() const {
  if (!_sq.connected()) return std::max(admin_icd_size, _limits.io_icd_size);
  return _sq.qid() == 0 ? admin_icd_size : _limits.io_icd_size;
}

// Connect accepted for entries slots: the slots, their buffers and the send ring, sized from
// what the host asked for. Runs on the queue's thread while the Connect sits in the boot slot.
bool TcpQueue::size_for(uint32_t entries) {
  // A Connect retried after a refused one runs in one of the slots already allocated: they
  // stay (replacing them would free the command being executed).
  if (_cmds) return true;
  const size_t slot = 2 * size_t{_limits.mdts_bytes};
  auto slab = std::make_unique<Slab>(slot * entries);
  std::unique_ptr<Command[]> cmds(new (std::nothrow) Command[entries]);
  if (!slab->base || !cmds) return false;
  try {
    std::vector<TxItem> tx(2 * size_t{entries} + boot_tx_items);
    for (size_t i = 0; i < _tx_count; ++i) tx[i] = _tx[(_tx_head + i) % _tx.size()];
    _free.reserve(entries);
    _deferred.reserve(entries + 1);
    _resuming.reserve(entries + 1);
    _resp_staged.reserve(entries + boot_tx_items);
    _tx = std::move(tx);
  } catch (const std::bad_alloc&) {
    return false;
  }
  _tx_head = 0;
  for (uint32_t i = entries; i-- > 0;) {
    Command& c = cmds[i];
    c.index = static_cast<uint16_t>(i);
    c.req.sq = &_sq;
    c.req.buf = slab->base + slot * i;
    c.req.buf_cap = _limits.mdts_bytes;
    _free.push_back(static_cast<uint16_t>(i));
  }
  _slab = std::move(slab);
  _cmds = std::move(cmds);
  _ncmds = entries;
  return true;
}

TcpQueue::Command* TcpQueue::command_of_ttag(uint16_t ttag) {
  if (ttag == boot_ttag) return _boot.get();
  return ttag < _ncmds ? &_cmds[ttag] : nullptr;
}

TcpQueue::Command* TcpQueue::alloc_command() {
  Command* c = nullptr;
  if (!_cmds) {
    if (_boot->state != CmdState::free) return nullptr;  // one capsule before Connect
    c = _boot.get();
  } else {
    if (_free.empty()) return nullptr;
    c = &_cmds[_free.back()];
    _free.pop_back();
  }
  c->digest_error = false;
  c->h2c_next = 0;
  c->early = nvme::status::success;
  return c;
}

void TcpQueue::free_command(Command& c) {
  _sq.release_data(c.req);  // its data, if lent, is in the socket now
  set_state(c, CmdState::free);
  if (&c != _boot.get()) _free.push_back(c.index);
}

void TcpQueue::set_state(Command& c, CmdState s) {
  c.state = s;
}

bool TcpQueue::defer(core::Request& req) {
  if (_deferred.size() >= _deferred.capacity()) return false;  // never allocate here
  _deferred.push_back(&req);
  return true;
}

// Runs the commands deferred before this round; the ones that defer again wait for the next.
unsigned TcpQueue::resume_deferred() {
  if (_deferred.empty()) return 0;
  _resuming.swap(_deferred);
  for (core::Request* r : _resuming) _sq.resume(*r);
  const auto n = static_cast<unsigned>(_resuming.size());
  _resuming.clear();
  return n;
}

// The handover of a live switch, on the thread that ran the queue: an owned ring cannot follow
// the queue to another thread, and a shared one would not defer its completion work; the next
// pass, on the new executor, opens a ring of the kind it wants.
void TcpQueue::move_ring(const exec::Executor& next) {
  const bool moved = (!_usock || _usock->detach()) &&
                     _ioctx.close_ring([this](backend::Io& io) { _sq.on_backend_done(io); });
  if (!moved) {
    // Only when a stopping worker hands the queue over from elsewhere: keep the ring (and
    // the thread it is bound to) rather than drop operations in flight.
    _target.log(core::EventLevel::warning, "queue " + _peer + " keeps its io_uring across the switch");
    return;
  }
  want_ring_for(next);
}

unsigned TcpQueue::reap(unsigned budget) {
  if (_ioctx.inflight() == 0 && !_usock) return 0;
  return _ioctx.reap(budget, [this](backend::Io& io) { _sq.on_backend_done(io); });
}

void TcpQueue::kick() {
  std::lock_guard lk(_exec_mu);
  _executor->schedule(*this);
}

void TcpQueue::set_executor(exec::Executor& e) {
  std::lock_guard lk(_exec_mu);
  if (_ioctx.owned() || e.keeps_tasks_on_one_thread()) move_ring(e);
  _executor = &e;
  _ring_watched = false;  // the new executor must watch the backend ring too
}

// Connect bound the queue: name it in the statistics (control path, once per queue).
void TcpQueue::identify() {
  _identified = true;
  _connected.store(true, std::memory_order_relaxed);
  if (_sq.qid() == 0) _admin.store(true, std::memory_order_relaxed);
  auto id = _stats.identity();
  id.qid = _sq.qid();
  id.cntlid = _sq.controller()->cntlid();
  id.subnqn = _sq.controller()->subsystem().nqn();
  _stats.set_identity(std::move(id));
}

int TcpQueue::incoming_cpu() const {
  int cpu = -1;
  socklen_t len = sizeof cpu;
  if (_fd < 0 || getsockopt(_fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) != 0) cpu = -1;
  // Executors ask at placement: the stats show the CPU each queue was placed by.
  _stats.incoming_cpu.store(cpu, std::memory_order_relaxed);
  return cpu;
}

// One io_work pass: receive, submit, reap, send, in rounds of the budgets until nothing moves,
// the op budget, the byte budget or the deadline is reached.
exec::Progress TcpQueue::pass(unsigned max_rx_pdus) {
  _budgets = _live_budgets.load();
  const uint64_t start = exec::monotonic_ns();
  if (_stamps) _stamp_clock.sync(start);
  _pass = {0, start};
  // Readiness (event, kick, requeue) to now: how long this queue waited for a thread.
  if (const uint64_t ready = exec_ready_ns.exchange(0, std::memory_order_relaxed); ready && ready <= start) {
    _pass.ready_ns = ready;
    if (auto* lat = _sq.latency()) lat->queue_wait.record(start - ready);
    NVMT_USDT2(queue_wait_end, this, start - ready);
  }
  if (!_closing && _sq.poll_events()) _closing = true;  // controller died (KATO, admin gone)
  if (!_closing && !_sq.connected() && _handshake_expired.load(std::memory_order_relaxed)) {
    _closing = true;
    _target.log(core::EventLevel::warning, "closing " + _peer + ": no ICReq and Connect within " +
                                               std::to_string(_limits.connect_timeout_ms) + " ms");
    _target.event("connect_timeout", "{\"peer\":" + core::json_string(_peer) + "}");
  }
  const uint64_t deadline = _budgets.deadline_us ? start + _budgets.deadline_us * 1000ull : 0;
  unsigned ops = 0, rx_total = 0;
  _pass_bytes = 0;
  exec_tx_blocked = false;
  bool progress = true;
  while (progress && ops < _budgets.ops_per_pass && rx_total < max_rx_pdus) {
    // io_uring: received data arrives as CQEs, so reap before receiving.
    const unsigned early = (_usock ? reap(_budgets.reap_batch) : 0) + resume_deferred();
    if (_usock) (void)_usock->take_arrivals();  // this round's receive takes them
    const unsigned rx = _closing ? 0 : rx_pass(std::min(_budgets.recv_pdus, max_rx_pdus - rx_total));
    _ioctx.flush_submissions();
    const unsigned done = early + reap(_budgets.reap_batch);
    // io_uring: data the reap after the flush took (a receive the flush armed or re-armed found
    // it waiting: a new queue's ICReq) is work for the next round. Counted as no progress, it
    // ended the pass unparsed with `more`, which the inline model hands to its deferred worker:
    // under churn that worker was busy retiring queues and the ICResp missed the handshake
    // deadline (fuzz_churn, issue 33).
    const unsigned arrived = _usock ? _usock->take_arrivals() : 0;
    const unsigned tx = tx_pass(_budgets.send_pdus);
    progress = rx + done + tx + arrived > 0;
    ops += rx + done + tx;
    rx_total += rx;
    if (_budgets.bytes_per_pass && _pass_bytes >= _budgets.bytes_per_pass) break;
    if (deadline && exec::monotonic_ns() >= deadline) break;
  }
  // SQEs queued after the last round's flush (by completions reaped after it) must reach the
  // kernel before the queue sleeps, or nothing would complete them.
  _ioctx.flush_submissions();
  exec_did_work = ops > 0;
  if (!_identified && _sq.connected()) identify();
  if (!_ring_watched && _ioctx.notify_fd() >= 0) {
    _ring_watched = true;
    _executor->watch_fd(*this, _ioctx.notify_fd());
  }
  // A closing queue flushes what it can (the C2HTermReq) but never waits on a peer that
  // stopped reading.
  if (_closing && (_tx_count == 0 || _fd < 0 || !progress)) {
    // No controller can kick this queue after this. The accept thread's handshake timer still
    // may: the executor drops a kick that races with this return (Executor::schedule), and the
    // transport's lock, which on_retire takes before freeing the queue, keeps it alive meanwhile.
    _sq.unbind();
    return exec::Progress::closed;
  }
  const bool buffered =
      (_rx_tail > _rx_head || (_usock && _usock->buffered()) || !_deferred.empty()) && !_closing;
  if (progress || buffered || _ioctx.work_waiting()) return exec::Progress::more;
  return exec_level_rearm && _ioctx.consume_notifications() ? exec::Progress::more : exec::Progress::idle;
}

void TcpQueue::retire() {
  if (_retire_hook) _retire_hook(this);
}

}  // namespace tcp
