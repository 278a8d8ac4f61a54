#pragma once
// Get Log Page for I/O and discovery controllers.
#include "engine/core/request.hpp"
#include "engine/nvme/status.hpp"

namespace core {

class SubmissionQueue;

nvme::Status prepare_log_page(SubmissionQueue& sq, Request& req);
void execute_log_page(SubmissionQueue& sq, Request& req);

}  // namespace core
