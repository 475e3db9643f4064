# Writes OUT: the bytes of a file (SRC) as a C++ array named NAME and its size as NAME_size, so
# the server needs no data files beside it.
file(READ ${SRC} hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(src_name ${SRC} NAME)
set(body "// Generated from ${src_name} by embed_binary.cmake. Do not edit.\n#include <cstddef>\n")
string(APPEND body "namespace byd {\nextern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_size;\n")
string(APPEND body "const unsigned char ${NAME}[] = {${bytes}};\nconst size_t ${NAME}_size = ${size};\n}  // namespace byd\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
