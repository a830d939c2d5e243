# kvlens_pkg_module(NAME MODULE HEADER LIBRARY)
#
# The pkg-config module MODULE as the imported target PkgConfig::NAME, as
# pkg_check_modules(NAME REQUIRED IMPORTED_TARGET GLOBAL MODULE) makes it. Where
# pkg-config is absent or switched off (-DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON,
# as scripts/gpu-check does with the bundle of scripts/gpu-bundle), the same target
# comes from find_path(HEADER) and find_library(LIBRARY), which search
# CMAKE_PREFIX_PATH first: a machine with the compiler, CMake and the bundle is enough.
include_guard(GLOBAL)
find_package(PkgConfig QUIET)

function(kvlens_pkg_module name module header library)
  if(TARGET PkgConfig::${name})
    return()
  endif()
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(${name} REQUIRED IMPORTED_TARGET GLOBAL ${module})
    return()
  endif()
  find_path(KVLENS_${name}_INCLUDE_DIR ${header})
  find_library(KVLENS_${name}_LIBRARY ${library})
  if(NOT KVLENS_${name}_INCLUDE_DIR OR NOT KVLENS_${name}_LIBRARY)
    message(FATAL_ERROR "${module}: pkg-config is not there and ${header} or lib${library} was not found "
                        "(install its Debian -dev package, or point CMAKE_PREFIX_PATH at scripts/gpu-bundle's folder)")
  endif()
  add_library(PkgConfig::${name} UNKNOWN IMPORTED GLOBAL)
  set_target_properties(PkgConfig::${name} PROPERTIES
    IMPORTED_LOCATION "${KVLENS_${name}_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${KVLENS_${name}_INCLUDE_DIR}")
  message(STATUS "${module}: ${KVLENS_${name}_LIBRARY} (found without pkg-config)")
endfunction()
