#pragma once
// Per-queue asynchronous I/O context. Each queue owns one; it is used only by the thread
// running that queue's io_work, so submissions and completions need no locks and no handoff
// between threads. The io_uring is created on first use by an async backend; its eventfd is
// what the executor watches to re-arm the queue's io_work when completions arrive.
#include <cstdint>
#include <functional>

struct io_uring;
struct io_uring_sqe;

namespace backend {

struct Io;

class IoContext {
 public:
  explicit IoContext(unsigned entries);
  ~IoContext();
  IoContext(const IoContext&) = delete;
  IoContext& operator=(const IoContext&) = delete;

  // Who may use the ring, fixed when it is created (the next ring() after a change):
  //  shared: any thread may submit; the kernel posts completions by task work that interrupts
  //    the submitting thread wherever it runs (an IPI when it is on a CPU).
  //  owned: one thread, the first to submit, for the ring's life (SINGLE_ISSUER); completion
  //    work never interrupts that thread: at 4k randread qd32 the io_uring socket mechanism
  //    went from 0.75x to 1.0x epoll. It waits until the owner asks for events (DEFER_TASKRUN,
  //    deferred) for an owner that spins and asks on every pass anyway (poll), or the kernel
  //    runs it as the owner returns from a syscall (COOP_TASKRUN) for one that sleeps in
  //    epoll_wait (bound): the wake-up runs it and no io_uring_enter is needed to ask. Bound's
  //    adaptive idle poll counts as sleeping: while it polls, IORING_SQ_TASKRUN in memory
  //    tells the pass to make the syscall that runs the work.
  //  Executors that keep a queue on one thread (bound, poll) want owned; a queue that moves
  //  between threads (unbound, inline, a live switch) needs shared or a new ring.
  void set_owned(bool owned, bool deferred = true) {
    _want_owned = owned;
    _want_deferred = deferred;
  }
  bool owned() const { return _owned; }
  // Whether the calling thread may use the ring (always for shared or not yet bound).
  bool usable_here() const;
  // The ring, created on first call (nullptr if io_uring cannot be set up; errno kept).
  io_uring* ring();
  // An owned ring's owner hands the queue to another thread: completes every operation (block
  // I/O through done, foreign ones through the sink, which has cancelled its own) and closes
  // the ring; the next ring() makes a new one. The eventfd stays, so watchers stay valid.
  // False (nothing done) when called on another thread than the owner.
  bool close_ring(const std::function<void(Io&)>& done);
  // eventfd signalled on completions; -1 until the ring exists.
  int notify_fd() const { return _event_fd; }
  // Completes io (its result already set) through reap() delay_ns after the next
  // flush_submissions(), with an IORING_OP_TIMEOUT whose timespec lives in io.delay.
  // False when there is no ring (or no SQE): the caller completes io synchronously.
  bool complete_after(Io& io, uint64_t delay_ns);
  // Submits queued SQEs in one syscall (io_work calls this once per pass: batching).
  void flush_submissions();
  // Reaps up to max completions, calling done(io) for each (io.result set). Returns the count.
  // Never reads the eventfd: edge-triggered watchers do not need it drained, and a read per
  // reap was most of the io_uring socket mechanism's syscalls (0.47 per I/O at 4k qd32).
  unsigned reap(unsigned max, const std::function<void(Io&)>& done);
  // For level-triggered watchers, before going idle: consumes the eventfd's count, then says
  // whether CQEs are waiting (in that order, so a completion after the read signals again).
  bool consume_notifications();
  // Whether completions wait in the CQ or, on an owned ring, completion work the kernel
  // deferred to us (IORING_SQ_TASKRUN): no syscall. A queue must not go idle then: one
  // io_uring_enter runs a bounded batch of deferred work (20 items on Linux 6.18) and keeps the
  // rest flagged, and the eventfd is signalled when new work is queued, not for what was left.
  bool work_waiting() const;
  // Operations submitted and not yet reaped.
  unsigned inflight() const { return _inflight; }
  void note_submitted() { ++_inflight; ++_unsubmitted; }

  // --- Operations that are not block I/O on the same ring (the transport's socket receive
  // and write-readiness with io_mechanism io_uring): one ring per queue keeps them on the
  // thread that runs the queue, and one eventfd wakes it for either. Their user_data has
  // foreign_tag in its low three bits; reap() hands their CQEs to the sink instead of done().
  static constexpr uint64_t foreign_tag = 2;
  class ForeignSink {
   public:
    virtual void on_cqe(uint64_t user_data, int32_t res, uint32_t flags) = 0;

   protected:
    ~ForeignSink() = default;
  };
  void set_foreign_sink(ForeignSink* sink) { _foreign = sink; }
  // An SQE for a foreign operation (submitted with the next flush_submissions), nullptr when
  // there is no ring or it stays full after one submit.
  io_uring_sqe* foreign_sqe();
  // Teardown only: blocks, dispatching CQEs as reap() does (block I/O ones are dropped), until
  // done() holds. The foreign owner cancels its operations and waits here for their last CQE,
  // because the kernel may write into their buffers until then.
  void wait_foreign(const std::function<bool()>& done);

 private:
  ForeignSink* _foreign = nullptr;
  unsigned _entries;
  io_uring* _ring = nullptr;
  int _event_fd = -1;
  unsigned _inflight = 0;
  unsigned _unsubmitted = 0;
  bool _setup_failed = false;
  bool _want_owned = false;
  bool _want_deferred = true;
  bool _owned = false;    // the ring was created owned
  bool _enabled = true;   // an owned ring starts disabled until its owner's first submit
  int _owner_tid = 0;     // owned and enabled: the thread that may use it
  void enable_here();
};

}  // namespace backend
