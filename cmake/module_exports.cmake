# Writes the dynamic list that the binary exports for the HTTP module (serve_http.h): every
# symbol the module names, those it takes from the binary and those it defines itself (an
# inline function's static, say, that must be one object in the process: the binary's copy is
# found first). The binary exports nothing else, so its dynamic symbol table holds a few
# hundred names, not thousands, and the loader has less of it to page in at every start.
# Usage: cmake -DNM=nm -DMODULE=byd_http_module.so -DOUT=exports.list -P module_exports.cmake
execute_process(COMMAND ${NM} -D --format=posix ${MODULE}
                OUTPUT_VARIABLE table RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${NM} -D ${MODULE} failed: ${failed}")
endif()
string(REPLACE "\n" ";" lines "${table}")
set(names)
foreach(line IN LISTS lines)
  # "NAME TYPE [VALUE SIZE]", NAME with a version ("memcpy@GLIBC_2.14") for what the module
  # takes from a shared library: the binary does not define those, and a list names no version.
  string(REGEX MATCH "^[^ @]+" name "${line}")
  if(name)
    list(APPEND names "${name}")
  endif()
endforeach()
list(REMOVE_DUPLICATES names)
list(SORT names)
if(NOT names)
  message(FATAL_ERROR "${MODULE} names no dynamic symbols")
endif()
set(text "{\n")
foreach(name IN LISTS names)
  string(APPEND text "  \"${name}\";\n")
endforeach()
string(APPEND text "};\n")
# Written only when it changes, so an unchanged module does not relink the binary.
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
