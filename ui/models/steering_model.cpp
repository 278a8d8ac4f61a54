// Steering through the session (steering_model.hpp).
#include "ui/models/steering_model.hpp"

#include <algorithm>

#include "engine/control/client.hpp"
#include "ui/engine_session.hpp"

namespace ui {

namespace {

using json = nlohmann::json;

std::vector<PlanRow> rows_of(const json& result) {
  std::vector<PlanRow> out;
  for (const auto& r : result.value("rows", json::array()))
    out.push_back({r.value("path", std::string()), r.value("what", std::string()), r.value("old", std::string()),
                   r.value("new", std::string()), r.value("change", false)});
  return out;
}

}  // namespace

json steering_request(const SteeringPick& pick) {
  json req = json::object();
  if (pick.device.empty()) return req;
  const std::pair<const char*, const std::string*> kinds[] = {
      {"irq", &pick.irq_cpus}, {"rps", &pick.rps_cpus}, {"xps", &pick.xps_cpus}};
  for (const auto& [kind, cpus] : kinds)
    if (!cpus->empty()) req[kind] = json::array({{{"device", pick.device}, {"cpus", *cpus}}});
  for (const auto& r : pick.rules) {
    if (r.cpus.empty()) continue;
    req[r.kind].push_back(r.kind == "irq" ? json{{"irq", r.id}, {"cpus", r.cpus}}
                                          : json{{"device", pick.device}, {"queue", r.id}, {"cpus", r.cpus}});
  }
  return req;
}

namespace {

// "eth0/rx-3" (per_cpu's name) as "rx3", or "eth0 rx3" when several interfaces are shown.
std::string queue_label(const std::string& q, bool with_device) {
  const auto slash = q.find('/');
  std::string name = q.substr(slash == std::string::npos ? 0 : slash + 1);
  if (auto dash = name.find('-'); dash != std::string::npos) name.erase(dash, 1);
  return with_device && slash != std::string::npos ? q.substr(0, slash) + " " + name : name;
}

}  // namespace

SteeringByCpu steering_by_cpu(const json& state) {
  SteeringByCpu out;
  std::map<unsigned, CpuSteering::Irq> lines;
  for (const auto& l : state.value("irqs", json::array()))
    if (l.is_object())
      lines[l.value("irq", 0u)] = {l.value("irq", 0u), l.value("name", std::string()), l.value("device", std::string())};
  const bool several = state.value("interfaces", json::array()).size() > 1;
  for (const auto& c : state.value("per_cpu", json::array())) {
    if (!c.is_object()) continue;
    CpuSteering& s = out[c.value("cpu", 0u)];
    for (const auto& n : c.value("irqs", json::array()))
      s.irqs.push_back(lines.count(n.get<unsigned>()) ? lines[n.get<unsigned>()] : CpuSteering::Irq{n.get<unsigned>(), {}, {}});
    std::stable_partition(s.irqs.begin(), s.irqs.end(), [](const CpuSteering::Irq& i) { return !i.device.empty(); });
    for (const auto& q : c.value("rps", json::array())) s.rps.push_back(queue_label(q.get<std::string>(), several));
    for (const auto& q : c.value("xps", json::array())) s.xps.push_back(queue_label(q.get<std::string>(), several));
  }
  return out;
}

SteeringModel::SteeringModel(EngineSession& session, QObject* parent) : QObject(parent), _session(session) {
  connect(&_session, &EngineSession::call_finished, this, &SteeringModel::on_call);
  connect(&_session, &EngineSession::attached, this, &SteeringModel::refresh);
  connect(&_session, &EngineSession::snapshot, this, &SteeringModel::on_snapshot);
}

bool SteeringModel::changed() const { return !_state.value("saved", json::array()).empty(); }

void SteeringModel::refresh() { _pending[_session.call("steering.get", json::object())] = "steering.get"; }

void SteeringModel::make_plan(const json& request) {
  _planned = request;
  _pending[_session.call("steering.plan", request)] = "steering.plan";
}

void SteeringModel::apply(const json& request) {
  _planned = request;
  _pending[_session.call("steering.apply", request)] = "steering.apply";
}

void SteeringModel::revert() { _pending[_session.call("steering.revert", json::object())] = "steering.revert"; }

void SteeringModel::on_snapshot(const stats::Snapshot& s) {
  std::vector<SteeredQueue> queues;
  for (const auto& q : s.queues)
    if (q.qid != 0) queues.push_back({q.qid, q.peer, q.incoming_cpu, q.worker});
  const bool same = queues.size() == _queues.size() &&
                    std::equal(queues.begin(), queues.end(), _queues.begin(), [](const SteeredQueue& a, const SteeredQueue& b) {
                      return a.qid == b.qid && a.peer == b.peer && a.incoming_cpu == b.incoming_cpu && a.worker == b.worker;
                    });
  if (same) return;  // a table rebuilt every interval would flicker
  _queues = std::move(queues);
  emit state_changed();
}

void SteeringModel::keep_refusal(const control::RpcOutcome& outcome, const QString& what) {
  _refusal.clear();
  _refusal << what + ": " + QString::fromStdString(outcome.error->message);
  for (const auto& e : outcome.error->data.is_array() ? outcome.error->data : json::array())
    if (e.is_object()) {
      const std::string path = e.value("path", std::string()), text = e.value("message", std::string());
      _refusal << QString::fromStdString(text.rfind(path, 0) == 0 ? text : path + ": " + text);  // the engine may name the file already
    }
  emit message(_refusal.join("\n"), true);
}

void SteeringModel::on_call(quint64 ticket, const QString& method, const control::RpcOutcome& outcome) {
  auto it = _pending.find(ticket);
  if (it == _pending.end()) return;
  _pending.erase(it);
  if (method == "steering.get") {
    if (outcome.error) keep_refusal(outcome, "steering not available");
    else _state = outcome.result;
    _by_cpu = steering_by_cpu(_state);
    return emit state_changed();
  }
  if (outcome.error) {
    keep_refusal(outcome, method == "steering.plan" ? "no plan" : method == "steering.apply" ? "nothing applied" : "revert incomplete");
    if (method == "steering.plan") _plan.clear();
    emit plan_changed();
    return refresh();
  }
  _refusal.clear();
  if (method == "steering.plan") {
    _plan = rows_of(outcome.result);
    const int changes = outcome.result.value("changes", 0);
    emit message(changes == 1 ? QString("dry run: 1 file would change")
                              : QString("dry run: %1 files would change").arg(changes), false);
  } else if (method == "steering.apply") {
    _plan = rows_of(outcome.result);
    emit message(QString("applied: %1 files written (revert restores them)").arg(outcome.result.value("changes", 0)), false);
  } else {
    _plan.clear();
    emit message(QString("reverted: %1 files restored").arg(outcome.result.value("restored", json::array()).size()), false);
  }
  emit plan_changed();
  refresh();
}

}  // namespace ui
