# Writes OUT: the source of kernel.py as a C++ string, so the server needs no data files.
file(READ ${SRC} content)
set(body "// Generated from backends/python/kernel.py by embed_kernel.cmake. Do not edit.\n")
string(APPEND body "namespace byd {\nextern const char kPythonKernelSource[];\n")
string(APPEND body "const char kPythonKernelSource[] = R\"byd_py(${content})byd_py\";\n}  // namespace byd\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
