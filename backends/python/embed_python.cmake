# Writes OUT: the source of a Python file (SRC) as a C++ string named NAME, so the server needs
# no data files.
file(READ ${SRC} content)
get_filename_component(src_name ${SRC} NAME)
set(body "// Generated from ${src_name} by embed_python.cmake. Do not edit.\n")
string(APPEND body "namespace byd {\nextern const char ${NAME}[];\n")
string(APPEND body "const char ${NAME}[] = R\"byd_py(${content})byd_py\";\n}  // namespace byd\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
