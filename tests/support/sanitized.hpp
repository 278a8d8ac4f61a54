#pragma once
// NVMT_SANITIZED_ALLOCATOR: built with ASan or TSan, whose allocators add redzones and
// quarantine what is freed, so memory figures mean nothing there. GCC says so with
// __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang (the fuzz preset) only through
// __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NVMT_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NVMT_SANITIZED_ALLOCATOR 1
#endif
#endif
#ifndef NVMT_SANITIZED_ALLOCATOR
#define NVMT_SANITIZED_ALLOCATOR 0
#endif
