# Writes OUT: a file (SRC) as a C++ definition named NAME, so the server needs no data files
# beside it. KIND=text: a string (a Python source). KIND=binary: an array of bytes, and its size
# as NAME_size (an executable, a shared module), assembled from the file by .incbin: a byte
# array in C++ source would cost the compiler minutes and gigabytes for a sanitizer build's
# 50 MB module. The file's SHA-256 in the output makes it compile again when the file changes.
get_filename_component(src_name ${SRC} NAME)
set(body "// Generated from ${src_name} by embed.cmake. Do not edit.\n#include <cstddef>\n")
string(APPEND body "namespace byd {\n")
if(KIND STREQUAL "text")
  file(READ ${SRC} content)
  string(APPEND body "extern const char ${NAME}[];\n")
  string(APPEND body "const char ${NAME}[] = R\"byd_py(${content})byd_py\";\n")
else()
  # The symbols are byd::NAME and byd::NAME_size, spelled as the C++ compiler mangles them.
  string(LENGTH "${NAME}" name_length)
  string(LENGTH "${NAME}_size" size_length)
  set(data_symbol "_ZN3byd${name_length}${NAME}E")
  set(size_symbol "_ZN3byd${size_length}${NAME}_sizeE")
  file(SHA256 ${SRC} digest)
  string(APPEND body "// ${src_name}: SHA-256 ${digest}\n")
  string(APPEND body "extern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_size;\n")
  string(APPEND body "}  // namespace byd\n")
  string(APPEND body "__asm__(\".section .rodata\\n\"\n")
  string(APPEND body "        \".global ${data_symbol}, ${size_symbol}\\n\"\n")
  string(APPEND body "        \".balign 16\\n${data_symbol}:\\n\"\n")
  string(APPEND body "        \".incbin \\\"${SRC}\\\"\\n.Lbyd_${NAME}_end:\\n\"\n")
  string(APPEND body "        \".balign 8\\n${size_symbol}:\\n\"\n")
  string(APPEND body "        \".quad .Lbyd_${NAME}_end - ${data_symbol}\\n\"\n")
  string(APPEND body "        \".previous\\n\");\n")
  string(APPEND body "namespace byd {\n")
endif()
string(APPEND body "}  // namespace byd\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
