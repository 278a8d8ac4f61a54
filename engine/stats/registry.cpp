#include "engine/stats/registry.hpp"

#include <algorithm>
#include <tuple>

#include "engine/stats/latency_sources.hpp"

namespace stats {
namespace {

// Each histogram of the block and its row, in latency_sources' order.
struct HistogramPair {
  Histogram QueueLatency::*block;
  HistogramData QueueRow::*row;
};
constexpr HistogramPair histogram_pairs[] = {
    {&QueueLatency::target_read_latency, &QueueRow::target_read_latency},
    {&QueueLatency::target_write_latency, &QueueRow::target_write_latency},
    {&QueueLatency::target_other_latency, &QueueRow::target_other_latency},
    {&QueueLatency::stage_scheduling, &QueueRow::stage_scheduling},
    {&QueueLatency::stage_queue, &QueueRow::stage_queue},
    {&QueueLatency::stage_receive, &QueueRow::stage_receive},
    {&QueueLatency::stage_data_wait, &QueueRow::stage_data_wait},
    {&QueueLatency::backend_latency, &QueueRow::backend_latency},
    {&QueueLatency::stage_send, &QueueRow::stage_send},
    {&QueueLatency::queue_wait, &QueueRow::queue_wait},
    {&QueueLatency::read_latency, &QueueRow::read_latency},
    {&QueueLatency::write_latency, &QueueRow::write_latency},
    {&QueueLatency::other_latency, &QueueRow::other_latency},
};
static_assert(std::size(histogram_pairs) == latency_source_count, "a histogram of QueueStats is not read");

}  // namespace

// ---- QueueStats

QueueStats::~QueueStats() { delete _latency.load(std::memory_order_relaxed); }

QueueLatency& QueueStats::make_latency() {
  if (QueueLatency* l = latency()) return *l;
  auto* l = new QueueLatency;
  _latency.store(l, std::memory_order_release);
  return *l;
}

void QueueStats::set_identity(QueueIdentity id) {
  std::lock_guard lock(_mu);
  _id = std::move(id);
}

QueueIdentity QueueStats::identity() const {
  std::lock_guard lock(_mu);
  return _id;
}

QueueRow QueueStats::read() const {
  QueueRow r;
  QueueIdentity id = identity();
  r.queue_id = id.queue_id;
  r.qid = id.qid;
  r.cntlid = id.cntlid;
  r.subnqn = std::move(id.subnqn);
  r.peer = std::move(id.peer);
  r.io_mechanism = std::move(id.io_mechanism);
  r.comp_vector = id.comp_vector;
  r.arrival_clock = std::move(id.arrival_clock);
  r.worker = worker.load(std::memory_order_relaxed);
  r.incoming_cpu = incoming_cpu.load(std::memory_order_relaxed);
  r.commands = commands.get();
  r.read_bytes = read_bytes.get();
  r.write_bytes = write_bytes.get();
  r.pdus_rx = pdus_rx.get();
  r.pdus_tx = pdus_tx.get();
  if (const QueueLatency* l = latency())
    for (const auto& h : histogram_pairs) r.*h.row = (l->*h.block).read();
  return r;
}

// ---- WorkerStats

WorkerStats::WorkerStats(unsigned index, std::string name) : _index(index), _name(std::move(name)) {}

void WorkerStats::set_name(std::string name) {
  std::lock_guard lock(_mu);
  _name = std::move(name);
}

std::string WorkerStats::name() const {
  std::lock_guard lock(_mu);
  return _name;
}

void WorkerStats::set_cpus_allowed(std::vector<unsigned> cpus) {
  std::lock_guard lock(_mu);
  _cpus = std::move(cpus);
}

std::vector<unsigned> WorkerStats::cpus_allowed() const {
  std::lock_guard lock(_mu);
  return _cpus;
}

WorkerRow WorkerStats::read() const {
  WorkerRow r;
  r.index = _index;
  r.tid = tid.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(_mu);
    r.name = _name;
    r.cpus_allowed = _cpus;
  }
  r.io_work_passes = io_work_passes.get();
  r.busy_passes = busy_passes.get();
  r.idle_passes = idle_passes.get();
  r.idle_poll_ns = idle_poll_ns.get();
  r.wakeups = wakeups.get();
  r.queues = queues.load(std::memory_order_relaxed);
  return r;
}

// ---- Row arithmetic

void accumulate(QueueRow& into, const QueueRow& from) {
  into.commands += from.commands;
  into.read_bytes += from.read_bytes;
  into.write_bytes += from.write_bytes;
  into.pdus_rx += from.pdus_rx;
  into.pdus_tx += from.pdus_tx;
  for (const auto& src : latency_sources) (into.*src.row).merge(from.*src.row);
}

namespace {
uint64_t minus(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }
}  // namespace

QueueRow difference(const QueueRow& now, const QueueRow& before) {
  QueueRow d;
  d.queue_id = now.queue_id;
  d.qid = now.qid;
  d.cntlid = now.cntlid;
  d.subnqn = now.subnqn;
  d.peer = now.peer;
  d.io_mechanism = now.io_mechanism;
  d.comp_vector = now.comp_vector;
  d.arrival_clock = now.arrival_clock;
  d.worker = now.worker;
  d.incoming_cpu = now.incoming_cpu;
  d.commands = minus(now.commands, before.commands);
  d.read_bytes = minus(now.read_bytes, before.read_bytes);
  d.write_bytes = minus(now.write_bytes, before.write_bytes);
  d.pdus_rx = minus(now.pdus_rx, before.pdus_rx);
  d.pdus_tx = minus(now.pdus_tx, before.pdus_tx);
  for (const auto& src : latency_sources) d.*src.row = (now.*src.row).since(before.*src.row);
  return d;
}

QueueRow Collection::total() const {
  QueueRow t = retired;
  for (const QueueSample& q : queues) accumulate(t, q.row);
  return t;
}

// ---- Registry

void Registry::add_queue(QueueStats* q) {
  std::lock_guard lock(_mu);
  if (std::any_of(_queues.begin(), _queues.end(), [q](const auto& e) { return e.block == q; })) return;
  _queues.push_back({_next_source++, q});
}

void Registry::remove_queue(QueueStats* q) {
  std::lock_guard lock(_mu);
  auto it = std::find_if(_queues.begin(), _queues.end(), [q](const auto& e) { return e.block == q; });
  if (it == _queues.end()) return;
  accumulate(_retired, q->read());
  _queues.erase(it);
}

void Registry::add_worker(WorkerStats* w) {
  std::lock_guard lock(_mu);
  if (std::any_of(_workers.begin(), _workers.end(), [w](const auto& e) { return e.block == w; })) return;
  _workers.push_back({_next_source++, w});
}

void Registry::remove_worker(WorkerStats* w) {
  std::lock_guard lock(_mu);
  std::erase_if(_workers, [w](const auto& e) { return e.block == w; });
}

Collection Registry::collect() const {
  Collection c;
  {
    std::lock_guard lock(_mu);
    c.queues.reserve(_queues.size());
    for (const auto& e : _queues) c.queues.push_back({e.source, e.block->read()});
    c.workers.reserve(_workers.size());
    for (const auto& e : _workers) c.workers.push_back({e.source, e.block->read()});
    c.retired = _retired;
  }
  std::sort(c.queues.begin(), c.queues.end(), [](const QueueSample& a, const QueueSample& b) {
    return std::tie(a.row.queue_id, a.source) < std::tie(b.row.queue_id, b.source);
  });
  std::sort(c.workers.begin(), c.workers.end(), [](const WorkerSample& a, const WorkerSample& b) {
    return std::tie(a.row.index, a.source) < std::tie(b.row.index, b.source);
  });
  return c;
}

size_t Registry::queue_count() const {
  std::lock_guard lock(_mu);
  return _queues.size();
}

size_t Registry::worker_count() const {
  std::lock_guard lock(_mu);
  return _workers.size();
}

}  // namespace stats
