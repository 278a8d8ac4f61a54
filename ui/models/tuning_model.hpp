#pragma once
// ui::TuningModel: the tuning form's state between the session and the widgets: the running
// settings, the edited ones, and the engine's refusals per field. Apply sends only what
// changed (threading.set, then budgets.set, budgets first checked by the engine's own parser
// so a refusal there cannot leave threading half applied); a refusal is kept on its field with
// the engine's message and JSON path. Revert reloads the running values. Fields are the rows of
// control::settings_schema() (the description the engine validates with); tcp and rdma settings
// are read (tcp.get, rdma.get) and shown, but take effect at start, so they are never sent.
// Save as profile asks the engine (profiles.save) to keep its running state in its own database.
#include <QObject>
#include <QString>

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config/settings_schema.hpp"

namespace control {
struct RpcOutcome;
}

namespace ui {

class EngineSession;

class TuningModel : public QObject {
  Q_OBJECT

 public:
  explicit TuningModel(EngineSession& session, QObject* parent = nullptr);

  nlohmann::json value(const control::Setting& f) const;    // edited (or running) value
  nlohmann::json running(const control::Setting& f) const;
  void set_value(const control::Setting& f, nlohmann::json v);
  bool dirty() const;
  bool busy() const { return !_pending.empty(); }
  std::string mode() const;
  // The refusal on a field: "message (params.cpumask)"; empty when none.
  QString error(const control::Setting& f) const;
  const std::map<std::string, QString>& errors() const { return _errors; }
  // The whole edited section as JSON (for profiles and tests).
  nlohmann::json edited(const std::string& section) const;

  // Saves the running engine's settings as a profile through the client (profiles.save), so a
  // remote engine's state lands in that engine's database; profile_saved() or message(error).
  void save_profile(const QString& name, const QString& description, bool replace = false);

 public slots:
  void reload();
  void apply();
  void revert();

 signals:
  void changed();                    // values, errors or busy state changed
  void message(const QString& text, bool error);
  void applied();                    // every step the engine accepted
  void profile_saved(const QString& name, const QString& db);

 private:
  void on_call(quint64 ticket, const QString& method, const control::RpcOutcome& outcome);
  void on_saved(const control::RpcOutcome& outcome);
  nlohmann::json diff(const std::string& section) const;
  void send(const std::string& section);
  void keep_errors(const std::string& section, const nlohmann::json& data, const QString& message);

  EngineSession& _session;
  std::map<std::string, nlohmann::json> _running;  // section -> object
  std::map<std::string, nlohmann::json> _edited;
  std::map<std::string, QString> _errors;          // "threading.cpumask" -> text
  std::map<quint64, std::string> _pending;         // ticket -> "threading.get", "budgets.set", ...
  bool _then_budgets = false;
};

}  // namespace ui
