#pragma once
// The control method that keeps a running engine's state as a profile in the store on the
// engine's side, so a front end attached to a remote `nvmetune serve` saves that server's
// state into that server's database (what `nvmetune profile save` on the server does):
//   profiles.save {name, description?, tuning_only?, replace?}
//     -> {name, db, sections: ["threading", "budgets", ...]}
// The state is captured through the engine's own methods (capture_profile) and validated as a
// profile before it is stored. It lives in data/ (not engine/control's table) because the store
// does; serve and the GUI's embedded engine append it to the engine's table.
#include <string>

#include "data/profile/profile_apply.hpp"
#include "engine/rpc/rpc_server.hpp"

namespace data {

// Adds profiles.save to table. engine: the engine's methods the state is captured through
// (table_caller(table) or engine_caller(engine)); db_path: the database profiles are saved into
// (data::default_db_path() unless told).
void add_profile_methods(control::RpcMethodTable& table, RpcCaller engine, const std::string& db_path);

}  // namespace data
