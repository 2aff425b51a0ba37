#pragma once
/// \file CUDA graphs captured from a stream: the work some code queues on a stream is recorded
/// once (stream capture) and then replayed with one cuGraphLaunch, however many kernels it holds.
/// No CUDA header is needed: streams are uint64_t, as in device.hpp.
#include <cstdint>
#include <functional>

#include "runtime/device.hpp"

namespace mxjit {

/// An instantiated CUDA graph (a CUgraphExec), move-only and destroyed with the object.
///
/// ```cpp
/// Stream st = Stream::create();
/// k(st.handle(), {x}, {q, s});                                  // warm up: first launch loads
/// Graph g = Graph::capture(st, [&] { k(st.handle(), {x}, {q, s}); });
/// g.launch(st);                                                 // replays the captured launch
/// ```
///
/// The views' pointers, extents and strides are frozen into the graph at capture time.
class Graph {
 public:
  /// An empty graph; launch() throws UsageError.
  Graph() = default;
  /// Captures the work `enqueue` queues on `stream` (cuStreamBeginCapture, global mode, then
  /// cuStreamEndCapture) and instantiates it (cuGraphInstantiateWithFlags). Nothing runs during
  /// capture. `stream` must be a created stream, not the legacy default stream 0 (UsageError).
  /// While capture is under way, calls the driver cannot capture (synchronous copies, stream or
  /// context synchronisation, cuMemAlloc) fail with a CudaError naming that call; an exception
  /// from `enqueue` ends the capture, leaves the stream usable and is rethrown.
  static Graph capture(uint64_t stream, const std::function<void()>& enqueue);
  /// Same, on a Stream.
  static Graph capture(const Stream& stream, const std::function<void()>& enqueue) {
    return capture(stream.handle(), enqueue);
  }
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  /// Queues one replay of the whole graph on `stream` (cuGraphLaunch; 0 = default stream).
  void launch(uint64_t stream = 0) const;
  /// Queues one replay of the whole graph on `stream`.
  void launch(const Stream& stream) const { launch(stream.handle()); }
  /// True when a graph is held.
  explicit operator bool() const noexcept { return exec_ != nullptr; }

 private:
  void release() noexcept;
  void* exec_ = nullptr;  ///< CUgraphExec
};

}  // namespace mxjit
