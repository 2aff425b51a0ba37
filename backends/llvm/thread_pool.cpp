#include "backends/llvm/thread_pool.hpp"

#include <algorithm>

namespace mxjit::cpu::detail {

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool(int(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::worker_main(int index) {
  long seen = 0;
  for (;;) {
    const std::function<void(int)>* body;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && index < active_); });
      if (stop_) return;
      seen = generation_;
      body = body_;
    }
    std::exception_ptr err;
    try {
      (*body)(index);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_.notify_all();
  }
}

void ThreadPool::run(int threads, const std::function<void(int)>& body) {
  threads = std::clamp(threads, 1, size());
  if (threads == 1) return body(0);
  std::lock_guard<std::mutex> job(job_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    active_ = threads;
    pending_ = threads - 1;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr err;
  try {
    body(0);
  } catch (...) {
    err = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  active_ = 0;
  if (!err) err = error_;
  if (err) std::rethrow_exception(err);
}

}  // namespace mxjit::cpu::detail
