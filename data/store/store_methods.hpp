#pragma once
// Control-socket methods over the run an engine records into (`serve --db/--record`), so a
// client (the GUI attached to a server) can scroll back into the run's history:
//   store.runs     every run of the database, and which one this engine records
//   store.history  {run?, from_ns?, to_ns?, max?}: the run's stored intervals as snapshots of
//                  the engine totals (stats.get's shape, with histogram buckets), oldest first
//   store.health   {recording, run, path, written, dropped, write_errors, last_error}: is the
//                  recording keeping up (the GUI's status bar)
// serve appends them to the engine's method table (rpc_methods.hpp) when it records.
#include <cstdint>

#include "data/store/store.hpp"
#include "data/store/writer.hpp"
#include "engine/rpc/rpc_server.hpp"

namespace data {

// store and writer must outlive the table; run is the run being recorded (the default of
// store.history).
control::RpcMethodTable make_store_methods(Store& store, int64_t run, const Writer& writer);

}  // namespace data
