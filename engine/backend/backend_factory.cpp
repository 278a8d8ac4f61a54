// Chooses a backend by name (DESIGN.md: implementations are picked by name).
#include "engine/backend/backend.hpp"
#include "engine/backend/file/uring_file_backend.hpp"
#include "engine/backend/null/null_backend.hpp"
#include "engine/backend/ram/ram_backend.hpp"

namespace backend {

std::unique_ptr<Backend> open_backend(const BackendSpec& spec, std::string& error) {
  if (spec.kind == "null") return open_null_backend(spec, error);
  if (spec.kind == "ram") return open_ram_backend(spec, error);
  if (spec.kind == "file") return open_file_backend(spec, error);
  error = "unknown backend kind \"" + spec.kind + "\" (expected null, ram or file)";
  return nullptr;
}

}  // namespace backend
