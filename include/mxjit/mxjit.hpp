#pragma once
/// \file The public API of mxjit in one include: the DSL, pipelines and their text form, schedules, tensor
/// views, jit() and Kernel, the CPU reference executor and device helpers (streams, events, graphs).
#include "codegen/schedule.hpp"
#include "codegen/target.hpp"
#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/pipeline.hpp"
#include "dsl/recipes.hpp"
#include "dsl/text.hpp"
#include "runtime/device.hpp"
#include "runtime/graph.hpp"
#include "runtime/kernel.hpp"
#include "backends/reference/executor.hpp"
#include "runtime/tensor.hpp"
