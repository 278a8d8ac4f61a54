// The tuning form's state and its calls (tuning_model.hpp).
#include "ui/models/tuning_model.hpp"

#include "engine/config/config_json.hpp"
#include "engine/rpc/rpc_server.hpp"
#include "ui/engine_session.hpp"

namespace ui {

namespace {

using json = nlohmann::json;
constexpr const char* sections[] = {"threading", "budgets", "tcp", "rdma"};  // tcp, rdma: read only (apply at start)

}  // namespace

TuningModel::TuningModel(EngineSession& session, QObject* parent) : QObject(parent), _session(session) {
  connect(&_session, &EngineSession::call_finished, this, &TuningModel::on_call);
}

json TuningModel::running(const control::Setting& f) const {
  auto it = _running.find(std::string(f.section));
  return it == _running.end() ? json() : it->second.value(std::string(f.key), json());
}

json TuningModel::value(const control::Setting& f) const {
  auto it = _edited.find(std::string(f.section));
  return it == _edited.end() ? json() : it->second.value(std::string(f.key), json());
}

void TuningModel::set_value(const control::Setting& f, json v) {
  if (value(f) == v) return;
  _edited[std::string(f.section)][std::string(f.key)] = std::move(v);
  _errors.erase(f.path());
  emit changed();
}

bool TuningModel::dirty() const { return _edited != _running; }

std::string TuningModel::mode() const {
  auto it = _edited.find("threading");
  return it == _edited.end() ? std::string() : it->second.value("mode", std::string());
}

QString TuningModel::error(const control::Setting& f) const {
  auto it = _errors.find(f.path());
  return it == _errors.end() ? QString() : it->second;
}

json TuningModel::edited(const std::string& section) const {
  auto it = _edited.find(section);
  return it == _edited.end() ? json::object() : it->second;
}

json TuningModel::diff(const std::string& section) const {
  json out = json::object();
  const json now = edited(section);
  auto it = _running.find(section);
  for (const auto& [key, v] : now.items())
    if (it == _running.end() || it->second.value(key, json()) != v) out[key] = v;
  return out;
}

void TuningModel::reload() {
  for (const char* section : sections) _pending[_session.call(QString(section) + ".get", nullptr)] = std::string(section) + ".get";
  emit changed();
}

void TuningModel::revert() {
  _edited = _running;
  _errors.clear();
  emit changed();
  reload();
}

void TuningModel::apply() {
  _errors.clear();
  // Budgets are checked by the engine's own parser before anything is sent: the only refusal
  // left after threading.set succeeded would then be a budget the running engine refuses.
  control::BudgetConfig b;
  if (auto errors = control::parse_budgets(edited("budgets"), "params", b); !errors.empty()) {
    json data = json::array();
    for (const auto& e : errors) data.push_back({{"path", e.path}, {"message", e.message}});
    keep_errors("budgets", data, "invalid budgets");
    emit message("nothing applied: " + QString::fromStdString(errors.front().path + ": " + errors.front().message), true);
    return emit changed();
  }
  _then_budgets = !diff("budgets").empty();
  if (!diff("threading").empty()) send("threading");
  else if (_then_budgets) send("budgets"), _then_budgets = false;
  else emit message("nothing to apply: the form shows the running values", false);
  emit changed();
}

void TuningModel::send(const std::string& section) {
  _pending[_session.call(QString::fromStdString(section + ".set"), diff(section))] = section + ".set";
}

void TuningModel::keep_errors(const std::string& section, const json& data, const QString& message) {
  bool placed = false;
  for (const auto& e : data.is_array() ? data : json::array()) {
    const std::string path = e.value("path", std::string());
    const std::string text = e.value("message", std::string());
    static constexpr std::string_view prefix = "params.";
    const std::string key = path.compare(0, prefix.size(), prefix) == 0 ? path.substr(prefix.size()) : path;
    _errors[section + "." + key] = QString::fromStdString(text + " (" + path + ")");
    placed = true;
  }
  if (!placed) _errors[section] = message;
}

void TuningModel::on_call(quint64 ticket, const QString& method, const control::RpcOutcome& outcome) {
  auto it = _pending.find(ticket);
  if (it == _pending.end()) return;
  const std::string step = it->second;
  _pending.erase(it);
  if (step == "profiles.save") return on_saved(outcome), emit changed();
  const std::string section = step.substr(0, step.find('.'));
  // An engine older than a section's .get (rdma.get came after tcp.get): its rows stay as they
  // were, with no error; there is nothing the operator could do about it here.
  if (outcome.error && outcome.error->code == control::rpc_code::method_not_found && step.ends_with(".get"))
    return emit changed();
  if (outcome.error) {
    keep_errors(section, outcome.error->data, QString::fromStdString(outcome.error->message));
    _then_budgets = false;
    emit message((step.ends_with(".set") ? "nothing applied: " : "") + QString::fromStdString(outcome.error->message), true);
    return emit changed();
  }
  _running[section] = outcome.result;
  _edited[section] = outcome.result;  // after a set: the engine's canonical form of what it applied
  if (step == "threading.set" && _then_budgets) {
    _then_budgets = false;
    send("budgets");
  } else if (step.ends_with(".set") && _pending.empty()) {
    emit message(method + ": applied", false);
    emit applied();
  }
  emit changed();
}

void TuningModel::save_profile(const QString& name, const QString& description, bool replace) {
  const json params = {{"name", name.toStdString()}, {"description", description.toStdString()}, {"replace", replace}};
  _pending[_session.call("profiles.save", params)] = "profiles.save";
  emit changed();
}

void TuningModel::on_saved(const control::RpcOutcome& outcome) {
  if (outcome.error) {
    QString text = QString::fromStdString(outcome.error->message);
    if (outcome.error->data.is_array() && !outcome.error->data.empty())
      text = QString::fromStdString(outcome.error->data[0].value("message", outcome.error->message));
    return emit message("profile not saved: " + text, true);
  }
  const QString name = QString::fromStdString(outcome.result.value("name", std::string()));
  const QString db = QString::fromStdString(outcome.result.value("db", std::string()));
  emit message("saved profile " + name + " in the engine's database " + db + " (nvmetune profile show " + name + ")", false);
  emit profile_saved(name, db);
}

}  // namespace ui
