// `nvmetune profile save|list|show|diff|export|import|apply|delete` (docs/guide/profiles.md).
// The model, its validation, diff, importers and apply live in data/profile/; this file reads
// the command line, the files, the store and the control socket, and prints.
#include "app/profile.hpp"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/exit_code.hpp"
#include "app/socket_caller.hpp"
#include "data/profile/profile.hpp"
#include "data/profile/profile_apply.hpp"
#include "data/profile/profile_capture.hpp"
#include "data/profile/profile_diff.hpp"
#include "data/profile/profile_export.hpp"
#include "data/profile/profile_import.hpp"
#include "data/store/store.hpp"
#include "engine/config/config_json.hpp"
#include "engine/rpc/rpc_server.hpp"

namespace app {

namespace {

using json = nlohmann::json;

struct ProfileOptions {
  std::string db;           // empty: data::default_db_path()
  std::string socket;       // empty: control::default_control_socket_path()
  std::string name;         // save, show, export, apply, delete: NAME (or FILE)
  std::string other;        // diff: B
  std::string file;         // export, import: FILE
  std::string description;  // save
  std::string rename;       // import --name
  std::string format = "profile";  // export --format: profile | spdk | nvmetcli
  bool tuning_only = false; // save: threading and budgets only (portable)
  bool replace = false;     // import: overwrite a stored profile of that name
};

void print_errors(const std::string& what, const std::vector<control::ConfigError>& errors) {
  std::fprintf(stderr, "nvmetune profile: %s: %zu error(s), nothing done:\n", what.c_str(), errors.size());
  for (const auto& e : errors) std::fprintf(stderr, "  %s: %s\n", e.path.c_str(), e.message.c_str());
}

void fail(const std::string& text) { std::fprintf(stderr, "nvmetune profile: %s\n", text.c_str()); }

std::unique_ptr<data::Store> open_store(const ProfileOptions& o) {
  std::string error;
  const std::string path = o.db.empty() ? data::default_db_path() : o.db;
  auto store = data::Store::open(path, error);
  if (!store) fail("cannot open the database " + path + ": " + error);
  return store;
}

// A FILE when it names one (a '/' or ".json" in it, or an existing file); else a stored NAME.
bool is_file_argument(const std::string& arg) {
  return arg.find('/') != std::string::npos || arg.ends_with(".json") || std::filesystem::is_regular_file(arg);
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read " + path + ": " + std::strerror(errno)), std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_file(const std::string& path, const std::string& text) {
  if (path == "-") return std::fputs(text.c_str(), stdout) >= 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return fail("cannot write " + path + ": " + std::strerror(errno)), false;
  return true;
}

// A profile document, validated on this machine; prints every error and returns nullopt.
std::optional<data::Profile> parse_checked(const std::string& what, const std::string& text) {
  auto parsed = data::parse_profile(text);
  if (!parsed.errors.empty()) return print_errors(what, parsed.errors), std::nullopt;
  return std::move(parsed.profile);
}

// NAME|FILE as a validated profile.
std::optional<data::Profile> load_profile(const ProfileOptions& o, const std::string& arg) {
  if (is_file_argument(arg)) {
    auto text = read_file(arg);
    return text ? parse_checked(arg, *text) : std::nullopt;
  }
  auto store = open_store(o);
  if (!store) return std::nullopt;
  auto row = store->load_profile(arg);
  if (!row) return fail("no profile " + json(arg).dump() + " (nvmetune profile list)"), std::nullopt;
  return parse_checked("profile " + arg, row->json);
}

// NAME|FILE as its canonical document. A stored profile is taken as saved (it was valid then),
// so it can be shown and diffed on a machine whose CPUs it does not fit.
std::optional<json> load_document(const ProfileOptions& o, const std::string& arg) {
  if (is_file_argument(arg)) {
    auto p = load_profile(o, arg);
    return p ? std::optional<json>(data::to_json(*p)) : std::nullopt;
  }
  auto store = open_store(o);
  if (!store) return std::nullopt;
  auto row = store->load_profile(arg);
  if (!row) return fail("no profile " + json(arg).dump() + " (nvmetune profile list)"), std::nullopt;
  json doc = json::parse(row->json, nullptr, false);
  if (doc.is_discarded()) return fail("profile " + arg + ": the stored document is not JSON"), std::nullopt;
  return doc;
}

bool store_profile(const ProfileOptions& o, const data::Profile& p, bool replace) {
  auto store = open_store(o);
  if (!store) return false;
  if (!replace && store->load_profile(p.name))
    return fail("a profile named " + p.name + " exists: pass --replace to overwrite it, or --name NEW"), false;
  std::string error;
  if (!store->save_profile(p.name, data::to_json(p).dump(), error)) return fail("cannot save " + p.name + ": " + error), false;
  return true;
}

// ---------------------------------------------------------------- the engine

std::string open_engine(SocketCaller& engine, const ProfileOptions& o) {
  return engine.open(o.socket.empty() ? control::default_control_socket_path() : o.socket);
}

// ---------------------------------------------------------------- subcommands

int run_save(const ProfileOptions& o) {
  if (auto problem = data::profile_name_problem(o.name); !problem.empty()) return fail(problem), exit_usage;
  SocketCaller engine;
  if (auto err = open_engine(engine, o); !err.empty()) return fail(err), exit_failure;
  const auto cap = data::capture_profile(o.name, o.description, o.tuning_only, std::ref(engine));
  if (!cap.error.empty()) return fail(cap.error), exit_failure;
  auto p = parse_checked("the engine's state", cap.doc.dump());
  if (!p || !store_profile(o, *p, true)) return exit_failure;
  std::printf("saved profile %s\n", o.name.c_str());
  return exit_ok;
}

std::string sections_of(const json& doc) {
  std::string out;
  for (const char* key : {"threading", "budgets", "tcp", "steering", "listeners", "subsystems"})
    if (doc.contains(key)) out += (out.empty() ? "" : ",") + std::string(key);
  return out.empty() ? "-" : out;
}

int run_list(const ProfileOptions& o) {
  auto store = open_store(o);
  if (!store) return exit_failure;
  std::printf("%-24s %-19s %-42s %s\n", "NAME", "CREATED", "SECTIONS", "DESCRIPTION");
  for (const auto& row : store->list_profiles()) {
    const json doc = json::parse(row.json, nullptr, false);
    const std::time_t secs = static_cast<std::time_t>(row.created_ns / 1'000'000'000);
    std::tm tm{};
    localtime_r(&secs, &tm);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    std::printf("%-24s %-19s %-42s %s\n", row.name.c_str(), when, doc.is_discarded() ? "(not JSON)" : sections_of(doc).c_str(),
                doc.is_object() ? doc.value("description", std::string()).c_str() : "");
  }
  return exit_ok;
}

int run_show(const ProfileOptions& o) {
  auto doc = load_document(o, o.name);
  if (!doc) return exit_failure;
  std::fputs(data::to_text(*doc).c_str(), stdout);
  return exit_ok;
}

int run_diff(const ProfileOptions& o) {
  auto a = load_document(o, o.name);
  auto b = a ? load_document(o, o.other) : std::nullopt;
  if (!a || !b) return exit_failure;
  const auto entries = data::diff_profiles(*a, *b);
  if (entries.empty()) std::printf("no differences between %s and %s\n", o.name.c_str(), o.other.c_str());
  else std::fputs(data::format_diff(entries).c_str(), stdout);
  return exit_ok;
}

// Another tool's document: what does not map goes to stderr, so FILE "-" stays pure JSON.
std::optional<std::string> foreign_text(const ProfileOptions& o, data::ExportFormat format) {
  auto p = load_profile(o, o.name);
  if (!p) return std::nullopt;
  const auto out = format == data::ExportFormat::spdk ? data::export_spdk(*p) : data::export_nvmetcli(*p);
  for (const auto& line : out.not_mapped) std::fprintf(stderr, "  not mapped: %s\n", line.c_str());
  return out.doc.dump(2) + "\n";
}

int run_export(const ProfileOptions& o) {
  const auto format = data::export_format(o.format);
  if (!format) return fail("unknown --format " + json(o.format).dump() + " (profile, spdk or nvmetcli)"), exit_usage;
  std::optional<std::string> text;
  if (*format == data::ExportFormat::profile) {
    if (auto doc = load_document(o, o.name)) text = data::to_text(*doc);
  } else {
    text = foreign_text(o, *format);
  }
  if (!text || !write_file(o.file, *text)) return exit_failure;
  if (o.file != "-") std::printf("exported profile %s to %s (%s)\n", o.name.c_str(), o.file.c_str(), o.format.c_str());
  return exit_ok;
}

// A profile from FILE, whichever tool wrote it; prints what an import could not carry over.
std::optional<data::Profile> import_document(const std::string& file, const std::string& text) {
  const auto imported = data::import_document(text);
  if (!imported.errors.empty()) return print_errors(file, imported.errors), std::nullopt;
  if (imported.source == data::ProfileSource::profile) return parse_checked(file, text);
  std::printf("imported from %s: %s\n", data::source_name(imported.source), file.c_str());
  for (const auto& line : imported.no_equivalent) std::printf("  no equivalent: %s\n", line.c_str());
  for (const auto& line : imported.warnings) std::printf("  warning: %s\n", line.c_str());
  // Judged as a profile: what the other tool allows and nvmetune does not is an error here.
  return parse_checked(file + " (as a profile)", imported.profile.dump());
}

int run_import(const ProfileOptions& o) {
  auto text = read_file(o.file);
  if (!text) return exit_failure;
  auto p = import_document(o.file, *text);
  if (!p) return exit_failure;
  if (!o.rename.empty()) p->name = o.rename;
  if (p->name.empty()) p->name = std::filesystem::path(o.file).stem().string();
  if (auto problem = data::profile_name_problem(p->name); !problem.empty())
    return fail(problem + ": pass --name NAME"), exit_failure;
  if (!store_profile(o, *p, o.replace)) return exit_failure;
  std::printf("imported profile %s\n", p->name.c_str());
  return exit_ok;
}

int run_apply(const ProfileOptions& o) {
  auto p = load_profile(o, o.name);
  if (!p) return exit_failure;
  if (p->name.empty() && !is_file_argument(o.name)) p->name = o.name;
  if (p->name.empty()) p->name = std::filesystem::path(o.name).stem().string();
  auto engine = std::make_shared<SocketCaller>();
  if (auto err = open_engine(*engine, o); !err.empty()) return fail(err), exit_failure;
  const auto report = data::apply_profile(*p, [engine](const std::string& m, const json& params) { return (*engine)(m, params); });
  for (const auto& line : report.applied) std::printf("applied: %s\n", line.c_str());
  for (const auto& line : report.not_applied) std::printf("not applied: %s\n", line.c_str());
  if (!report.ok()) {
    std::fprintf(stderr, "nvmetune profile: apply %s: the engine refused it (steps before are kept):\n", o.name.c_str());
    for (const auto& e : report.errors) std::fprintf(stderr, "  %s: %s\n", e.path.c_str(), e.message.c_str());
    return exit_failure;
  }
  std::printf("applied profile %s\n", p->name.c_str());
  return exit_ok;
}

int run_delete(const ProfileOptions& o) {
  auto store = open_store(o);
  std::string error;
  if (!store) return exit_failure;
  if (!store->delete_profile(o.name, error)) return fail(error), exit_failure;
  std::printf("deleted profile %s\n", o.name.c_str());
  return exit_ok;
}

}  // namespace

std::function<int()> attach_profile(CLI::App& cmd) {
  auto o = std::make_shared<ProfileOptions>();
  auto chosen = std::make_shared<std::function<int()>>();
  cmd.add_option("--db", o->db, "The database (default: " + data::default_db_path() + ").")->type_name("PATH");
  cmd.add_option("--socket", o->socket,
                 "The engine's control socket, for save and apply (default: " + control::default_control_socket_path() + ").")
      ->type_name("PATH");
  cmd.require_subcommand(1);
  cmd.fallthrough();
  auto sub = [&](const char* name, const char* summary, int (*run)(const ProfileOptions&)) {
    CLI::App* s = cmd.add_subcommand(name, summary);
    s->callback([o, chosen, run] { *chosen = [o, run] { return run(*o); }; });
    return s;
  };
  auto* save = sub("save", "Save the running engine's tuning and topology as NAME.", run_save);
  save->add_option("name", o->name, "The profile's name.")->required();
  save->add_option("--description", o->description, "A line saying what the profile is for.");
  save->add_flag("--tuning-only", o->tuning_only, "Only threading and budgets (a profile that moves between machines).");
  sub("list", "List the saved profiles.", run_list);
  sub("show", "Print a profile (NAME, or a FILE) as JSON.", run_show)->add_option("name", o->name, "NAME or FILE")->required();
  auto* diff = sub("diff", "Field-by-field differences from A to B (NAMEs or FILEs).", run_diff);
  diff->add_option("a", o->name, "A: NAME or FILE")->required();
  diff->add_option("b", o->other, "B: NAME or FILE")->required();
  auto* exp = sub("export", "Write a saved profile to FILE (- for stdout), as ours or another target's configuration.", run_export);
  exp->add_option("name", o->name, "NAME")->required();
  exp->add_option("file", o->file, "FILE")->required();
  exp->add_option("--format", o->format,
                  "profile (default); spdk: input for SPDK's load_config; nvmetcli: input for nvmetcli restore. "
                  "What does not map is listed on stderr.")
      ->check(CLI::IsMember({"profile", "spdk", "nvmetcli"}));
  auto* imp = sub("import", "Store FILE: a profile, an nvmetcli save or an SPDK save_config.", run_import);
  imp->add_option("file", o->file, "FILE")->required()->check(CLI::ExistingFile);
  imp->add_option("--name", o->rename, "Store it under NAME (default: its \"name\", else the file's stem).");
  imp->add_flag("--replace", o->replace, "Overwrite a saved profile of the same name.");
  sub("apply", "Apply NAME or FILE to the running engine, live.", run_apply)->add_option("name", o->name, "NAME or FILE")->required();
  sub("delete", "Delete a saved profile.", run_delete)->add_option("name", o->name, "NAME")->required();
  cmd.footer(
      "Profiles are JSON documents (\"schema\": \"nvmetune.profile/1\", docs/guide/profiles.md).\n"
      "Every error is printed with its JSON path; an invalid profile changes nothing.\n"
      "Exit codes: 0 done, 1 failed (invalid profile, refused by the engine, no engine, store error),\n"
      "2 bad command line.\n"
      "Examples:\n"
      "  nvmetune profile save baseline\n"
      "  nvmetune profile apply poll.json\n"
      "  nvmetune profile diff baseline poll\n"
      "  nvmetune profile import /etc/nvmet/config.json --name kernel\n"
      "  nvmetune profile export baseline spdk.json --format spdk");
  return [chosen] { return *chosen ? (*chosen)() : exit_usage; };
}

}  // namespace app
