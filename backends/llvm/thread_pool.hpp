#pragma once
/// \file A small process-wide thread pool for the CPU backend: one job at a time, run on the
/// calling thread plus up to (cores - 1) persistent workers; exceptions reach the caller.
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mxjit::cpu::detail {

/// Persistent workers that run one function on several threads at once.
class ThreadPool {
 public:
  /// The pool (std::thread::hardware_concurrency() threads in all, the caller included).
  static ThreadPool& instance();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  /// Threads a job can use (workers + the caller).
  int size() const { return int(workers_.size()) + 1; }
  /// Runs body(worker) for worker = 0 .. threads-1 (0 on the calling thread) and waits for all.
  /// `threads` is clamped to [1, size()]. The first exception thrown by any worker is rethrown.
  void run(int threads, const std::function<void(int)>& body);

 private:
  explicit ThreadPool(int threads);
  void worker_main(int index);

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* body_ = nullptr;
  int active_ = 0;        // workers taking part in the current job
  int pending_ = 0;       // workers of the current job still running
  long generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace mxjit::cpu::detail
