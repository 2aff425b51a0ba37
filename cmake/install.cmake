# `cmake --install build --prefix P` for C++ consumers: the public headers, the static libraries and
# a CMake package, so that a separate project does
#
#     find_package(mxjit CONFIG REQUIRED)        # CMAKE_PREFIX_PATH=P
#     target_link_libraries(app PRIVATE mxjit::mxjit)
#     #include "mxjit/mxjit.hpp"
#
# Installed tree (the folder headers keep their in-tree names, so their own includes resolve):
#
#     P/include/mxjit/mxjit.hpp                    the one public include
#     P/include/mxjit/{dsl,codegen,runtime}/...    what it (and swizzle.hpp, llvm/cpu_backend.hpp) include
#     P/lib/libmxjit_*.a                           dsl, templates, codegen, reference, runtime, cache [, llvm]
#     P/lib/cmake/mxjit/mxjitConfig.cmake          targets mxjit::mxjit [, mxjit::mxjit_llvm]
#
# Consumers get include paths P/include and P/include/mxjit, nothing else of the build: xxhash is
# compiled into the libraries, fmt is Debian's libfmt (found by the package) or, with
# MXJIT_FMT_HEADER_ONLY, compiled in too; libcuda stays dlopen'ed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MXJIT_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/mxjit)
set(MXJIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/mxjit)

# Every header reachable from the public entry points (tests/install compiles all of them).
set(MXJIT_PUBLIC_HEADERS
  codegen/schedule.hpp codegen/target.hpp
  dsl/dsl.hpp dsl/dtype.hpp dsl/errors.hpp dsl/format.hpp dsl/geometry.hpp dsl/hash.hpp dsl/ir.hpp
  dsl/layout.hpp dsl/layout_bound.hpp dsl/peer_recipes.hpp dsl/pipeline.hpp dsl/recipes.hpp dsl/text.hpp
  runtime/device.hpp runtime/graph.hpp runtime/kernel.hpp runtime/prepared.hpp runtime/swizzle.hpp runtime/tensor.hpp
  backends/reference/executor.hpp)
if(MXJIT_WITH_LLVM)
  list(APPEND MXJIT_PUBLIC_HEADERS backends/llvm/cpu_backend.hpp)
endif()
foreach(h IN LISTS MXJIT_PUBLIC_HEADERS)
  get_filename_component(dir ${h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${h} DESTINATION ${MXJIT_INSTALL_INCLUDEDIR}/${dir} COMPONENT dev)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/mxjit/mxjit.hpp DESTINATION ${MXJIT_INSTALL_INCLUDEDIR} COMPONENT dev)

target_include_directories(mxjit INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
                                           $<INSTALL_INTERFACE:${MXJIT_INSTALL_INCLUDEDIR}>)

set(MXJIT_EXPORTED mxjit mxjit_dsl mxjit_templates mxjit_codegen mxjit_reference mxjit_runtime mxjit_cache)
if(TARGET mxjit_llvm)
  list(APPEND MXJIT_EXPORTED mxjit_llvm)
  set(MXJIT_CONFIG_WITH_LLVM ON)
  set(MXJIT_CONFIG_LLVM_DIR ${LLVM_DIR})
  # libLLVM-16.so is linked by file (backends/llvm); only LLVM's component libraries need its config.
  set(MXJIT_CONFIG_NEEDS_LLVM_CONFIG OFF)
  if(NOT LLVM_LINK_LLVM_DYLIB)
    set(MXJIT_CONFIG_NEEDS_LLVM_CONFIG ON)
  endif()
else()
  set(MXJIT_CONFIG_WITH_LLVM OFF)
  set(MXJIT_CONFIG_NEEDS_LLVM_CONFIG OFF)
endif()
install(TARGETS ${MXJIT_EXPORTED} EXPORT mxjitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${MXJIT_INSTALL_INCLUDEDIR})
install(EXPORT mxjitTargets NAMESPACE mxjit:: DESTINATION ${MXJIT_INSTALL_CMAKEDIR} COMPONENT dev)

set(MXJIT_CONFIG_SQLITE_SHARED OFF)
if(NOT MXJIT_SQLITE_STATIC)
  set(MXJIT_CONFIG_SQLITE_SHARED ON)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mxjitConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/mxjitConfig.cmake INSTALL_DESTINATION ${MXJIT_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mxjitConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mxjitConfig.cmake ${PROJECT_BINARY_DIR}/mxjitConfigVersion.cmake
        DESTINATION ${MXJIT_INSTALL_CMAKEDIR} COMPONENT dev)
