# Every doctest case of a test binary becomes its own ctest test, with labels.
#
#   mxjit_doctest_cases(TARGET test_runtime PREFIX runtime [LABELS ...]
#                       [FILE_LABELS test_nvrtc.cpp=nvrtc ...] [ENVIRONMENT "MXJIT_CACHE_DIR=..."])
#
# The cases are listed when ctest starts (as GoogleTest's PRE_TEST discovery does), not when
# CMake configures or builds, so a build machine never has to run its binaries; the list is kept
# beside the binary and made again only when the binary is newer. A case added to a source file is
# therefore picked up by the next `ctest` with no CMake change.
#
# Labels of a case (`ctest -L <label>`):
#   - LABELS given here, for every case of the binary;
#   - FILE_LABELS given here (`<source file name>=<label>[,<label>...]`), for every case of that file;
#   - the words of the case's doctest test suite, `TEST_SUITE("gpu")` or
#     `TEST_CASE("..." * doctest::test_suite("slow"))`;
#   - `fast`, for every case labelled neither `slow` nor `gpu`.
# The labels in use: fast (under a minute in all), slow, gpu (needs a GPU; skipped without one),
# nvrtc (compiles CUDA with NVRTC, no GPU needed), fuzz (the libFuzzer targets, tests/fuzz).
# ctest reports a case as skipped when it prints "[SKIP]" as a doctest MESSAGE
# (tests/support/skip.hpp), and as failed when its filter ran no case or more than one (a name the
# listing and doctest's filter disagree on).

set(_mxjit_doctest_script ${CMAKE_CURRENT_LIST_DIR}/doctest_cases_list.cmake)

function(mxjit_doctest_cases)
  cmake_parse_arguments(arg "" "TARGET;PREFIX" "LABELS;FILE_LABELS;ENVIRONMENT" ${ARGN})
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${arg_TARGET}_cases_include.cmake)
  file(GENERATE OUTPUT ${include_file} CONTENT
"set(MXJIT_CASES_BINARY [==[$<TARGET_FILE:${arg_TARGET}>]==])
set(MXJIT_CASES_LIST [==[$<TARGET_FILE:${arg_TARGET}>.cases.cmake]==])
set(MXJIT_CASES_PREFIX [==[${arg_PREFIX}]==])
set(MXJIT_CASES_LABELS [==[${arg_LABELS}]==])
set(MXJIT_CASES_FILE_LABELS [==[${arg_FILE_LABELS}]==])
set(MXJIT_CASES_ENVIRONMENT [==[${arg_ENVIRONMENT}]==])
set(MXJIT_CASES_SCRIPT [==[${_mxjit_doctest_script}]==])
set(MXJIT_CASES_INCLUDE [==[${include_file}]==])
include([==[${_mxjit_doctest_script}]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
