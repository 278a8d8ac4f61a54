// store.runs and store.history (store_methods.hpp).
#include "data/store/store_methods.hpp"

#include "engine/rpc/json_codec.hpp"
#include "engine/rpc/rpc_methods.hpp"

namespace data {

namespace {

using json = nlohmann::json;

constexpr uint64_t history_max_default = 24 * 3600;  // a day of 1 s intervals
constexpr uint64_t history_max_limit = 7 * 24 * 3600;

// An optional non-negative integer param; error appended when present and malformed.
int64_t integer(const json& params, const char* key, int64_t fallback, std::vector<control::ConfigError>& errors) {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    errors.push_back({std::string("params.") + key, "expected a non-negative integer, got " + it->dump()});
    return fallback;
  }
  return it->get<int64_t>();
}

json run_json(const RunRow& r) {
  return {{"id", r.id},           {"start_ns", r.start_ns},   {"end_ns", r.end_ns}, {"note", r.note},
          {"host", r.host},       {"intervals", r.intervals}, {"dropped_intervals", r.dropped_intervals}};
}

}  // namespace

control::RpcMethodTable make_store_methods(Store& store, int64_t run, const Writer& writer) {
  control::RpcMethodTable methods;
  methods["store.health"] = [&store, &writer, run](const json&) {
    const WriterStats w = writer.stats();
    return control::RpcOutcome::ok({{"recording", true},
                                    {"run", run},
                                    {"path", store.path()},
                                    {"written", w.written},
                                    {"dropped", w.dropped},
                                    {"write_errors", w.write_errors},
                                    {"last_error", w.last_error}});
  };
  methods["store.runs"] = [&store, run](const json&) {
    json runs = json::array();
    for (const auto& r : store.list_runs()) runs.push_back(run_json(r));
    return control::RpcOutcome::ok({{"runs", std::move(runs)}, {"recording", run}, {"path", store.path()}});
  };
  methods["store.history"] = [&store, run](const json& params) {
    const json p = params.is_object() ? params : json::object();
    std::vector<control::ConfigError> errors;
    if (!params.is_null() && !params.is_object()) errors.push_back({"params", "expected an object of named parameters"});
    for (const auto& [key, value] : p.items())
      if (key != "run" && key != "from_ns" && key != "to_ns" && key != "max")
        errors.push_back({"params." + key, "unknown parameter (expected: run, from_ns, to_ns, max)"});
    const int64_t which = integer(p, "run", run, errors);
    const TimeRange range{integer(p, "from_ns", 0, errors), integer(p, "to_ns", 0, errors)};
    const auto max = static_cast<uint64_t>(integer(p, "max", history_max_default, errors));
    if (max < 1 || max > history_max_limit) errors.push_back({"params.max", "expected 1.." + std::to_string(history_max_limit)});
    if (!errors.empty()) return control::invalid_params(errors);
    if (!store.get_run(which)) return control::invalid_params({{"params.run", "no run " + std::to_string(which)}});
    json intervals = json::array();
    for (const auto& s : store.history(which, range, max)) intervals.push_back(control::snapshot_json(s, true));
    return control::RpcOutcome::ok({{"run", which}, {"intervals", std::move(intervals)}});
  };
  return methods;
}

}  // namespace data
