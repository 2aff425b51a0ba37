#include "runtime/graph.hpp"

#include <utility>

#include "dsl/errors.hpp"
#include "runtime/driver.hpp"

namespace mxjit {

using detail::Driver;

namespace {

CUstream as_stream(uint64_t s) { return reinterpret_cast<CUstream>(static_cast<uintptr_t>(s)); }

}  // namespace

Graph Graph::capture(uint64_t stream, const std::function<void()>& enqueue) {
  if (stream == 0)
    throw UsageError("Graph::capture: the legacy default stream (0) cannot be captured; use Stream::create()");
  Driver& d = Driver::get();
  detail::current_context();
  const CUstream s = as_stream(stream);
  d.check(d.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  try {
    enqueue();
  } catch (...) {
    // End the capture whatever happened, so that the stream can be used again.
    CUgraph partial = nullptr;
    d.cuStreamEndCapture(s, &partial);  // fails when the capture was invalidated: ignored
    if (partial) d.cuGraphDestroy(partial);
    throw;
  }
  CUgraph graph = nullptr;
  d.check(d.cuStreamEndCapture(s, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  CUresult r = d.cuGraphInstantiateWithFlags(&exec, graph, 0);
  d.cuGraphDestroy(graph);  // the executable graph is independent of it
  d.check(r, "cuGraphInstantiateWithFlags");
  Graph out;
  out.exec_ = exec;
  return out;
}

Graph::Graph(Graph&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    release();
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

Graph::~Graph() { release(); }

void Graph::release() noexcept {
  if (exec_) Driver::get().cuGraphExecDestroy(static_cast<CUgraphExec>(exec_));  // errors ignored
  exec_ = nullptr;
}

void Graph::launch(uint64_t stream) const {
  if (!exec_) throw UsageError("Graph::launch: the graph is empty (use Graph::capture)");
  Driver& d = Driver::get();
  if (stream == 0) detail::current_context();
  d.check(d.cuGraphLaunch(static_cast<CUgraphExec>(exec_), as_stream(stream)), "cuGraphLaunch");
}

}  // namespace mxjit
