# Run by ctest (through the include file that cmake/doctest_cases.cmake writes per test binary):
# lists the binary's doctest cases, when the binary is newer than the list kept beside it, and
# registers one ctest test per case. Inputs: the MXJIT_CASES_* variables set by the include file.
cmake_policy(VERSION 3.25)  # ctest reads test files with no policies set

# A test that fails and prints `why` (a binary that cannot list its cases, a name used twice).
function(mxjit_failing_test script_var name why)
  set(${script_var} "${${script_var}}add_test([==[${name}]==] \"${CMAKE_COMMAND}\" -E echo [==[${why}]==])
set_tests_properties([==[${name}]==] PROPERTIES FAIL_REGULAR_EXPRESSION .)\n" PARENT_SCOPE)
endfunction()

function(mxjit_write_case_list)
  set(bin "${MXJIT_CASES_BINARY}")
  set(prefix "${MXJIT_CASES_PREFIX}")
  execute_process(COMMAND "${bin}" --list-test-cases --reporters=xml
                  OUTPUT_VARIABLE xml ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    # A binary that cannot list its cases is one failing test that says why (not a silent pass).
    set(script "")
    mxjit_failing_test(script "${prefix}/LISTING FAILED" "${bin} --list-test-cases: exit ${rc}: ${err}")
    file(WRITE "${MXJIT_CASES_LIST}" "${script}")
    return()
  endif()
  # XML entities first (&amp; last); then semicolons and quotes in names, which would split CMake
  # lists or end an attribute, travel as tokens until the script is written.
  string(REPLACE "&quot;" "@mxjit_quot@" xml "${xml}")
  string(REPLACE "&apos;" "'" xml "${xml}")
  string(REPLACE "&lt;" "<" xml "${xml}")
  string(REPLACE "&gt;" ">" xml "${xml}")
  string(REPLACE "&amp;" "&" xml "${xml}")
  string(REPLACE ";" "@mxjit_semi@" xml "${xml}")
  # One case a line; doctest escapes & < " in attributes but not >, so read to the line's end.
  string(REGEX MATCHALL "<TestCase [^\n]*/>" cases "${xml}")
  set(script "")
  set(seen "")
  foreach(entry IN LISTS cases)
    set(bad "")
    string(REGEX REPLACE "^<TestCase name=\"([^\"]*)\".*" "\\1" name "${entry}")
    set(suite "")
    if(entry MATCHES " testsuite=\"([^\"]*)\"")
      set(suite "${CMAKE_MATCH_1}")
    endif()
    # Labels: the binary's, its source file's, the words of its test suite, and `fast` unless
    # `slow` or `gpu`.
    string(REPLACE " " ";" words "${suite}")
    set(labels ${MXJIT_CASES_LABELS} ${words})
    if(entry MATCHES " filename=\"([^\"]*)\"")
      get_filename_component(file "${CMAKE_MATCH_1}" NAME)
      foreach(item IN LISTS MXJIT_CASES_FILE_LABELS)
        if(item MATCHES "^${file}=(.*)$")
          string(REPLACE "," ";" more "${CMAKE_MATCH_1}")
          list(APPEND labels ${more})
        endif()
      endforeach()
    endif()
    if(NOT "slow" IN_LIST labels AND NOT "gpu" IN_LIST labels)
      list(APPEND labels fast)
    endif()
    list(REMOVE_DUPLICATES labels)
    set(test_name "${prefix}/${name}")
    if(test_name IN_LIST seen)
      set(test_name "${test_name} (duplicate name)")
      set(bad "two test cases are named '${name}'")
    endif()
    list(APPEND seen "${test_name}")
    # doctest's --test-case filter: a comma separates filters and a backslash escapes.
    string(REPLACE "\\" "\\\\" filter "${name}")
    string(REPLACE "," "\\," filter "${filter}")
    if(bad)
      mxjit_failing_test(script "${test_name}" "${bad}")
      continue()
    endif()
    string(APPEND script "add_test([==[${test_name}]==] [==[${bin}]==] [==[--test-case=${filter}]==])\n")
    # Exactly one case must run: none means the filter missed it, more that it matched others too.
    string(APPEND script "set_tests_properties([==[${test_name}]==] PROPERTIES LABELS \"${labels}\""
                         " ENVIRONMENT \"${MXJIT_CASES_ENVIRONMENT}\""
                         " SKIP_REGULAR_EXPRESSION [==[MESSAGE: \\[SKIP\\]]==]"
                         " FAIL_REGULAR_EXPRESSION [==[\\[doctest\\] test cases: +([02-9]|[1-9][0-9]+) \\|]==])\n")
  endforeach()
  string(REPLACE "@mxjit_semi@" ";" script "${script}")
  string(REPLACE "@mxjit_quot@" "\"" script "${script}")
  file(WRITE "${MXJIT_CASES_LIST}" "${script}")
endfunction()

if(NOT EXISTS "${MXJIT_CASES_BINARY}")
  add_test("${MXJIT_CASES_PREFIX}/NOT BUILT" "${MXJIT_CASES_BINARY}")
elseif(NOT EXISTS "${MXJIT_CASES_LIST}" OR "${MXJIT_CASES_BINARY}" IS_NEWER_THAN "${MXJIT_CASES_LIST}"
       OR "${MXJIT_CASES_SCRIPT}" IS_NEWER_THAN "${MXJIT_CASES_LIST}"
       OR "${MXJIT_CASES_INCLUDE}" IS_NEWER_THAN "${MXJIT_CASES_LIST}")
  mxjit_write_case_list()
endif()
if(EXISTS "${MXJIT_CASES_LIST}")
  include("${MXJIT_CASES_LIST}")
endif()
