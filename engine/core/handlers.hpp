#pragma once
// Command handlers, one file per command set (fabrics.cpp, admin.cpp, nvm.cpp, discovery.cpp).
// prepare_* only validate and size the transfer; execute_* do the work and complete exactly once.
#include "engine/core/request.hpp"
#include "engine/nvme/status.hpp"

namespace core {

class SubmissionQueue;

nvme::Status prepare_fabrics(SubmissionQueue& sq, Request& req);
void execute_fabrics(SubmissionQueue& sq, Request& req);

nvme::Status prepare_admin(SubmissionQueue& sq, Request& req);
void execute_admin(SubmissionQueue& sq, Request& req);

nvme::Status prepare_discovery(SubmissionQueue& sq, Request& req);
void execute_discovery(SubmissionQueue& sq, Request& req);

nvme::Status prepare_nvm(SubmissionQueue& sq, Request& req);
// now_ns: when execution starts (stamps the backend submission).
void execute_nvm(SubmissionQueue& sq, Request& req, uint64_t now_ns);
void nvm_resume(SubmissionQueue& sq, Request& req);
void nvm_backend_done(SubmissionQueue& sq, Request& req);

// Copies a prepared reply (Identify data, a log page) into the request's buffer, honouring the
// host's transfer length; the remainder of the transfer is zero.
void reply_data(Request& req, const void* data, uint32_t len);

}  // namespace core
